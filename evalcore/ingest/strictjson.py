"""JSON read strictly: what Python's json.loads takes silently is refused, naming the line and the
field (as a path: `annotations.Overall[0]`, `[2].score` inside a list):

- a key given twice in one object (json.loads keeps the last value: an item whose "dataset" appears twice went
  into the second dataset);
- a number too large for the store's arithmetic: more than MAX_MAGNITUDE in magnitude, which includes every
  number a float cannot hold (json.loads reads 400 nines as an int that no float conversion survives);
- NaN, Infinity and -Infinity, which json.loads accepts and JSON does not have;
- a lone surrogate, written as an escape (`\\ud800` not followed by `\\udc00`-`\\udfff`): no encoding can store it.

The decoder's hooks only note that something is wrong (a Python call per object and number, small beside
what an import does with each record); where it is, is found by scanning that one text again (locate), so
the place is exact and clean files pay nothing more.
"""
from __future__ import annotations

import json
import re

from evalcore.core.errors import Problem
from evalcore.core.i18n import _
from evalcore.core.text import SURROGATE

MAX_MAGNITUDE = 1e100   # numbers larger than this are refused (limits.MAX_MAGNITUDE is this value)
MAX_PROBLEMS = 20        # problems named per text; one repeated mistake need not be listed a thousand times

# One JSON token: a string, a number, punctuation, or a literal (NaN and Infinity included: json.loads reads them).
_TOKEN = re.compile(r'\s*(?:("[^"\\]*(?:\\.[^"\\]*)*")|(-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?)|([{}\[\]:,])'
                    r'|(NaN|-?Infinity|true|false|null))', re.S)
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")


class Decoder:
    """json.loads with hooks that note (in `suspect`) what must be looked at; one per file, reset per text."""

    def __init__(self) -> None:
        self.suspect = False
        self.decoder = json.JSONDecoder(object_pairs_hook=self._pairs, parse_int=self._int,
                                        parse_float=self._float, parse_constant=self._constant)

    def _pairs(self, pairs: list) -> dict:
        out = dict(pairs)
        if len(out) != len(pairs):
            self.suspect = True
        return out

    def _int(self, text: str) -> int:
        if len(text) - text.startswith("-") > 101:   # 102 digits or more: over MAX_MAGNITUDE, not converted
            self.suspect = True
            return 0
        value = int(text)
        if abs(value) > MAX_MAGNITUDE:
            self.suspect = True
        return value

    def _float(self, text: str) -> float:
        value = float(text)
        if not -MAX_MAGNITUDE <= value <= MAX_MAGNITUDE:   # inf too (1e999 reads as inf)
            self.suspect = True
        return value

    def _constant(self, text: str) -> float:
        self.suspect = True
        return float(text)

    def loads(self, text: str):
        """The parsed value and whether it must be checked with `locate` (json.JSONDecodeError as json.loads)."""
        self.suspect = False
        value = self.decoder.decode(text)
        # a lone surrogate can only come from an escape: look for one when the text has \ud800-\udfff escapes
        return value, self.suspect or bool(_SURROGATE_ESCAPE.search(text))


def _path(frames: list) -> str:
    out = ""
    for frame in frames:
        if frame[0] == "{":
            if frame[2] is not None:
                out += ("." if out else "") + frame[2]
        else:
            out += f"[{frame[1]}]"
    return out


def _shown(literal: str) -> str:
    return literal if len(literal) <= 32 else f"{literal[:12]}...{literal[-4:]} (a number of {len(literal):,} characters)"


_SPACE = re.compile(r"[ \t\n\r]*")


def locate(text: str, file: str, where, first_line: int = 1) -> list[Problem]:
    """The problems of a text json.loads has read (strictjson's rules above), each with its place: `where(line,
    top_index)` names it (top_index: the position in a top-level list, or None) and the field is the path inside.
    A top-level list is decoded again element by element (json's own scanner, with the hooks) and only the
    elements the hooks flag are scanned token by token: a large file costs about one more parse, not a scan in
    Python of all of it."""
    start = _SPACE.match(text).end()
    if not text.startswith("[", start):
        return _locate(text, file, where, first_line)
    decoder, problems = Decoder(), []
    at, index, line, counted = start + 1, 0, first_line, 0
    while len(problems) < MAX_PROBLEMS:
        at = _SPACE.match(text, at).end()
        if text.startswith("]", at):
            break
        decoder.suspect = False
        __, end = decoder.decoder.raw_decode(text, at)
        if decoder.suspect or _SURROGATE_ESCAPE.search(text, at, end):
            line += text.count("\n", counted, at)
            counted = at
            problems += _locate(text[at:end], file, where, line, top=index)
        index += 1
        at = _SPACE.match(text, end).end() + 1   # past ',' (or the closing ']')
        if text.startswith("]", at - 1):
            break
    return problems[:MAX_PROBLEMS]


def _locate(text: str, file: str, where, first_line: int = 1, top: int | None = None) -> list[Problem]:
    """locate's token-by-token scan of one text (a JSONL line, an element of a top-level list: `top`)."""
    problems: list[Problem] = []
    frames: list[list] = []   # ['{', {key: line}, current key, expecting a key] or ['[', index]
    at = 0
    counted = [0, first_line]   # the offset lines are counted to, and its line: offsets only grow (one pass)

    def line_at(offset: int) -> int:
        counted[1] += text.count("\n", counted[0], offset)
        counted[0] = offset
        return counted[1]

    def add(offset: int, field: str, expected: str, got: str) -> None:
        problems.append(Problem(file, where(line_at(offset), top), field, expected, got))

    while at < len(text) and len(problems) < MAX_PROBLEMS:
        m = _TOKEN.match(text, at)
        if m is None:
            break   # trailing whitespace (json.loads read the text: nothing else can follow)
        at = m.end()
        string, number, punct, literal = m.groups()
        inner = frames[-1] if frames else None
        if punct:
            if punct in "{[":
                frames.append(["{", {}, None, True] if punct == "{" else ["[", 0])
            elif punct in "}]":
                frames.pop()
            elif punct == "," and inner is not None:
                if inner[0] == "{":
                    inner[3] = True
                else:
                    inner[1] += 1
            continue
        if string is not None:
            value = json.loads(string)
            if inner is not None and inner[0] == "{" and inner[3]:
                inner[3] = False
                line = line_at(m.start(1))
                if value in inner[1]:
                    inner[2] = value
                    first = inner[1][value]
                    add(m.start(1), _path(frames), _("each key once in a JSON object (with the key twice, one of the "
                                                     "values would be dropped silently)"),
                        _("{key} again (first on line {line})").format(key=repr(value), line=f"{first:,}"))
                inner[1].setdefault(value, line)
                inner[2] = value
                if SURROGATE.search(value):
                    add(m.start(1), _path(frames), _("keys without lone surrogates"), _surrogate(string))
                continue
            if SURROGATE.search(value):
                add(m.start(1), _path(frames), _("text without lone surrogates (an escape \\ud800 to \\udfff that "
                                                 "is not half of a pair: no encoding can store it)"), _surrogate(string))
            continue
        if number is not None:
            if "." in number or "e" in number or "E" in number:
                bad = not -MAX_MAGNITUDE <= float(number) <= MAX_MAGNITUDE
            else:
                bad = len(number.lstrip("-")) > 101 or abs(int(number)) > MAX_MAGNITUDE
            if bad:
                add(m.start(2), _path(frames), _("a number of magnitude at most {limit} (larger ones make sums, means "
                                                 "and squares overflow to infinity)").format(limit=f"{MAX_MAGNITUDE:g}"),
                    _shown(number))
            continue
        if literal in ("NaN", "Infinity", "-Infinity"):
            add(m.start(4), _path(frames), _("a JSON number (NaN and Infinity are not JSON; write null for no value)"),
                literal)
    return problems


def _surrogate(token: str) -> str:
    """The first lone surrogate escape of a JSON string token, with its character position in the string."""
    value = json.loads(token)
    found = SURROGATE.search(value)
    return _("the escape {escape} at character {n}").format(escape=f"\\u{ord(found.group()):04x}", n=found.start() + 1)


def path_at(text: str, index: int) -> tuple[int | None, str]:
    """(position in a top-level list or None, field path) of the JSON string or number that character `index`
    of `text` falls in: where in a record a byte that is not in the file's encoding sits. ('', the path so far)
    when `index` falls outside any value."""
    frames: list[list] = []
    at = 0
    while at < len(text):
        m = _TOKEN.match(text, at)
        if m is None or m.start(m.lastindex or 0) > index:
            break
        at = m.end()
        string, number, punct, literal = m.groups()
        top = frames[-1] if frames else None
        if punct:
            if punct in "{[":
                frames.append(["{", {}, None, True] if punct == "{" else ["[", 0])
            elif punct in "}]":
                frames.pop()
            elif punct == "," and top is not None:
                if top[0] == "{":
                    top[3] = True
                else:
                    top[1] += 1
            continue
        if string is not None and top is not None and top[0] == "{" and top[3]:
            top[3] = False
            try:
                top[2] = json.loads(string)
            except ValueError:   # a key holding the bad bytes themselves
                top[2] = string[1:-1]
        if at > index:
            break
    first = frames[0][1] if frames and frames[0][0] == "[" else None
    field = _path(frames)
    if first is not None:
        field = re.sub(r"^\[\d+\]\.?", "", field)
    return first, field
