"""Report writers: `report.json` (everything, with command, seeds and hashes) and `report.md` (tables).

Tables put several bundles side by side, one row per bundle × decoder, with the human row
where the metric has one. Percent-style metrics (MS-Jaccard, Self-BLEU, Distinct, Rep) are
printed ×100 like the papers; KLD in nats; Uniq as counts. PermGen reports (story / abstract /
paraphrase) have one table of their protocol's metrics (engine/evaluation/seq2seq.py).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from engine.metrics.frequency import GROUP_NAMES

LM_COLUMNS = [
    ("PPL", "ppl", 1.0), ("KLD", "kld", 1.0),
    ("MSJ-1", "ms_jaccard_1", 100.0), ("MSJ-2", "ms_jaccard_2", 100.0), ("MSJ-3", "ms_jaccard_3", 100.0),
    ("SB-1", "self_bleu_1", 100.0), ("SB-2", "self_bleu_2", 100.0), ("SB-3", "self_bleu_3", 100.0),
    ("SB-4", "self_bleu_4", 100.0),
    ("Dist-1", "distinct_1", 100.0), ("Dist-2", "distinct_2", 100.0), ("Dist-3", "distinct_3", 100.0),
    ("Rep", "rep", 100.0), ("seq-rep-4", "seq_rep_4", 100.0), ("Uniq", "uniq", 1.0),
    ("Doubled %", "doubled_word_rate", 100.0),
    ("Invented %", "invented_word_rate", 100.0), ("Unseen %", "unseen_word_rate", 100.0),
]


def display_name(path: Path) -> str:
    """A bundle's name in tables: its folder, or the run folder for trainers' `<run>/bundle` layout."""
    path = Path(path)
    return path.parent.name if path.name == "bundle" and path.parent.name else path.name


def _fmt(value: Any, scale: float = 1.0) -> str:
    if value is None:
        return "–"
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    number = float(value) * scale
    return f"{number:.0f}" if abs(number) >= 1000 else f"{number:.3g}" if abs(number) < 10 else f"{number:.1f}"


def _table(header: list[str], rows: list[list[str]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    return lines + ["| " + " | ".join(row) + " |" for row in rows]


def lm_table(report: dict[str, Any]) -> list[str]:
    rows = []
    for bundle in report["bundles"]:
        for decoder, metrics in bundle["result"]["lm"].items():
            rows.append([bundle["name"], decoder] + [_fmt(metrics.get(key), s) for _, key, s in LM_COLUMNS])
    human = report["human"]["lm"]
    rows.append(["Human", "–"] + [_fmt(human.get(key), s) for _, key, s in LM_COLUMNS])
    return _table(["Model", "Decoder"] + [c for c, _, _ in LM_COLUMNS], rows)


def agg_table(report: dict[str, Any]) -> list[str]:
    names = [*GROUP_NAMES, "total"]
    header = ["Model"] + [f"PPL {n}" for n in names] + [f"Uniq {n}" for n in names] + ["I(W)"]
    rows = []
    for bundle in report["bundles"]:
        agg = bundle["result"]["agg"]
        rows.append([bundle["name"]] + [_fmt(agg[f"ppl_{n}"]) for n in names]
                    + [_fmt(agg[f"uniq_{n}"]) for n in names] + [_fmt(agg["isotropy"])])
    human = report["human"]["agg"]
    rows.append(["Human"] + ["–"] * len(names) + [_fmt(human[f"uniq_{n}"]) for n in names] + ["–"])
    return _table(header, rows)


def nmst_table(report: dict[str, Any]) -> list[str]:
    lengths = [str(n) for n in report["settings"]["nmst_lengths"]]
    rows = []
    for bundle in report["bundles"]:
        for decoder, values in bundle["result"]["nmst"].items():
            ppl = _fmt(bundle["result"]["agg"]["ppl_total"])
            rows.append([bundle["name"], decoder, ppl] + [_fmt(values["r_nt"][n]) for n in lengths])
    return _table(["Model", "Decoder", "PPL"] + [f"r_nt({n})" for n in lengths], rows)


def shares_table(report: dict[str, Any]) -> list[str]:
    rows = []
    for bundle in report["bundles"]:
        for decoder, shares in bundle["result"]["shares"].items():
            rows.append([bundle["name"], decoder] + [_fmt(s, 100.0) for s in shares])
    rows.append(["Human", "–"] + [_fmt(s, 100.0) for s in report["human"]["shares"]])
    return _table(["Model", "Decoder"] + [f"% {n}" for n in GROUP_NAMES], rows)


PARAGRAPH_COLUMNS = [
    ("PPL", "ppl_natural", 1.0), ("PPL/word", "ppl_natural_word", 1.0), ("Order %", "order_followed", 100.0),
    ("Title twice %", "title_word_repeated", 100.0), ("top-1 B-4", "top1_bleu_4", 100.0),
    ("oracle B-4", "oracle_bleu_4", 100.0),
    ("Self-B-3", "pairwise_self_bleu_3", 100.0), ("Self-B-4", "pairwise_self_bleu_4", 100.0),
    ("Dist-2", "distinct_2", 100.0), ("Dist-3", "distinct_3", 100.0), ("Ent-1", "entropy_1", 1.0),
    ("Ent-2", "entropy_2", 1.0), ("Ent-3", "entropy_3", 1.0), ("Ent-4", "entropy_4", 1.0),
    ("seq-rep-4", "seq_rep_4", 100.0), ("words", "mean_words", 1.0),
    ("Invented %", "invented_word_rate", 100.0), ("Unseen %", "unseen_word_rate", 100.0),
]
PARAPHRASE_COLUMNS = [
    ("Self-WER", "self_wer_source", 100.0), ("Self-B-4", "self_bleu_4_source", 100.0),
    ("Pair Self-B-4", "pairwise_self_bleu_4", 100.0), ("Rewrites", "distinct_rewrites", 1.0),
    ("in words", "distinct_word_rewrites", 1.0),
    ("Content kept %", "content_words_kept", 100.0), ("Content added %", "content_words_added", 100.0),
    ("Dist-1", "distinct_1", 100.0), ("Dist-2", "distinct_2", 100.0), ("Dist-3", "distinct_3", 100.0),
    ("B-4", "bleu_4", 100.0), ("R-1", "rouge1", 100.0), ("R-2", "rouge2", 100.0), ("R-L", "rougeL", 100.0),
    ("words", "mean_words", 1.0), ("Invented %", "invented_word_rate", 100.0),
    ("Unseen %", "unseen_word_rate", 100.0),
]
SEQ2SEQ_NOTES = {
    "paraphrase": "POSG §5.3 / Table 4 columns: Self-WER and Self-BLEU-4 of all K candidates against their source "
                  "(Cao & Wan), pairwise Self-BLEU-4 among a source's K candidates, distinct rewrites per source "
                  "(candidates unlike the source and one another; in words: case and punctuation aside), the "
                  "share of the source's content words kept and of a candidate's content words not in its source, "
                  "Distinct-n per text, BLEU-4 and ROUGE F1 of the first candidate against the reference(s); "
                  "×100 except Rewrites and in words. BERTScore is not computed. Human: the references against "
                  "their sources.",
    "paragraph": "PPL: natural-order perplexity per target token on every paragraph of the split; PPL/word: the same "
                 "per word of the target (each paragraph's end a word), comparable across tokenizers. Order: the "
                 "share of candidates that follow a full sentence order asked for (every sentence written, ended as "
                 "a sentence, the paragraph ended on its own). Title twice: the share of stories with a sentence "
                 "that says a title word twice. PermGen §5.4 / "
                 "Tables 2 and 7: top-1 (Eq. 8 rank 1) and oracle (best of K by sentence BLEU) corpus "
                 "BLEU-4, pairwise Self-BLEU among a source's K candidates, Distinct-n and Entropy-n (nats) pooled "
                 "over all candidates; seq-rep-4: the share of a text's 4-grams that repeat an earlier 4-gram "
                 "of the same text, averaged over texts; ×100 except PPL, Entropy and words. Human: the target "
                 "paragraphs.",
}


def seq2seq_table(report: dict[str, Any]) -> list[str]:
    columns = PARAPHRASE_COLUMNS if report["protocol"] == "paraphrase" else PARAGRAPH_COLUMNS
    rows = []
    for bundle in report["bundles"]:
        for decoder, metrics in bundle["result"]["seq2seq"].items():
            rows.append([bundle["name"], decoder] + [_fmt(metrics.get(key), s) for _, key, s in columns])
    human = report["human"]["seq2seq"]
    rows.append(["Human", "–"] + [_fmt(human.get(key), s) for _, key, s in columns])
    return _table(["Model", "Decoder"] + [c for c, _, _ in columns], rows)


def _held_out_note(held_out: bool | None) -> str:
    if held_out is None:
        return " — held out: unknown (it trained on a split file or its provenance lists none)"
    return "" if held_out else " — **warning: split not held out of this bundle's training**"


def render_seq2seq(report: dict[str, Any]) -> str:
    split, settings, protocol = report["split"], report["settings"], report["protocol"]
    kind = "paraphrase" if protocol == "paraphrase" else "paragraph"
    lines = [
        f"# Evaluation on `{split['name']}` ({protocol})", "",
        f"Command: `{report['command']}`", "",
        f"Split: {report['human']['seq2seq']['sources']} of {split['documents']} sources (hash fraction "
        f"{split['fraction']}, sha256 `{split['sha256'][:16]}…`); K = {settings['candidates']} candidates per source, "
        f"beam width {settings['beam_width']}; seed {settings['seed']} (source i uses seed + i·K).", "",
    ]
    for bundle in report["bundles"]:
        lines.append(f"- `{bundle['name']}` ({bundle['task']}, {bundle['head']} head, permuted training "
                     f"{bundle['permute']}): `{bundle['path']}`, weights sha256 `{bundle['sha256'][:16]}…`"
                     f"{_held_out_note(bundle['held_out'])}")
    lines += ["", f"## {kind.capitalize()}s", "", *seq2seq_table(report), "", SEQ2SEQ_NOTES[kind]]
    lines += ["", "Plots: " + ", ".join(f"`{p}`" for p in report["plots"])]
    return "\n".join(lines) + "\n"


def render_markdown(report: dict[str, Any]) -> str:
    if report.get("protocol", "continue") != "continue":
        return render_seq2seq(report)
    split, settings = report["split"], report["settings"]
    lines = [
        f"# Evaluation on `{split['name']}`", "",
        f"Command: `{report['command']}`", "",
        f"Split: {split['documents']} documents (hash fraction {split['fraction']}, sha256 "
        f"`{split['sha256'][:16]}…`), {report['human']['windows']} windows of {settings['prefix_len']} + "
        f"{settings['continuation_len']} tokens; seed {settings['seed']} (window i uses seed + i).", "",
    ]
    for bundle in report["bundles"]:
        note = _held_out_note(bundle["held_out"])
        if bundle.get("groups_from") == "evaluated text":
            note += " — frequency groups from the evaluated text's counts (it carries no training counts)"
        lines.append(f"- `{bundle['name']}` ({bundle['head']} head): `{bundle['path']}`, "
                     f"weights sha256 `{bundle['sha256'][:16]}…`{note}")
    sections = [
        ("Continuations (F² Table 1 / POSG Table 2)", lm_table,
         "PPL of the split's reference text from the head's marginal log p(x); MSJ = MS-Jaccard, "
         "SB = Self-BLEU (each text vs all others, never itself), Dist = Distinct per text; Doubled = words "
         "that repeat the word just before them (\"dough dough\"); ×100."),
        ("Frequency groups (AGG Table 3)", agg_table,
         "Groups: frequent 30% / medium 50% / rare 20% of the vocabulary by training count; Uniq = "
         "distinct argmax next-token predictions (human: distinct reference tokens)."),
        ("Share of generated tokens per frequency group", shares_table, ""),
        ("Termination (NMST)", nmst_table,
         f"r_nt(L) = share without eos in the first L tokens, from {settings['nmst_prefix_len']}-token prefixes."),
    ]
    for title, table, note in sections:
        lines += ["", f"## {title}", "", *table(report)]
        if note:
            lines += ["", note]
    lines += ["", "Plots: " + ", ".join(f"`{p}`" for p in report["plots"])]
    return "\n".join(lines) + "\n"


def write_reports(report: dict[str, Any], out_dir: Path) -> tuple[Path, Path]:
    out_dir.mkdir(parents=True, exist_ok=True)
    json_path, md_path = out_dir / "report.json", out_dir / "report.md"
    json_path.write_text(json.dumps(report, indent=2))
    md_path.write_text(render_markdown(report))
    return json_path, md_path
