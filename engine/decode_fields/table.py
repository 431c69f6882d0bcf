"""Every decoding field, declared once (engine/decode_fields/declaration.py says what is derived from it).

The order is the app's: the "Word choice" box top to bottom, then the F² and POSG boxes, then the
fields the app leaves out. Where the engine's maths and a writer's comfort disagree on a range,
`bounds` is the maths (what the decoder computes correctly) and the app's `Slider` the part of it a
writer is offered.
"""

from __future__ import annotations

from engine.decode_fields.declaration import (
    Bounds,
    Checkbox,
    DecodeField,
    FactorSliders,
    Flag,
    NotOffered,
    SeedBox,
    Slider,
)

# Variant i of a request uses seed + i for up to 64 rows (an eval batch), and every such seed must stay a
# non-negative 63-bit integer; the app's seed box and stored settings use the same bound, so any shown seed
# can be typed back.
MAX_SEED = 2**63 - 65
# Temperatures (token and class): float32 decoding stays stable in [0.01, 100]. Far below, every score
# divides to −inf (at 1e-39 nothing is left to draw); above 100, log-probs of a few tens shrink to tenths
# and the distribution is all but uniform. For "always the likeliest token" use greedy, not a tiny temperature.
TEMPERATURE_BOUNDS = Bounds(0.01, 100.0)
TEMPERATURE_WHY = "float32-stable range (see TEMPERATURE_BOUNDS); the processor itself needs only T > 0"
POS_BIAS_FACTORS = Bounds(0.1, 10.0)  # each POS bias factor's bounds (POS_BIAS says why)
MAX_COPY_LIMIT = 32  # COPY_LIMIT says why
MAX_BEAM_WIDTH = 16  # BEAM_WIDTH says why
MAX_DRAFTS = 8  # DRAFTS says why

REAL_WORDS: DecodeField[bool] = DecodeField(
    "real_words", bool, False, None, "", "Real words only",
    "Every word written is a real word: one the model saw in training, one of a common English word list, or "
    "one you typed (names you invent count). Off lets the model invent words.",
    Flag("--any-words", "let the model write any word, invented ones too (default: only real words: the "
         "model's training words, an English word list and the words of your prompt, title and keywords)",
         negates=True),
    "words", Checkbox(), start=True)
TEMPERATURE: DecodeField[float] = DecodeField(
    "temperature", float, 1.0, TEMPERATURE_BOUNDS, TEMPERATURE_WHY, "Surprise",
    "Temperature: how adventurous the word choice is. Lower is safer and more predictable, higher is more "
    "surprising (and, far up, less coherent).",
    Flag("--temperature", "divides the token scores"), "temp", Slider(0.05, 3.0), off_words="off",
    bundle_start=True)
TOP_K: DecodeField[int] = DecodeField(
    "top_k", int, 0, Bounds(0), "any k: one larger than the vocabulary keeps every token", "Likeliest words only",
    "Top-k: only consider the k likeliest next words. 0 means no limit. Small values keep text on familiar "
    "ground.",
    Flag("--top-k", "keep the k likeliest tokens"), "topk", Slider(0, 200, says_off=True), off_words="off",
    # An F² head draws the token inside the class it drew first, where a rare class's distribution is nearly
    # flat: a nucleus of 0.9 there keeps hundreds of word pieces, from which the shipped F² model spells
    # made-up words. The F² paper samples with top-k (k ≤ 20); on a POSG head a top-k narrows the text
    # instead. Measured in docs/architecture.md, "Starts that depend on the model".
    method_starts=(("f2", 20),), bundle_start=True)
TOP_P: DecodeField[float] = DecodeField(
    "top_p", float, 1.0, Bounds(0.0, 1.0, low_open=True),
    "the nucleus always keeps the likeliest token (TopP), so every p > 0 leaves a token to draw and a tiny p "
    "keeps that token alone; the slider stops at 0.05, where a writer still sees a choice",
    "Trim unlikely words",
    "Top-p (nucleus sampling): only consider the likeliest words that together make up this share of the "
    "probability. 1.0 means no limit; lower values trim unlikely words.",
    Flag("--top-p", "nucleus mass"), "topp", Slider(0.05, 1.0, says_off=True), start=0.9, off_words="off",
    bundle_start=True)
REPETITION_PENALTY: DecodeField[float] = DecodeField(
    "repetition_penalty", float, 1.0, Bounds(1.0, 100.0),
    "below 1 it would reward repeats; a seen token's log-prob times ~1e39 overflows float32", "Avoid repeats",
    "Repetition penalty: discourage reusing words already in the text. 1.0 is off.",
    Flag("--repetition-penalty", "penalise tokens already in the text"), "rep", Slider(1.0, 2.0), off_words="off",
    bundle_start=True)
GUIDANCE: DecodeField[float] = DecodeField(
    "guidance", float, 1.0, Bounds(1.0, 10.0),
    "γ = 1 is the model as trained; γ below 1 would weaken the text's hold; far above 3 the guided distribution "
    "favours words only the text makes likely at any cost and sampled text breaks up (docs/guidance.md)",
    "Stay on topic",
    "How closely every word keeps to your prompt, title and keywords: each word is weighed by how much more "
    "likely your text makes it than no text would. Off writes as trained; higher keeps closer to the topic. "
    "Takes about twice the time.",
    Flag("--guidance", "classifier-free guidance γ: weigh each token by how much the prompt, title and keywords "
         "raise its probability over no text"), "guide", Slider(1.0, 3.0, says_off=True), off_words="off",
    bundle_start=True)
MAX_NEW_TOKENS: DecodeField[int] = DecodeField(
    "max_new_tokens", int, 80, Bounds(1, 4096),
    "every decode ends within it and a request's KV cache is sized by it. The app's slider stops at 500 "
    "tokens (~375 words), a wait a writer sits through (an estimate, not a measured bound: a few seconds for "
    "8 variants on a 2-core CPU); the 4,096 are for the command line and evaluation",
    "Max length", "The most tokens a variant may write before it is cut off (a token is roughly ¾ of a word).",
    Flag("--max-new-tokens", "the most tokens a variant writes"),
    NotOffered("each protocol sets its own length (--continuation-len, a PermGen sentence's cap)"), Slider(1, 500))
END_AT_SENTENCE: DecodeField[bool] = DecodeField(
    "end_at_sentence", bool, False, None, "", "End at a full sentence",
    "A variant that reaches the length limit is cut back to its last full sentence, so it never stops "
    "mid-sentence. Off: it stops wherever the limit falls.",
    Flag("--mid-sentence", "let a variant stop mid-sentence at --max-new-tokens (default: one the length limit "
         "stops is cut back to its last complete sentence; continue models)", negates=True),
    NotOffered("the protocols compare continuations of a fixed length, which cutting back would change"),
    Checkbox(), start=True)
NO_DOUBLED_WORDS: DecodeField[bool] = DecodeField(
    "no_doubled_words", bool, False, None, "", "No doubled words",
    "A word never follows itself directly (\"the dough dough bread\"), a slip small models make. Off allows "
    "\"had had\" and \"that that\".",
    Flag("--doubled-words", "let a word follow itself directly (default: a word written after a space may not be "
         "written again right after it, in any case)", negates=True),
    "nodoubles", Checkbox(), start=True)
CLASS_TEMPERATURE: DecodeField[float] = DecodeField(
    "class_temperature", float, 1.0, TEMPERATURE_BOUNDS, TEMPERATURE_WHY, "Mix of common and rare",
    "F² class temperature: how freely the model moves between common and rare word classes before picking a "
    "word. Higher spreads choices across more classes.",
    Flag("--class-temperature", "F²: divides the frequency-class scores"), "ctemp", Slider(0.05, 3.0),
    method="f2", off_words="off")
CLASS_TOP_K: DecodeField[int] = DecodeField(
    "class_top_k", int, 0, Bounds(0), "any k: one larger than the number of classes keeps them all",
    "Word classes to consider",
    "F² class top-k: only the k likeliest frequency classes may be used at each step. 0 means no limit.",
    Flag("--class-top-k", "F²: keep the k likeliest frequency classes"), "ctopk", Slider(0, 64, says_off=True),
    method="f2", off_words="off")
CLASS_RARITY_BIAS: DecodeField[float] = DecodeField(
    "class_rarity_bias", float, 0.0, Bounds(-10.0, 10.0),
    "|β| ≤ 10: at the limit the rarest class gains a factor e^10 ≈ 22000; the slider's ±5 already ends in "
    "non-words (docs/variants-window.md)", "Rarer words",
    "F² rarity bias: push word choice toward rarer words (right) or commoner ones (left). 0 writes as trained. "
    "From about +0.8 the shipped models write more non-words (docs/variants-window.md).",
    Flag("--class-rarity-bias", "F²: > 0 favours rarer frequency classes, < 0 commoner ones"), "rarity",
    Slider(-5.0, 5.0, zones=((-5.0, "commoner words"), (0.0, "as trained"), (0.01, "bolder words"),
                             (0.8, "experimental: may write non-words"))),
    method="f2", off_words="as trained")
POS_TOP_K: DecodeField[int] = DecodeField(
    "pos_top_k", int, 0, Bounds(0),
    "any k: one larger than the model's tags keeps them all. A writer starts at 20, the POSG paper's k_POS for "
    "language modelling (it uses 5 for paraphrase)", "Kinds to consider",
    "POS-guided k_POS: how many kinds of word (noun, past-tense verb, adjective, …) may be considered at each "
    "step; fewer keeps grammar tidy, more gives freer structure. 0 means no limit.",
    Flag("--pos-top-k", "POSG: keep the k likeliest POS tags (k_POS)"), "postopk", Slider(0, 45),
    start=20, method="posg", off_words="off")
POS_BIAS: DecodeField[dict[str, float]] = DecodeField(
    "pos_bias", dict, {}, POS_BIAS_FACTORS,
    "each factor multiplies p(tag) before renormalising; ×10 already moves a kind of word far (README: "
    "adjectives ×10 raise the adjective share 1.70×). The processor itself needs only finite factors > 0",
    "More or fewer of each kind of word",
    "Make a kind of word more (right) or less (left) likely; the middle (×1) leaves it as the model wrote it.",
    Flag("--pos-bias", "POSG: multiply p(tag) of a PTB tag or coarse group (adjectives, nouns, ...) by a factor",
         metavar="NAME=FACTOR"),
    "posbias", FactorSliders(), method="posg")
SEED: DecodeField[int | None] = DecodeField(
    "seed", int, None, Bounds(0, MAX_SEED), "see MAX_SEED", "Seed",
    "The starting number of the random choices, when the seed is fixed.",
    Flag("--seed", "base seed; variant i uses seed + i"),
    NotOffered("the protocols seed every source from eval's own --seed"), SeedBox(), optional=True)
GREEDY: DecodeField[bool] = DecodeField(
    "greedy", bool, False, None, "", "Always the likeliest word",
    "Greedy: take the likeliest token at every step instead of drawing one (the processors still apply).",
    Flag("--greedy", "argmax instead of sampling"), "greedy",
    NotOffered("every variant of a request would be the same text"))
FLAT_SAMPLING: DecodeField[bool] = DecodeField(
    "flat_sampling", bool, False, None, "", "Flat sampling",
    "Draw the token from p(x) in one stage, not a group then a token: the F² (Table 3) and POSG (Table 7) "
    "ablation.",
    Flag("--flat-sampling", "F² / POSG ablation: sample from p(x), not group then token"), "flat",
    NotOffered("an ablation for measuring the two-stage heads, not a writer's control"))
COPY_LIMIT: DecodeField[int] = DecodeField(
    "copy_limit", int, 0, Bounds(0, MAX_COPY_LIMIT),
    "0 is off; 32 tokens is longer than most sentences, past which a limit would hardly ever act",
    "Copy limit",
    "Paraphrases: the longest run of the source's tokens (word pieces) a rewrite may repeat.",
    Flag("--copy-limit", "paraphrase: the longest run of the source's tokens (word pieces) a rewrite may repeat",
         metavar="TOKENS"),
    "copy", NotOffered("off for writers: on the paraphrase model it halved the content words kept for no gain in "
                       "diversity (docs/model-recipes.md)"), off_words="no limit")
BEAM_WIDTH: DecodeField[int] = DecodeField(
    "beam_width", int, 1, Bounds(1, MAX_BEAM_WIDTH),
    "each beam row costs a decoding row per step; 16 is the widest offered",
    "Beam width", "Write each sentence by beam search of this width instead of sampling it.",
    Flag("--beam", "story/abstract/paraphrase: beam search of this width inside sentences", metavar="WIDTH"),
    NotOffered("eval's --beam-width sets it for a whole run (engine/evaluation/run.py)"),
    NotOffered("the app samples its variants"), off_words="sample", request=True)

DRAFTS: DecodeField[int] = DecodeField(
    "drafts", int, 1, Bounds(1, MAX_DRAFTS),
    "each draft is one more decoding row and one more scoring pass; 8 drafts of 8 variants fill a stream's 64 "
    "rows, and past 8 the best of the drafts hardly improves (docs/coherence.md)",
    "Drafts to choose from",
    "Write this many drafts for every variant shown, then show the ones that make most sense after your text "
    "(a paraphrase: that keep your sentence's meaning) and differ most from each other. More drafts take longer.",
    Flag("--drafts", "write K drafts per variant and show the most coherent, most different ones", metavar="K"),
    "drafts",  # eval: K drafts per window (per candidate for Story / Abstract), the chosen one scored
    # A writer starts at 2: on the pretrained Continue model it raised the coherence score of the shown variants
    # from -0.30 to 1.10 with Self-BLEU no higher, in 1.79x the time of one draft each (docs/coherence.md).
    Slider(1, MAX_DRAFTS), start=2, off_words="off: every draft is shown")
FIELDS: tuple[DecodeField[object], ...] = (
    REAL_WORDS, TEMPERATURE, TOP_K, TOP_P, REPETITION_PENALTY, GUIDANCE, MAX_NEW_TOKENS, END_AT_SENTENCE,
    NO_DOUBLED_WORDS, CLASS_TEMPERATURE, CLASS_TOP_K, CLASS_RARITY_BIAS, POS_TOP_K, POS_BIAS, SEED, GREEDY,
    FLAT_SAMPLING, COPY_LIMIT, BEAM_WIDTH, DRAFTS,
)
BY_NAME: dict[str, DecodeField[object]] = {field.name: field for field in FIELDS}
