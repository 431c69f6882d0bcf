"""Decoders the NMST paper analyses — greedy, top-k, nucleus, beam — for every termination type.

These decode from the model's *marginal* next-token distribution (eos included), exactly the
decoders of the paper's Definition 3 / Appendix A, so that r_nt(L) (Eq. 11) is measured for the
algorithms Theorem 3 covers. How eos is treated by each truncation:

- greedy: V_t = {argmax}; eos is kept whenever it is the most probable token (Eq. 8);
- top-k (`TopK`): the k most probable tokens, eos competing like any token (Eq. 12–13);
- nucleus (`TopP`, Variorum's one convention: keep a token while the mass before it is < p):
  the smallest most-probable set reaching p; once p(eos_t) > 1/2 eos is its first member;
- beam (Appendix A.3): each prefix expands its `width` most probable tokens (Eq. 17); of the
  candidates, the best (width − finished) by summed log-prob are kept (Eq. 18); a kept prefix
  ending in eos joins the finished set and is not expanded; search stops with `width` finished.

None of them ever removes eos by anything but its probability rank, so under ST/NMST, where
p(eos_t) → 1, every decode ends (Theorem 3); under VA it may not. `cap` is a safety net only:
a sequence it stops is reported as unfinished (length None), never as ended.

`Stepper` holds the per-row decoding state: KV cache, the termination step t (counted from the
document start, prompt included — engine/heads/termination.py), ST's running log(1 − α), and a
sliding window when the context outgrows the block. `reorder` moves *all* of it with the beams
(the authors' ST beam search reordered the cache but not the running ST state).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import torch
from transformers.cache_utils import Cache

from engine.decoding.processors import DecodeSettingError, ScoreProcessor, TopK, TopP
from engine.heads.termination import TerminationHead, context_steps, st_prompt_state
from engine.model import EOS_ID, LanguageModel


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

    def processors(self) -> list[ScoreProcessor]:
        return [TopK(self.k)] if self.kind == "top-k" else [TopP(self.p)] if self.kind == "nucleus" else []


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


class Stepper:
    """Incremental marginal next-token log-probs for rows that share one prompt length."""

    def __init__(self, model: LanguageModel, ids: torch.Tensor) -> None:  # ids [N, P]
        self.model = model
        self.head = model.head
        self.ids = ids
        all_steps = context_steps(ids, EOS_ID)  # [N, P]; t of the last position = first new token
        hidden, self.past = self._encode(ids)  # [N, W, D]
        self.hidden = hidden[:, -1]
        self.steps = all_steps[:, -1]
        self.state: torch.Tensor | None = None
        self._next_state: torch.Tensor | None = None
        if isinstance(self.head, TerminationHead) and self.head.needs_decoding_state:
            self.state = st_prompt_state(self.head, hidden, all_steps[:, -hidden.shape[1]:])

    def _encode(self, ids: torch.Tensor) -> tuple[torch.Tensor, Cache | None]:
        block = self.model.config.block_size
        window = ids if ids.shape[1] <= block else ids[:, -(block // 2):]  # sliding window, as VariantStream
        hidden, past = self.model.hidden_states(window, use_cache=True)
        return hidden, past

    def log_probs(self) -> torch.Tensor:
        """Marginal log p(x_t | x_<t) of every row → [N, V] (and ST's next state, kept)."""
        if isinstance(self.head, TerminationHead):
            log_probs, self._next_state = self.head.step_log_probs(self.hidden, self.steps, self.state)
            return log_probs
        return self.head.log_probs(self.hidden, self.steps)

    def reorder(self, index: torch.Tensor) -> None:
        """Keep rows `index` [M] (any order, repeats allowed): ids, hidden, t, ST state and cache."""
        self.ids, self.hidden, self.steps = self.ids[index], self.hidden[index], self.steps[index]
        if self.state is not None:
            self.state = self.state[index]
        if self._next_state is not None:
            self._next_state = self._next_state[index]
        if self.past is not None:
            self.past.reorder_cache(index)  # type: ignore[arg-type]

    def advance(self, tokens: torch.Tensor) -> None:
        """Append one non-eos token per row [N] and move to the next step."""
        self.ids = torch.cat([self.ids, tokens[:, None]], dim=1)
        self.steps = self.steps + 1
        self.state = self._next_state
        if self.past is not None and self.past.get_seq_length() < self.model.config.block_size:
            out, self.past = self.model.hidden_states(tokens[:, None], past=self.past, use_cache=True)
            self.hidden = out[:, -1]
        else:
            hidden, self.past = self._encode(self.ids)
            self.hidden = hidden[:, -1]


def _pick(log_probs: torch.Tensor, decoder: Decoder, generator: torch.Generator) -> torch.Tensor:
    """One token per row of log_probs [N, V] under a token-level decoder → [N]."""
    if decoder.kind == "greedy":
        return log_probs.argmax(dim=-1)
    scores = log_probs
    for processor in decoder.processors():
        scores = processor(torch.empty(0, dtype=torch.long), scores)
    probs = torch.softmax(scores.float(), dim=-1)
    return torch.multinomial(probs, 1, generator=generator)[:, 0]


@torch.inference_mode()
def sample_batch(
    model: LanguageModel, prompts: torch.Tensor, decoder: Decoder, cap: int, generator: torch.Generator
) -> list[Continuation]:
    """Greedy / top-k / nucleus continuations of equal-length prompts [N, P], at most `cap` tokens."""
    if decoder.kind == "beam":
        raise DecodeSettingError("beam search decodes one prompt at a time: use beam_search")
    if cap < 1:
        raise DecodeSettingError(f"cap must be >= 1, got {cap}")
    stepper = Stepper(model, prompts)
    results = [Continuation([], None, 0.0) for _ in range(prompts.shape[0])]
    rows = torch.arange(prompts.shape[0], device=prompts.device)  # result index of each live row
    for step in range(1, cap + 1):
        log_probs = stepper.log_probs()
        tokens = _pick(log_probs, decoder, generator)
        chosen = log_probs.gather(-1, tokens[:, None])[:, 0]
        for i, row in enumerate(rows.tolist()):
            results[row].tokens.append(int(tokens[i]))
            results[row].log_prob += float(chosen[i])
        ended = tokens == EOS_ID
        for row in rows[ended].tolist():
            results[row].length = step
        if bool(ended.all()) or step == cap:
            break
        live = (~ended).nonzero()[:, 0]
        rows = rows[live]
        stepper.reorder(live)
        stepper.advance(tokens[live])
    return results


def decode_prompts(
    model: LanguageModel, prompts: list[list[int]], decoder: Decoder, cap: int, seed: int = 0, batch_size: int = 64
) -> list[Continuation]:
    """Continuations of each prompt (token ids, a leading eos added), batched by prompt length.

    Beam search returns its best hypothesis per prompt (ranked as `beam_search` does)."""
    model.eval()
    device = next(model.parameters()).device
    generator = torch.Generator(device=device).manual_seed(seed)
    results: list[Continuation | None] = [None] * len(prompts)
    if decoder.kind == "beam":
        return [beam_search(model, prompt, decoder, cap)[0] for prompt in prompts]
    by_length: dict[int, list[int]] = {}
    for index, prompt in enumerate(prompts):
        by_length.setdefault(len(prompt), []).append(index)
    for indices in by_length.values():
        for start in range(0, len(indices), batch_size):
            chunk = indices[start : start + batch_size]
            ids = torch.tensor([[EOS_ID, *prompts[i]] for i in chunk], device=device)
            for i, result in zip(chunk, sample_batch(model, ids, decoder, cap, generator), strict=True):
                results[i] = result
    return [r for r in results if r is not None]


@torch.inference_mode()
def beam_search(model: LanguageModel, prompt: list[int], decoder: Decoder, cap: int) -> list[Continuation]:
    """Beam search of Appendix A.3 (see the module docstring) → the `n_best` best continuations.

    Hypotheses are scored by their summed marginal log-prob; the final ranking divides by
    |y|^length_penalty (0 = no normalization). Finished hypotheses come first; if the cap
    stops the search early, unfinished ones (length None) fill the remaining places."""
    if decoder.kind != "beam":
        raise DecodeSettingError(f"beam_search needs a beam decoder, got {decoder.label}")
    device = next(model.parameters()).device
    model.eval()
    stepper = Stepper(model, torch.tensor([[EOS_ID, *prompt]], device=device))
    width = decoder.width
    scores = torch.zeros(1, dtype=torch.float64, device=device)  # [M] live beams
    tokens_so_far: list[list[int]] = [[]]
    finished: list[Continuation] = []
    unfinished: list[Continuation] = []
    for step in range(1, cap + 1):
        log_probs = stepper.log_probs().double()  # [M, V]
        top_values, top_tokens = log_probs.topk(min(width, log_probs.shape[-1]), dim=-1)  # Eq. 17
        candidates = (scores[:, None] + top_values).reshape(-1)  # [M · width]
        keep = candidates.topk(min(width - len(finished), candidates.numel())).indices  # Eq. 18
        parents = keep // top_tokens.shape[1]
        chosen = top_tokens.reshape(-1)[keep]
        live_parents, live_tokens, live_scores, live_paths = [], [], [], []
        for parent, token, score in zip(parents.tolist(), chosen.tolist(), candidates[keep].tolist(), strict=True):
            path = [*tokens_so_far[parent], token]
            if token == EOS_ID:
                finished.append(Continuation(path, step, score))
            else:
                live_parents.append(parent)
                live_tokens.append(token)
                live_scores.append(score)
                live_paths.append(path)
        if len(finished) >= width or not live_parents or step == cap:
            unfinished = [Continuation(p, None, s) for p, s in zip(live_paths, live_scores, strict=True)]
            break
        index = torch.tensor(live_parents, device=device)
        stepper.reorder(index)  # cache, t and ST's running state follow their beams
        stepper.advance(torch.tensor(live_tokens, device=device))
        scores = torch.tensor(live_scores, dtype=torch.float64, device=device)
        tokens_so_far = live_paths

    def rank(item: Continuation) -> float:
        return float(item.log_prob / max(len(item.tokens), 1) ** decoder.length_penalty)

    ranked = sorted(finished, key=rank, reverse=True) + sorted(unfinished, key=rank, reverse=True)
    return ranked[: decoder.n_best]
