"""The decoders the NMST paper analyses — greedy, top-k, nucleus, beam — named as in its Table 4.

They are Variorum's own decoders, not copies: greedy / top-k / nucleus are `VariantStream`
(engine/decoding/generate.py) with `greedy`, `top_k` or `top_p` set, which on a termination head
around a softmax draw from the marginal over V ∪ {eos} exactly as the paper's Definition 3 /
Appendix A define them; beam is the one beam search (engine/decoding/beam.py, Appendix A.3) over
the LM's decoding rows. How eos is treated by each:

- greedy: V_t = {argmax}; eos is kept whenever it is the most probable token (Eq. 8);
- top-k: the k most probable tokens, eos competing like any token (Eq. 12–13);
- nucleus (Variorum's one convention: keep a token while the mass before it is < p): the smallest
  most-probable set reaching p; once p(eos_t) > 1/2 eos is its first member;
- beam: hypotheses scored by summed marginal log-prob, a prefix ending in eos is finished.

Under ST / NMST every decode ends (Theorem 3); under VA it may not. `cap` is a safety net only: a
sequence it stops is reported as unfinished (length None), never as ended, which is what r_nt(L)
(Eq. 11) counts.

Sampled decoders draw with the decoder's seeded per-row noise (engine/decoding/sampler.py), so a
row depends only on its seed. Top-k and nucleus samples therefore differ from those of earlier
versions of the NMST benchmark, which drew with `torch.multinomial`; greedy and beam are unchanged.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import torch

from engine.decoding.beam import Hypothesis, beam_search
from engine.decoding.generate import VariantStream
from engine.decoding.processors import DecodeSettingError, TopK, TopP
from engine.decoding.settings import DecodeConfig
from engine.decoding.step import LanguageModelRows
from engine.decoding.stream import FINISH_EOS, MAX_ROWS
from engine.model import EOS_ID, LanguageModel
from engine.tokenizer import VariorumTokenizer


@dataclass(frozen=True)
class Decoder:
    """One decoding algorithm: "greedy", "top-k" (k), "nucleus" (p) or "beam" (width ≥ 2)."""

    kind: str
    k: int = 0
    p: float = 0.0
    width: int = 0
    length_penalty: float = 0.0  # beam: rank finished hypotheses by score / |y|^length_penalty
    n_best: int = 1  # beam: how many hypotheses to return

    def __post_init__(self) -> None:
        if self.kind not in ("greedy", "top-k", "nucleus", "beam"):
            raise DecodeSettingError(f"decoder must be greedy, top-k, nucleus or beam, got {self.kind!r}")
        if self.kind == "top-k":
            TopK(self.k)  # validates k
        if self.kind == "nucleus":
            TopP(self.p)
        if self.kind == "beam" and not (self.width >= 2 and 1 <= self.n_best <= self.width):
            raise DecodeSettingError(f"beam needs width >= 2 and 1 <= n_best <= width, got {self.width}, {self.n_best}")
        if self.length_penalty < 0:
            raise DecodeSettingError(f"length_penalty must be >= 0, got {self.length_penalty}")

    @property
    def label(self) -> str:
        return {"greedy": "greedy", "top-k": f"top-{self.k}", "nucleus": f"nucleus-{self.p:g}",
                "beam": f"beam-{self.width}"}[self.kind]

    def settings(self, cap: int, seed: int) -> DecodeConfig:
        """The VariantStream settings of a token-level decoder (at most `cap` tokens)."""
        top_p = self.p if self.kind == "nucleus" else 1.0
        return DecodeConfig(max_new_tokens=cap, seed=seed, greedy=self.kind == "greedy",
                            top_k=self.k if self.kind == "top-k" else 0, top_p=top_p)


def parse_decoder(text: str) -> Decoder:
    """"greedy", "top-2", "nucleus-0.4", "beam-4" → Decoder (the labels of the paper's Table 4)."""
    match = re.fullmatch(r"(greedy)|top-(\d+)|nucleus-([0-9.]+)|beam-(\d+)", text.strip())
    if match is None:
        raise DecodeSettingError(f"unknown decoder {text!r}; use greedy, top-K, nucleus-P or beam-W")
    greedy, k, p, width = match.groups()
    if greedy:
        return Decoder("greedy")
    if k:
        return Decoder("top-k", k=int(k))
    if p:
        return Decoder("nucleus", p=float(p))
    return Decoder("beam", width=int(width))


@dataclass
class Continuation:
    """A decoded continuation: its tokens (eos included if it ended), |y| or None, log p(y | x)."""

    tokens: list[int]
    length: int | None  # step of the eos (1-based), None when stopped by the cap
    log_prob: float


def decode_prompts(
    model: LanguageModel, tokenizer: VariorumTokenizer, prompts: list[list[int]], decoder: Decoder, cap: int,
    seed: int = 0,
) -> list[Continuation]:
    """Continuations of each prompt (token ids; a leading eos is added), at most `cap` tokens each.

    Token-level decoders batch prompts of equal length; prompt i is decoded with seed `seed + i`.
    Beam search returns its best hypothesis per prompt (ranked as `beam_continuations`)."""
    if cap < 1:
        raise DecodeSettingError(f"cap must be >= 1, got {cap}")
    model.eval()
    if decoder.kind == "beam":
        return [beam_continuations(model, prompt, decoder, cap)[0] for prompt in prompts]
    results: dict[int, Continuation] = {}
    by_length: dict[int, list[int]] = {}
    for index, prompt in enumerate(prompts):
        by_length.setdefault(len(prompt), []).append(index)
    for indices in by_length.values():
        for start in range(0, len(indices), MAX_ROWS):
            chunk = indices[start : start + MAX_ROWS]
            for i, continuation in zip(chunk, _sample(model, tokenizer, [prompts[i] for i in chunk], decoder, cap,
                                                      seed + chunk[0]), strict=True):
                results[i] = continuation
    return [results[i] for i in range(len(prompts))]


def _sample(model: LanguageModel, tokenizer: VariorumTokenizer, prompts: list[list[int]], decoder: Decoder, cap: int,
            seed: int) -> list[Continuation]:
    stream = VariantStream(model, tokenizer, [], len(prompts), decoder.settings(cap, seed), prompts=prompts)
    for _ in stream:
        pass
    return [Continuation(v.token_ids, len(v.token_ids) if v.finish_reason == FINISH_EOS else None, v.log_prob)
            for v in stream.variants]


@torch.inference_mode()
def beam_continuations(model: LanguageModel, prompt: list[int], decoder: Decoder, cap: int) -> list[Continuation]:
    """The `n_best` beam continuations: finished ones first, ranked by log-prob / |y|^length_penalty;
    if the cap stops the search early, unfinished ones (length None) fill the remaining places."""
    if decoder.kind != "beam":
        raise DecodeSettingError(f"beam search needs a beam decoder, got {decoder.label}")
    model.eval()
    rows = LanguageModelRows(model, [[EOS_ID, *prompt]], cap)
    result = beam_search(rows, decoder.width, cap, {EOS_ID})
    assert result is not None  # nothing cancels it

    def rank(item: Hypothesis) -> float:
        return float(item.score / max(len(item.tokens), 1) ** decoder.length_penalty)

    ranked = sorted(result.finished, key=rank, reverse=True) + sorted(result.unfinished, key=rank, reverse=True)
    return [Continuation(h.tokens, len(h.tokens) if h.finished else None, h.score) for h in ranked[: decoder.n_best]]
