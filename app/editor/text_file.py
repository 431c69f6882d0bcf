"""Reading and writing the writer's files byte for byte as they came (no Qt).

A file is read as UTF-8 when it is valid UTF-8, as UTF-8 or UTF-16 (big- or little-endian) when it
starts with that byte-order mark and decodes so, and otherwise as Windows-1252 or, failing that,
Latin-1 (which decodes any bytes). Saving writes the same encoding and byte-order mark back; text
the original encoding cannot hold is saved as UTF-8 and the caller says so.

The editor shows every line break (CRLF, CR, LF, U+2029) as a paragraph break, and so are U+FDD0 and
U+FDD1, which Qt's text document takes for its frame markers; it also hides a leading U+FEFF. So
`file_text` maps its text back onto the file's: unchanged lines keep their own line break (or marker),
new lines get the file's most common line break, and text the writer did not edit is written back
exactly as it was read.
"""

from __future__ import annotations

import codecs
import difflib
import os
import re
import stat
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from engine.files.atomic_writes import write_bytes_atomic
from engine.files.small_reads import read_small_bytes

UTF8 = "utf-8"
FALLBACKS = ("cp1252", "latin-1")  # tried in order when the bytes are not UTF-8
# A file's encoding as the document records it → (Python codec, byte-order mark written before the text).
BOM_ENCODINGS = {"utf-8-sig": ("utf-8", codecs.BOM_UTF8), "utf-16le-bom": ("utf-16-le", codecs.BOM_UTF16_LE),
                 "utf-16be-bom": ("utf-16-be", codecs.BOM_UTF16_BE)}
NAMES = {"utf-8": "UTF-8", "utf-8-sig": "UTF-8 (with BOM)", "utf-16": "UTF-16", "utf-16le-bom": "UTF-16 LE",
         "utf-16be-bom": "UTF-16 BE", "cp1252": "Windows-1252", "latin-1": "Latin-1"}
LINE_BREAK = re.compile("\r\n|\r|\n|\u2029|\ufdd0|\ufdd1")  # each is one paragraph break in the editor
NEW_LINE_BREAKS = frozenset({"\r\n", "\r", "\n", "\u2029"})  # what a line the writer adds may end with
PARAGRAPH = "\u2029"  # how the editor's raw text separates paragraphs
HIDDEN_START = "\ufeff"  # the editor drops one leading zero-width no-break space
DOCUMENT_LIMIT = 512 * 2**20  # bytes: far beyond any manuscript, and what the editor can hold in memory
MATCH_LIMIT = 1_000_000  # changed lines (old x new) above which new lines just take the common break


@dataclass(frozen=True)
class TextFile:
    """A file's text and the encoding it was read in."""

    text: str
    encoding: str


def describe(encoding: str) -> str:
    return NAMES.get(encoding, encoding)


def decode_bytes(data: bytes) -> TextFile:
    """Decode `data` with the first encoding that fits (rule in the module docstring)."""
    for encoding, (codec, bom) in BOM_ENCODINGS.items():
        if data.startswith(bom):
            try:
                return TextFile(data[len(bom):].decode(codec), encoding)
            except UnicodeDecodeError:
                break  # a byte-order mark followed by other bytes: read the whole file as one of the others
    for encoding in (UTF8, *FALLBACKS):
        try:
            return TextFile(data.decode(encoding), encoding)
        except UnicodeDecodeError:
            continue
    raise AssertionError("latin-1 decodes every byte sequence")


def encode_text(text: str, encoding: str) -> bytes:
    """`text` as the bytes of a file in `encoding`, byte-order mark included (UnicodeEncodeError when it
    cannot hold the text)."""
    codec, bom = BOM_ENCODINGS.get(encoding, (encoding, b""))
    return bom + text.encode(codec)


def read_text_file(path: Path) -> TextFile:
    """Read `path` and detect its encoding. Raises OSError when it cannot be read, and `NotAFileError` (one
    line naming the path) when it is not a regular file (a FIFO would block the read until some program
    writes to it; /dev/zero never ends) or is larger than `DOCUMENT_LIMIT`."""
    return decode_bytes(read_small_bytes(path, DOCUMENT_LIMIT))


def write_text_file(path: Path, text: str, encoding: str) -> str:
    """Write atomically in `encoding`, or in UTF-8 when the text no longer fits it; return the encoding used."""
    try:
        data, used = encode_text(text, encoding), encoding
    except UnicodeEncodeError:
        data, used = text.encode(UTF8), UTF8
    write_bytes_atomic(path, data)
    return used


def is_read_only(path: Path) -> bool:
    """Whether `path` is an existing file marked read-only (no write bit for its owner) or not writable
    by this user; saving must not silently replace it (a rename would, even as its owner)."""
    try:
        mode = path.stat().st_mode
    except OSError:
        return False
    return stat.S_ISREG(mode) and (not mode & stat.S_IWUSR or not os.access(path, os.W_OK))


def file_text(shown: str, original: str) -> str:
    """The editor's raw text (`shown`: paragraphs split by U+2029) as the text of the file that held
    `original`: the rule in the module docstring."""
    hidden = HIDDEN_START if original.startswith(HIDDEN_START) else ""  # in the file, not in the editor
    body = original[len(hidden):]
    old_lines, new_lines = LINE_BREAK.split(body), shown.split(PARAGRAPH)
    if new_lines == old_lines:
        return original
    breaks = _line_breaks(old_lines, LINE_BREAK.findall(body), new_lines)
    return hidden + "".join(line + brk for line, brk in zip(new_lines, breaks, strict=False)) + new_lines[-1]


def _line_breaks(old_lines: list[str], old_breaks: list[str], new_lines: list[str]) -> list[str]:
    """The break after each new line but the last: the old one after a line the writer left or only
    changed within, else the file's most common line break (LF in a file without any; never a frame marker,
    which is no line break outside the editor)."""
    counts = Counter(b for b in old_breaks if b in NEW_LINE_BREAKS)
    common = counts.most_common(1)[0][0] if counts else "\n"
    old_breaks = [*old_breaks, common]  # the last line has none: one it gains is the common one
    head = _common_prefix(old_lines, new_lines)
    tail = _common_prefix(old_lines[head:][::-1], new_lines[head:][::-1])
    pairs = [(i, i) for i in range(head)] + [(len(old_lines) - k, len(new_lines) - k) for k in range(1, tail + 1)]
    old_middle, new_middle = old_lines[head:len(old_lines) - tail], new_lines[head:len(new_lines) - tail]
    if len(old_middle) * len(new_middle) <= MATCH_LIMIT:  # diffing is quadratic on repeated lines
        matcher = difflib.SequenceMatcher(None, old_middle, new_middle, autojunk=False)
        for tag, old_start, old_end, new_start, new_end in matcher.get_opcodes():
            if tag == "equal" or (tag == "replace" and old_end - old_start == new_end - new_start):
                pairs += [(head + old_start + k, head + new_start + k) for k in range(old_end - old_start)]
    breaks = [common] * (len(new_lines) - 1)
    for old, new in pairs:
        if new < len(breaks):
            breaks[new] = old_breaks[old]
    for index in range(len(breaks) - 1):
        if breaks[index] == "\r" and new_lines[index + 1] == "" and breaks[index + 1] == "\n":
            breaks[index] = "\r\n"  # CR, an empty line, LF would read back as one CRLF
    return breaks


def _common_prefix(first: list[str], second: list[str]) -> int:
    """How many leading items the two lists share."""
    count = 0
    for a, b in zip(first, second, strict=False):
        if a != b:
            break
        count += 1
    return count
