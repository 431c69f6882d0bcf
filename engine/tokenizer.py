"""Byte-level BPE tokenizer trained with HF `tokenizers`, with Variorum's special tokens.

Special tokens take the first ids, in this order: eos, pad, ⟨B-1..10⟩, ⟨E-1..10⟩, ⟨EOP⟩. They
are reserved now so that every later head (termination, PermGen sentence marks) finds the same
ids in every bundle. No text ever encodes to a special id: a typed "<|eos|>" is plain text.
Token frequency counts over the training corpus are kept beside the vocabulary
(`token_counts.json`): F² frequency classes and AGG rare groups are built from them.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path

import numpy as np
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers

from engine.files.atomic_writes import atomic_directory, recover_directory
from engine.files.small_reads import UnusableFileError, read_small_json, read_small_text

EOS = "<|eos|>"
PAD = "<|pad|>"
MAX_SENTENCES = 10
SENTENCE_BEGIN = [f"<B-{i}>" for i in range(1, MAX_SENTENCES + 1)]
SENTENCE_END = [f"<E-{i}>" for i in range(1, MAX_SENTENCES + 1)]
END_OF_PARAGRAPH = "<EOP>"
SPECIAL_TOKENS = [EOS, PAD, *SENTENCE_BEGIN, *SENTENCE_END, END_OF_PARAGRAPH]

PROBE_TEXT = "A probe: Œuvre, naïve 日本 — 42!\n"  # letters, accents, CJK, digits, punctuation, a newline
TOKENIZER_FILE = "tokenizer.json"
COUNTS_FILE = "token_counts.json"


class TokenizerError(ValueError):
    """A tokenizer file is missing, malformed or lacks Variorum's special tokens."""


@contextlib.contextmanager
def library_failures(doing: str) -> Iterator[None]:
    """Turn a failure inside the `tokenizers` library into a `TokenizerError`. A damaged tokenizer.json
    (a pathological pre-tokenizer pattern, a vocabulary with entries removed) can make its Rust code
    panic, which pyo3 raises as `PanicException`: a BaseException that `except Exception` lets through."""
    try:
        yield
    except BaseException as error:
        if type(error).__name__ != "PanicException":
            raise
        reason = (str(error).strip().splitlines() or ["panic"])[0][:160]
        raise TokenizerError(f"the tokenizer failed while {doing} ({reason}); its tokenizer.json is damaged") from None


class VariorumTokenizer:
    """A trained byte-level BPE vocabulary plus its training-set token counts."""

    def __init__(self, tokenizer: Tokenizer, counts: Sequence[int] | None = None) -> None:
        self._tok = tokenizer
        # Text that spells a special token ("<|eos|>", "<B-1>" typed by a writer or found in a corpus) is
        # ordinary text: encoded byte by byte, never to the control id (which would end or restructure
        # the sequence). Only code places special ids, by number.
        tokenizer.encode_special_tokens = True
        for position, token in enumerate(SPECIAL_TOKENS):
            if tokenizer.token_to_id(token) != position:
                raise TokenizerError(f"special token {token!r} must have id {position}")
        size = tokenizer.get_vocab_size()
        self.counts = np.zeros(size, dtype=np.int64) if counts is None else np.asarray(counts)
        if self.counts.shape != (size,):
            raise TokenizerError(f"counts cover {self.counts.shape[0]} tokens, vocabulary has {size}")

    @classmethod
    def train(cls, texts: Iterable[str], vocab_size: int = 8192, min_frequency: int = 2) -> VariorumTokenizer:
        """Learn merges from `texts` and count every token id over the same texts."""
        if vocab_size < len(SPECIAL_TOKENS) + 256:
            raise TokenizerError(f"vocab_size must be >= {len(SPECIAL_TOKENS) + 256} (bytes + specials)")
        corpus = list(texts)
        tok = Tokenizer(models.BPE())
        tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
        tok.decoder = decoders.ByteLevel()
        tok.post_processor = processors.ByteLevel(trim_offsets=False)
        trainer = trainers.BpeTrainer(
            vocab_size=vocab_size,
            min_frequency=min_frequency,
            special_tokens=SPECIAL_TOKENS,
            initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
            show_progress=False,
        )
        tok.train_from_iterator(corpus, trainer=trainer, length=len(corpus))
        result = cls(tok)
        result.counts = result.count_tokens(corpus)
        return result

    def count_tokens(self, texts: Sequence[str]) -> np.ndarray:
        """Occurrences of each id over `texts`, one eos per text included ([vocab])."""
        counts = np.zeros(self.vocab_size, dtype=np.int64)
        with library_failures("encoding"):
            encodings = self._tok.encode_batch(list(texts))
        for encoding in encodings:
            np.add.at(counts, np.asarray(encoding.ids, dtype=np.int64), 1)
        counts[self.eos_id] += len(texts)
        return counts

    @property
    def vocab_size(self) -> int:
        return int(self._tok.get_vocab_size())

    @property
    def eos_id(self) -> int:
        return SPECIAL_TOKENS.index(EOS)

    @property
    def pad_id(self) -> int:
        return SPECIAL_TOKENS.index(PAD)

    def encode(self, text: str) -> list[int]:
        with library_failures("encoding"):
            return list(self._tok.encode(text).ids)

    def encode_batch(self, texts: Sequence[str]) -> list[list[int]]:
        with library_failures("encoding"):
            return [list(e.ids) for e in self._tok.encode_batch(list(texts))]

    def encode_with_offsets(self, text: str) -> tuple[list[int], list[tuple[int, int]]]:
        """Ids and each id's (start, end) character span in `text`."""
        with library_failures("encoding"):
            encoding = self._tok.encode(text)
        return list(encoding.ids), [tuple(o) for o in encoding.offsets]  # type: ignore[misc]

    def decode(self, ids: Sequence[int], skip_special: bool = True) -> str:
        with library_failures("decoding"):
            return str(self._tok.decode(list(ids), skip_special_tokens=skip_special))

    def piece_bytes(self) -> list[bytes | None]:
        """Each id's bytes as it adds them to decoded text ([vocab]); None for the special tokens.

        A byte-level BPE piece is spelled in GPT-2's printable stand-ins for bytes ("Ġ" = b" "); a piece
        may hold part of a multibyte character, so its bytes need not be valid UTF-8 alone."""
        decode_byte = {char: byte for byte, char in _byte_stand_ins().items()}
        special = set(SPECIAL_TOKENS)
        pieces: list[bytes | None] = []
        for token_id in range(self.vocab_size):
            piece = self._tok.id_to_token(token_id)
            if piece is not None and piece not in special and not set(piece) <= decode_byte.keys():
                raise TokenizerError(f"token {token_id} ({piece!r}) is not spelled in byte-level BPE's characters")
            pieces.append(None if piece is None or piece in special else bytes(decode_byte[c] for c in piece))
        return pieces

    def token_text(self, token_id: int) -> str:
        """The surface text of one token (bytes shown as decoded text)."""
        return self.decode([token_id], skip_special=False)

    def save(self, directory: Path) -> None:
        """Write the two files into `directory` (a bundle's staging folder: already written atomically)."""
        directory.mkdir(parents=True, exist_ok=True)
        self._tok.save(str(directory / TOKENIZER_FILE))
        (directory / COUNTS_FILE).write_text(json.dumps([int(c) for c in self.counts]))

    def save_folder(self, directory: Path) -> None:
        """Write `directory` as a folder of its own, atomically: a kill leaves the old folder or the
        complete new one, never a vocabulary without its counts."""
        with atomic_directory(directory) as staging:
            self.save(staging)

    @classmethod
    def load(cls, directory: Path) -> VariorumTokenizer:
        path = directory / TOKENIZER_FILE
        try:
            with library_failures("loading"):
                tok = Tokenizer.from_str(read_small_text(path))
        except UnusableFileError as error:
            raise TokenizerError(str(error)) from None
        except TokenizerError:
            raise
        except Exception as error:  # tokenizers raises plain Exception subclasses
            raise TokenizerError(f"cannot read {path}: {error}") from error
        counts_path = directory / COUNTS_FILE
        loaded = cls(tok, _read_counts(counts_path) if counts_path.exists() else None)
        loaded.probe()
        return loaded

    def probe(self) -> None:
        """Use every part once (encode, decode every id, spell every piece) so that a damaged tokenizer.json
        fails at load with a `TokenizerError`, not in the middle of a request."""
        self.decode(self.encode(PROBE_TEXT))
        self.decode(list(range(self.vocab_size)), skip_special=False)
        self.piece_bytes()


def saved_tokenizer(directory: Path) -> bool:
    """Whether `directory` holds a complete saved tokenizer (after finishing any swap a kill interrupted)."""
    recover_directory(directory)
    return (directory / TOKENIZER_FILE).is_file() and (directory / COUNTS_FILE).is_file()


def _byte_stand_ins() -> dict[int, str]:
    """GPT-2's byte → printable character map that byte-level BPE pieces are written in: printable
    Latin-1 bytes stand for themselves, the others for the characters from U+0100 on, in byte order."""
    printable = [*range(ord("!"), ord("~") + 1), *range(ord("¡"), ord("¬") + 1), *range(ord("®"), ord("ÿ") + 1)]
    others = [b for b in range(256) if b not in printable]
    return {**{b: chr(b) for b in printable}, **{b: chr(256 + i) for i, b in enumerate(others)}}


def _read_counts(path: Path) -> list[int]:
    """`token_counts.json`: a flat JSON list of non-negative integers, else a `TokenizerError`."""
    try:
        counts = read_small_json(path)
    except UnusableFileError as error:
        raise TokenizerError(str(error)) from None
    if not isinstance(counts, list) or not all(type(c) is int and c >= 0 for c in counts):
        raise TokenizerError(f"{path} must be a JSON list of non-negative integer counts")
    return counts
