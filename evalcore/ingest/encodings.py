"""The encoding of a user's text file: UTF-8 (with or without BOM), UTF-16 with a BOM, or GB18030/GBK, and one of
them throughout.

GB18030 reads almost any bytes, so a file that is not UTF-8 everywhere, read whole as GB18030, would store the UTF-8
rows of a file whose rows are UTF-8 with one GBK row pasted in (or the reverse) as mojibake ("寮犱笁" for 张三):
such a file is refused, naming the first line that is not in the encoding the rest of the file uses.

How a line's encoding is told apart: a line that is valid UTF-8 and reads as text (a CJK character, CJK
punctuation, a full-width form or a curly quote, dash or ellipsis, and no character outside the scripts and
symbols such text holds) is UTF-8. A GBK line almost never is by accident: GBK's two-byte characters fall into UTF-8's three-byte
pattern only in rare runs (lead byte E4-E9, two bytes 80-BF, the rest of the line valid too) and then mostly read
as characters no text holds. Measured on ../shared/data (tests/ingest/test_readers.py): none of 14,810 real Chinese lines
(KdConv, LCCC) written in GBK reads so; of random two- and three-character GBK strings drawn uniformly from
their 2,971 characters, 5 in 100,000 and 3 in 100,000 do, and none of 300,000 drawn by the characters'
frequency. A GBK line that happens to be valid UTF-8 with other characters (one character in seven, alone on a
line, is) counts for neither, so a real GBK file still reads as GB18030; so do lines of ASCII. The encoding
with more lines wins (a tie: UTF-8) and the first line of the other is named.
"""
from __future__ import annotations

import codecs
import csv
import re
from pathlib import Path

from evalcore.core import i18n
from evalcore.core.errors import ImportRefused, Problem, short
from evalcore.core.i18n import N_, _
from evalcore.ingest import strictjson

ENCODINGS_EXPECTED = N_("text in UTF-8 (with or without BOM), UTF-16 with BOM, or GB18030/GBK")
_BOMS = ((b"\xef\xbb\xbf", "utf-8-sig"), (b"\xff\xfe", "utf-16"), (b"\xfe\xff", "utf-16"))
# Text as UTF-8 shows it: at least one CJK character, CJK punctuation, full-width form or typographic
# punctuation (curly quotes, dashes, the ellipsis: what an English file holds beyond ASCII) ...
_CHINESE = re.compile("[\u2010-\u205f\u3000-\u303f\u3400-\u4dbf\u4e00-\u9fff\uff00-\uffef]")
# ... and nothing outside Latin-1, general punctuation and symbols, kana, CJK and full-width forms, emoji
_UNLIKELY = re.compile("[^\x00-\x7f\u00a0-\u00ff\u2000-\u2bff\u3000-\u30ff\u3400-\u4dbf\u4e00-\u9fff"
                       "\uff00-\uffef\U0001f000-\U0001faff]")
LINE_BYTES = 1 << 26   # a line is looked at in pieces of at most this many bytes (64 MiB; limits.MAX_LINE is in characters)


def sniff_encoding(path: Path, file: str, block: int = 1 << 20, kind: str = "") -> str:
    """The one encoding that reads the whole file, found block by block (never the whole file in memory).

    A BOM names the encoding. Otherwise UTF-8 when the whole file is; a file that is UTF-8 up to its last bytes,
    which begin a character that never ends, was cut short and is refused (GB18030 would read it as mojibake).
    Otherwise GB18030, unless the file's lines mix UTF-8 with another encoding (see the module's note): then the
    first line not in the rest's encoding is named, with the field it falls in when `kind` says how to find it
    ('csv', 'tsv': the column; 'jsonl', 'json': the key path)."""
    with path.open("rb") as fh:
        head = fh.read(4)
    for bom, enc in _BOMS:
        if head.startswith(bom):
            # UTF-8 after the BOM (utf-8-sig's own decoder counts error offsets from after it)
            bad = _decode_all(path, "utf-8", block, skip=3) if enc == "utf-8-sig" else _decode_all(path, enc, block)
            if bad is None:
                return enc
            name = "UTF-8" if enc == "utf-8-sig" else "UTF-16"
            where, field = ("", "") if enc == "utf-16" else _place_of(path, kind, "utf-8", bad)
            raise ImportRefused([Problem(file, where, field, _(
                "text in {encoding} throughout, as the byte-order mark at its start says (save the whole file in one "
                "encoding)").format(encoding=name), _("bytes {encoding} cannot read (the first at byte {n} of the "
                                                      "file)").format(encoding=name, n=i18n.number(bad)))])
    bad = _decode_all(path, "utf-8", block, file=file)
    if bad is None:
        return "utf-8"
    _one_encoding(path, file, kind)
    if _decode_all(path, "gb18030", block) is not None:
        where, field = _place_of(path, kind, "utf-8", bad)
        raise ImportRefused([Problem(file, where, field, _(ENCODINGS_EXPECTED),
                                     _("bytes none of them can read (first bad byte at offset {n})").format(
                                         n=i18n.number(bad)))])
    return "gb18030"


def _decode_all(path: Path, enc: str, block: int, file: str | None = None, skip: int = 0) -> int | None:
    """None when `enc` decodes the whole file (from byte `skip`), else the offset of the first byte it cannot
    read. With `file` (UTF-8): a file that ends inside a character is refused, naming it."""
    decoder, offset = codecs.getincrementaldecoder(enc)(), skip
    try:
        with path.open("rb") as fh:
            fh.seek(skip)
            while chunk := fh.read(block):
                decoder.decode(chunk)
                offset += len(chunk)
    except UnicodeDecodeError as exc:
        return offset + exc.start
    pending = decoder.getstate()[0]
    try:
        decoder.decode(b"", final=True)
    except UnicodeDecodeError:
        if file is not None:
            at = offset - len(pending)
            raise ImportRefused([Problem(file, "", "", _(ENCODINGS_EXPECTED), _(
                "a file that ends inside a UTF-8 character at byte {at} (its last {n} byte(s) begin a character that "
                "never ends: was the file cut short?)").format(at=i18n.number(at), n=len(pending)))]) from None
        return offset - len(pending)
    return None


def _place_of(path: Path, kind: str, enc: str, at: int) -> tuple[str, str]:
    """(where, field) of byte `at` of the file (see _place)."""
    number, begins = 1, 0
    with path.open("rb") as fh:
        while piece := fh.readline(LINE_BYTES):
            if begins + len(piece) > at:
                return _place(path, kind, enc, number, begins, piece, at - begins)
            number += piece.endswith(b"\n")
            begins += len(piece)
    return "", ""


def _one_encoding(path: Path, file: str, kind: str = "") -> None:
    """Refuse a file (not UTF-8 throughout) whose lines are partly UTF-8, naming the first line that is not in
    the encoding most of its lines are in."""
    utf8: list = []    # [count, first line, its bytes, where it starts in the file]
    other: list = []
    number, start = 1, 0
    with path.open("rb") as fh:
        while piece := fh.readline(LINE_BYTES):
            if not piece.isascii():
                try:
                    text = piece.decode("utf-8")
                except UnicodeDecodeError:
                    found = other
                else:
                    found = utf8 if _CHINESE.search(text) and not _UNLIKELY.search(text) else None
                if found is not None:
                    if found:
                        found[0] += 1
                    else:
                        found += [1, number, piece, start]
            number += piece.endswith(b"\n")
            start += len(piece)
    if not utf8 or not other:
        return
    if utf8[0] >= other[0]:
        line, piece, begins = other[1:]
        bad = _first_bad_utf8(piece)
        place, field = _place(path, kind, "utf-8", line, begins, piece, bad)
        raise ImportRefused([Problem(file, place, field, _(
            "text in one encoding throughout: this file's other lines are UTF-8 ({n} with non-ASCII text, the first "
            "line {line}); save the whole file as UTF-8").format(n=i18n.number(utf8[0]), line=f"{utf8[1]:,}"),
            _("a line UTF-8 cannot read (byte {byte} at byte {n} of the line)").format(
                byte=f"0x{piece[bad]:02X}", n=i18n.number(bad + 1)) + _as_gb18030(piece))])
    line, piece, begins = utf8[1:]
    text = piece.decode("utf-8")
    first = _CHINESE.search(text).start()
    place, field = _place(path, kind, "gb18030", line, begins, piece, len(text[:first].encode("utf-8")))
    raise ImportRefused([Problem(file, place, field, _(
        "text in one encoding throughout: this file's other lines are GB18030/GBK ({n} with non-ASCII text, the first "
        "line {line}); save the whole file as UTF-8").format(n=i18n.number(other[0]), line=f"{other[1]:,}"),
        _("a line in UTF-8 ({text}, which GB18030 would read as {misread})").format(
            text=short(_excerpt(text)), misread=short(_excerpt(piece.decode("gb18030", "replace")))))])


def _place(path: Path, kind: str, enc: str, line: int, begins: int, piece: bytes, at: int) -> tuple[str, str]:
    """(where, field) of byte `at` of `piece`, line `line` of the file (starting at byte `begins`), read in `enc`
    with the bytes it cannot read kept as escapes: a CSV's column (by its header), a JSON key path (from the
    file's top for a whole JSON file); no field for other kinds."""
    where = f"line {line:,}"
    if kind not in ("csv", "tsv", "jsonl", "json"):
        return where, ""
    def read(data: bytes) -> str:  # noqa: E306
        return data.decode(enc, "surrogateescape")

    if kind in ("json", "jsonl"):
        if kind == "json":   # a whole JSON file: the path from its top
            data, at = path.read_bytes(), begins + at
        else:
            data = piece
        top, field = strictjson.path_at(read(data), len(read(data[:at])))
        return (where if top is None else f"{where}, item {top + 1:,} (index {top:,})"), field
    with path.open("rb") as fh:
        header = fh.readline(LINE_BYTES)
    delimiter = "\t" if kind == "tsv" else ","
    names = next(csv.reader([read(header).lstrip("\ufeff").rstrip("\r\n")], delimiter=delimiter), [])
    column, quoted = 0, False
    for c in read(piece[:at]):   # the delimiters before the byte, outside quotes: its column
        if c == '"':
            quoted = not quoted
        elif c == delimiter and not quoted:
            column += 1
    return where, names[column].strip() if column < len(names) else ""


def _first_bad_utf8(piece: bytes) -> int:
    try:
        piece.decode("utf-8")
    except UnicodeDecodeError as exc:
        return exc.start
    return 0


def _as_gb18030(piece: bytes) -> str:
    """', which reads as GB18030 '...'' when it does: what the user most likely pasted in."""
    try:
        text = piece.decode("gb18030")
    except UnicodeDecodeError:
        return ""
    return _("; it reads as GB18030 {text}").format(text=short(_excerpt(text)))


def _excerpt(text: str, size: int = 40) -> str:
    """The line from its first non-ASCII character, cut to `size` characters (where the encodings differ)."""
    text = text.rstrip("\r\n")
    first = next((i for i, c in enumerate(text) if ord(c) > 127), 0)
    start = max(0, first - 10)
    return text[start:start + size]
