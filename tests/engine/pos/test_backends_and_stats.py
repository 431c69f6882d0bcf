"""Stanza's missing-model message, the tag cache, CoNLL-U accuracy, and POS statistics of text."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pytest

from engine.pos import CachedTagger, StanzaTagger, TaggedWord, TaggerUnavailableError, read_conllu, tagging_accuracy
from engine.pos.cache import stored_tagger
from engine.pos.diversity import adjectives_per_sentence, count_sentences, distinct_n_pos
from engine.pos.stanza_backend import _import_stanza


def test_stanza_names_what_is_missing_and_how_to_install(tmp_path: Path) -> None:
    with pytest.raises(TaggerUnavailableError) as err:
        StanzaTagger(model_dir=tmp_path / "nowhere")
    message = str(err.value)
    assert str(tmp_path / "nowhere") in message and "resources.json" in message
    assert "stanza.download('en'" in message and "STANZA_RESOURCES_DIR" in message
    if _import_stanza() is None:
        assert "pip install 'variorum[stanza]'" in message
    (tmp_path / "partial").mkdir()
    (tmp_path / "partial" / "resources.json").write_text("{}")
    with pytest.raises(TaggerUnavailableError, match=r"missing: .*partial/en"):
        StanzaTagger(model_dir=tmp_path / "partial")


class CountingTagger:
    """A fake backend: one word per whitespace-separated token, tagged by its length; counts calls."""

    name = "fake"
    model_version = "1"

    def __init__(self) -> None:
        self.calls = 0

    def tag_texts(self, texts: Sequence[str], progress: bool = True) -> list[list[TaggedWord]]:
        self.calls += 1
        result = []
        for text in texts:
            words, start = [], 0
            for token in text.split():
                start = text.index(token, start)
                words.append(TaggedWord(token, start, start + len(token), f"L{len(token)}"))
                start += len(token)
            result.append(words)
        return result


def test_cache_hits_misses_and_repairs(tmp_path: Path) -> None:
    fake = CountingTagger()
    cached = CachedTagger(fake, tmp_path)
    texts = ["a bb", "", "ccc 🙂 dd"]
    first = cached.tag_texts(texts)
    assert cached.tag_texts(texts) == first and fake.calls == 1
    assert cached.tag_texts([*texts, "e"])[:3] == first and fake.calls == 2  # another corpus, another key
    cached.path_for(texts).write_bytes(b"not a zip")
    assert cached.tag_texts(texts) == first and fake.calls == 3  # unreadable entry: re-tagged


CONLLU = """# sent_id = s1
# text = I can't go.
1-2\tcan't\t_\t_\t_\t_\t_\t_\t_\t_
1\tI\tI\tPRON\tPRP\t_\t3\tnsubj\t_\t_
2\tca\tcan\tAUX\tMD\t_\t3\taux\t_\t_
3\tn't\tnot\tPART\tRB\t_\t4\tadvmod\t_\t_
4\tgo\tgo\tVERB\tVB\t_\t0\troot\t_\tSpaceAfter=No
5\t.\t.\tPUNCT\t.\t_\t4\tpunct\t_\t_

"""


def test_conllu_and_accuracy(tmp_path: Path) -> None:
    path = tmp_path / "gold.conllu"
    path.write_text(CONLLU.replace("1-2\tcan't", "2-3\tcan't"))
    (sentence,) = list(read_conllu(path))
    assert sentence.forms == ("I", "ca", "n't", "go", ".") and sentence.xpos == ("PRP", "MD", "RB", "VB", ".")

    class Perfect:
        name, model_version = "gold", "1"

        def tag_texts(self, texts: Sequence[str], progress: bool = True) -> list[list[TaggedWord]]:
            spans = sentence.spans()
            return [[TaggedWord(f, s, e, t) for f, (s, e), t in zip(sentence.forms, spans, sentence.xpos,
                                                                    strict=True)]]

    report = tagging_accuracy(Perfect(), [sentence], progress=False)
    assert (report.tokens, report.correct, report.accuracy) == (5, 5, 1.0)


def words(tags: str) -> list[TaggedWord]:
    return [TaggedWord("w", i, i + 1, tag) for i, tag in enumerate(tags.split())]


def test_distinct_n_pos_and_adjectives_per_sentence() -> None:
    texts = [words("DT JJ NN . DT JJ NN ."), words("PRP VBD JJ JJ")]
    # 2-POS per text: DT-JJ JJ-NN NN-. .-DT DT-JJ JJ-NN NN-. → 4 of 7 | PRP-VBD VBD-JJ JJ-JJ → 3 of 3
    assert distinct_n_pos(texts, 2) == pytest.approx((4 / 7 + 1) / 2)
    assert distinct_n_pos(texts, 1) == pytest.approx((4 / 8 + 3 / 4) / 2)
    assert [count_sentences(t) for t in texts] == [2, 1]  # the second text is one unfinished sentence
    assert adjectives_per_sentence(texts) == pytest.approx(4 / 3)
    assert adjectives_per_sentence([[]]) == 0.0


def test_cached_tags_train_without_the_tagger(tmp_path: Path) -> None:
    texts = ["a bb", "ccc dd"]
    made_elsewhere = CachedTagger(CountingTagger(), tmp_path).tag_texts(texts)
    stored = stored_tagger(texts, tmp_path)  # what backend "cache" uses on a machine without the tagger
    assert (stored.name, stored.model_version) == (CountingTagger().name, CountingTagger().model_version)
    assert CachedTagger(stored, tmp_path).tag_texts(texts) == made_elsewhere
    with pytest.raises(TaggerUnavailableError, match="no tags cached"):
        stored_tagger([*texts, "another corpus"], tmp_path)
    with pytest.raises(TaggerUnavailableError, match="do not cover"):
        stored.tag_texts(["new text"])
