"""What a writer can ask of the engine, importable without torch: the tasks and the decoding defaults.

The command line builds its `--help` from this module alone (so it answers without loading
torch or transformers), and `DecodeConfig` takes its defaults from `DECODE_DEFAULTS`, so the
engine, the CLI and the evaluation share one set of defaults.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

LM_TASKS: tuple[str, ...] = ("continue",)  # what a decoder-only LM bundle does
# Paragraph tasks of PermGen encoder-decoder bundles (engine/permgen): sentence-ordered stories and
# abstracts from a title and keywords, and a passage rewritten sentence by sentence.
PARAGRAPH_TASKS: tuple[str, ...] = ("story", "abstract", "paraphrase")
TASKS: tuple[str, ...] = (*LM_TASKS, *PARAGRAPH_TASKS)
MAX_VARIANTS = 8  # variants per request (the app's panel, the CLI's -n, eval's candidates)
# Largest base seed: variant i uses seed + i, and every such seed must stay a non-negative 63-bit
# integer; the app's seed box and stored settings use the same bound, so any shown seed can be typed back.
MAX_SEED = 2**63 - 65

@dataclass(frozen=True)
class DecodeDefaults:
    """The starting values of the decoding settings a writer sees first (engine, CLI, app)."""

    max_new_tokens: int = 80
    top_p: float = 0.9


DECODE_DEFAULTS = DecodeDefaults()

# DecodeConfig fields that only some heads honour, by the capability key a head announces them with.
METHOD_CONTROLS: dict[str, tuple[str, ...]] = {
    "group_controls": (),  # F²: the listed class controls (class_temperature, class_top_k, class_rarity_bias)
    "pos_top_k": ("pos_top_k",),  # POSG: k_POS
    "pos_bias": ("pos_bias",),  # POSG: per-tag bias
}


@dataclass(frozen=True)
class Capabilities:
    """Which controls a loaded model honours: the CLI, the app and `variorum eval` derive theirs from this.

    Built from the head's capability dict (`OutputHead.capabilities`, a termination head passing on
    its inner head's) and the bundle's tasks; `controls` are the method-specific DecodeConfig fields
    (F² class controls, POSG's k_POS and bias, flat sampling). Sampling controls every model honours
    (temperature, top-k, top-p, repetition penalty, greedy, seed, length, and flat sampling — every
    model can sample from its marginal; a one-group head does nothing else) are not listed."""

    head: str
    groups: int = 1
    tasks: tuple[str, ...] = LM_TASKS
    controls: frozenset[str] = frozenset()
    termination: str = ""  # "st" / "nmst" when a termination head wraps the groups, else ""

    @classmethod
    def from_dict(cls, caps: Mapping[str, object]) -> Capabilities:
        controls: set[str] = set()
        for key, fields in METHOD_CONTROLS.items():
            value = caps.get(key)
            if key == "group_controls" and isinstance(value, list | tuple):
                controls |= {str(name) for name in value}
            elif value:
                controls |= set(fields)
        tasks = caps.get("tasks", LM_TASKS)
        return cls(
            head=str(caps.get("head", "")),
            groups=int(str(caps.get("groups", 1))),
            tasks=tuple(str(t) for t in tasks) if isinstance(tasks, list | tuple) else LM_TASKS,
            controls=frozenset(controls),
            termination=str(caps.get("termination", "") or ""),
        )

    @property
    def pos_guided(self) -> bool:
        """The groups are POS tags (POSG, alone or inside a termination head)."""
        return "pos_top_k" in self.controls

    def refused(self, active: Iterable[str]) -> list[str]:
        """The method controls among `active` (DecodeConfig fields set away from off) this model ignores."""
        method = {f for fields in METHOD_CONTROLS.values() for f in fields} | set(CLASS_CONTROLS)
        return sorted(name for name in active if name in method and name not in self.controls)


CLASS_CONTROLS = ("class_temperature", "class_top_k", "class_rarity_bias")  # F² group-stage controls
