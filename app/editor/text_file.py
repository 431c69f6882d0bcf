"""Reading and writing the writer's files in the encoding they came in (no Qt).

A file is read as UTF-8 when it is valid UTF-8 (with or without a byte-order mark), as UTF-16 when
it starts with a UTF-16 byte-order mark (and decodes as such), and otherwise as Windows-1252 or, failing that, Latin-1
(which decodes any bytes). Saving writes the same encoding back, so a Latin-1 file stays Latin-1
byte for byte; text the original encoding cannot hold is saved as UTF-8 and the caller says so.
"""

from __future__ import annotations

import codecs
from dataclasses import dataclass
from pathlib import Path

from app.persistence.atomic import write_text_atomic

UTF8 = "utf-8"
FALLBACKS = ("cp1252", "latin-1")  # tried in order when the bytes are not UTF-8
BOMS = ((codecs.BOM_UTF8, "utf-8-sig"), (codecs.BOM_UTF16_LE, "utf-16"), (codecs.BOM_UTF16_BE, "utf-16"))
NAMES = {"utf-8": "UTF-8", "utf-8-sig": "UTF-8 (with BOM)", "utf-16": "UTF-16", "cp1252": "Windows-1252",
         "latin-1": "Latin-1"}


@dataclass(frozen=True)
class TextFile:
    """A file's text and the encoding it was read in."""

    text: str
    encoding: str


def describe(encoding: str) -> str:
    return NAMES.get(encoding, encoding)


def decode_bytes(data: bytes) -> TextFile:
    """Decode `data` with the first encoding that fits (rule in the module docstring)."""
    for bom, encoding in BOMS:
        if data.startswith(bom):
            try:
                return TextFile(data.decode(encoding), encoding)
            except UnicodeDecodeError:
                break  # a mark followed by other bytes (e.g. Latin-1): read byte for byte below
    for encoding in (UTF8, *FALLBACKS):
        try:
            return TextFile(data.decode(encoding), encoding)
        except UnicodeDecodeError:
            continue
    raise AssertionError("latin-1 decodes every byte sequence")


def read_text_file(path: Path) -> TextFile:
    """Read `path` and detect its encoding (raises OSError when it cannot be read)."""
    return decode_bytes(path.read_bytes())


def write_text_file(path: Path, text: str, encoding: str) -> str:
    """Write atomically in `encoding`, or in UTF-8 when the text no longer fits it; return the encoding used."""
    try:
        write_text_atomic(path, text, encoding)
    except UnicodeEncodeError:
        write_text_atomic(path, text, UTF8)
        return UTF8
    return encoding
