"""Reading JSON text: nesting bounded before parsing, strict values (strictjson), and problems named by line
(and, in a top-level list, by item)."""
from __future__ import annotations

import json
import re
from pathlib import Path

from evalcore.core import i18n
from evalcore.core.errors import ImportRefused, Problem, short
from evalcore.core.i18n import _
from evalcore.ingest import strictjson
from evalcore.ingest.encodings import sniff_encoding
from evalcore.ingest.limits import limit


def _json_depth_at(text: str) -> int | None:
    """The index in `text` where JSON arrays and objects nest deeper than MAX_DEPTH, or None. Brackets inside
    strings do not count. A cheap count first: text with fewer brackets than the limit cannot be too deep."""
    most = limit("MAX_DEPTH")
    if text.count("[") + text.count("{") <= most:
        return None
    depth = 0
    for m in _JSON_TOKEN.finditer(text):
        c = m.group()
        if c in "[{":
            depth += 1
            if depth > most:
                return m.start()
        elif c in "]}":
            depth -= 1
    return None


_JSON_TOKEN = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"|[\[\]{}]')


def parse_json(text: str, name: str, shape: str, where: str = "", first_line: int = 1,
               decoder: strictjson.Decoder | None = None):
    """json.loads, refusing instead of crashing or guessing: nesting deeper than MAX_DEPTH (named by line),
    invalid JSON, and what strictjson refuses (a key twice, a number over MAX_MAGNITUDE, NaN, a lone surrogate),
    named by line and field. `where` names a JSONL line; a whole file's problems are named by line (and, in a
    top-level list, by item). `decoder`: one per file (a new one per call otherwise)."""
    at = _json_depth_at(text)
    if at is not None:
        line = first_line + text.count("\n", 0, at)
        raise ImportRefused([Problem(name, where or f"line {line:,}", "", _(
            "JSON nested at most {n} levels deep (EVALCORE_MAX_DEPTH)").format(n=limit("MAX_DEPTH")),
            _("deeper nesting at column {column}").format(column=i18n.number(at - text.rfind(chr(10), 0, at))))])
    decoder = decoder or strictjson.Decoder()
    try:
        value, suspect = decoder.loads(text)
    except json.JSONDecodeError as exc:
        raise ImportRefused([Problem(name, where or f"line {exc.lineno + first_line - 1:,}", "", shape,
                                     _("invalid JSON ({error} at column {column})").format(error=exc.msg,
                                                                                          column=exc.colno))]) from None
    except (ValueError, RecursionError) as exc:
        raise ImportRefused([Problem(name, where, "", shape, _("JSON Python cannot read ({error})").format(
            error=short(str(exc), 80)))]) from None
    if suspect:
        problems = strictjson.locate(text, name, lambda line, top: where or _json_place(line, top), first_line)
        if problems:
            raise ImportRefused(problems)
    return value


def _json_place(line: int, top: int | None) -> str:
    return f"line {line:,}" + ("" if top is None else f", item {top + 1:,} (index {top:,})")


def read_json(path: Path, shape: str) -> tuple[object, str, list[int]]:
    """A whole JSON file (a list or an object), the encoding it was read in, and for a list the line each of its
    elements begins on (so that a problem in one can name its line); unreadable JSON refused."""
    file = str(path)
    if not path.is_file():
        raise ImportRefused([Problem(file, "", "", _("an existing file"), _("no such file"))])
    encoding = sniff_encoding(path, file, kind="json")
    text = path.read_text(encoding=encoding)
    data = parse_json(text, file, shape)
    return data, encoding, _element_lines(text) if isinstance(data, list) else []


_SPACE = re.compile(r"[ \t\n\r]*")


def _element_lines(text: str) -> list[int]:
    """The line each element of a JSON list (already read whole, so valid) begins on, read element by element
    with json's own scanner (no second copy of the data is kept)."""
    scan = json.JSONDecoder().raw_decode
    at = _SPACE.match(text, 0).end() + 1   # past '['
    out, line, counted = [], 1, 0
    while True:
        at = _SPACE.match(text, at).end()
        if text.startswith("]", at):
            return out
        line += text.count("\n", counted, at)
        counted = at
        out.append(line)
        __, at = scan(text, at)
        at = _SPACE.match(text, at).end() + 1   # past ',' (or ']', then the loop ends)
        if text.startswith("]", at - 1):
            return out
