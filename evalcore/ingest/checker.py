"""Checking the fields of records: text, identifiers, numbers and lists, every problem of a file collected so
that a user sees all of them at once."""
from __future__ import annotations

import math
import re
from dataclasses import dataclass, field

from evalcore.core import i18n
from evalcore.core.errors import ImportRefused, Problem, short
from evalcore.core.i18n import N_, _
from evalcore.core.text import CONTROL, SURROGATE, bad_character, identity_key, lookalike_letters, normalise_id, skeleton
from evalcore.ingest import limits
from evalcore.ingest.places import place

NORMALISED = N_("normalised {n} identifier(s): surrounding whitespace and invisible characters (zero-width, soft "
              "hyphen, BOM, bidirectional controls) removed and full-width or other compatibility forms folded "
              "(Unicode NFKC)")
# The fields that name a person or a model: two values of one of them that look alike (text.skeleton) but are
# written differently ('Carol' and 'Cаrol' with a Cyrillic 'а') would be two of them shown the same: refused.
LOOKALIKE_FIELDS = ("annotator", "model")


# A number in a text cell: optional sign, ASCII digits, optional point and fraction, optional exponent.
_DECIMAL = re.compile(r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?", re.ASCII)
_NON_FINITE = {"nan", "inf", "infinity"}


def decimal(text: str) -> float | None:
    """The number a text cell writes, or None. Plain decimal only: digits with an optional sign, point and
    exponent ('2', ' -0.5 ', '1e-3', '.5'); surrounding whitespace is allowed and full-width digits are read
    through NFKC like every name ('１.５' is 1.5). What Python's float() also takes is refused: '1_0' (which it
    reads as 10), 'nan', 'inf', 'infinity', and digits of other scripts ('١', Arabic-Indic one), which no
    spreadsheet or statistics package reads as numbers. A decimal too large for a float reads as inf (refused by
    magnitude by the caller)."""
    text = text.strip()
    if not text.isascii():
        text = normalise_id(text)
    if not _DECIMAL.fullmatch(text):
        return None
    return float(text)


def _not_decimal(value: str) -> tuple[str, str]:
    """(expected, got) for a text cell that is not a plain decimal number."""
    word = value.strip().lstrip("+-").lower()
    if word in _NON_FINITE:
        return _("a finite number"), short(value)
    try:
        float(value)
    except ValueError:
        return _("a number"), short(value)
    return (_("a number in plain decimal (digits with an optional sign, point and exponent: 10, -0.5, 1e-3)"),
            _("{value}, which only Python reads as a number").format(value=short(value)))


@dataclass
class Checker:
    """Collects problems across a whole file so a user sees all of them at once."""

    file: str
    problems: list[Problem] = field(default_factory=list)
    normalised: int = 0   # identifiers changed by normalise_id (reported in the import's notes)
    # per LOOKALIKE_FIELDS field: skeleton -> (identity key, the name, where it was first met)
    lookalikes: dict[str, dict[str, tuple[str, str, str]]] = field(default_factory=dict)

    def add(self, where: str, field_: str, expected: str, got: object = None) -> None:
        self.problems.append(Problem(self.file, where, field_, expected, "" if got is None else str(got)))

    def require_columns(self, columns: list[str], required: list[str], where: str = "header (row 1)") -> bool:
        missing = [c for c in required if c not in columns]
        found = ", ".join(repr(x) for x in columns if x) or _("none")
        for c in missing:
            self.add(where, c, _("a column named '{column}'").format(column=c),
                     _("no such column (columns found: {found})").format(found=found))
        return not missing

    def text(self, rec: dict, where: str, key: str, *, required: bool = True, allow_empty: bool = False) -> str | None:
        """A string field. CSV gives strings; JSON may give numbers for ids, which we accept."""
        value = rec.get(key)
        if value is None or (isinstance(value, float) and math.isnan(value)):
            if required:
                self.add(where, key, _("a value"), _("nothing"))
            return None
        if isinstance(value, bool) or not isinstance(value, (str, int)):
            self.add(where, key, _("a string"), f"{type(value).__name__} {short(value)}")
            return None
        value = str(value)
        if len(value) > limits.MAX_CELL:
            self.add(where, key, _("at most {n} characters (EVALCORE_MAX_CELL)").format(n=i18n.number(limits.MAX_CELL)),
                     _("{n} characters").format(n=i18n.number(len(value))))
            return None
        bad = CONTROL.search(value)
        if bad:
            self.add(where, key, _("text without control characters (tab and newline are fine)"),
                     _("U+{code} at character {n}").format(code=f"{ord(bad.group()):04X}", n=bad.start() + 1))
            return None
        bad = SURROGATE.search(value)   # from a JSON escape (parse_json names it first): no encoding can store it
        if bad:
            self.add(where, key, _("text without lone surrogates (U+D800-U+DFFF not half of a pair)"),
                     _("U+{code} at character {n}").format(code=f"{ord(bad.group()):04X}", n=bad.start() + 1))
            return None
        if not value.strip() and not allow_empty:
            if required:
                self.add(where, key, _("a non-empty string"), _("an empty string"))
            return None
        return value

    def ident(self, rec: dict, where: str, key: str, *, required: bool = True) -> str | None:
        """An identifier field, normalised the one way (normalise_id); counts what changed."""
        value = self.text(rec, where, key, required=required)
        if value is None:
            return None
        out = normalise_id(value)
        self.normalised += out != value
        if key in LOOKALIKE_FIELDS and not self.distinct_looking(key, out, where):
            return None
        return out

    def known(self, key: str, names: list[str], where: str = "the store") -> None:
        """Names of field `key` met before this file (a caller's stored annotators or models): a new one that
        looks like one of them is refused as taken by `distinct_looking`."""
        for name in names:
            self.lookalikes.setdefault(key, {}).setdefault(skeleton(name), (identity_key(name), name, where))

    def distinct_looking(self, key: str, name: str, where: str) -> bool:
        """False (with the problem added) when `name` looks like another name of field `key` met before (in this
        file or given to `known`) but is written with other characters: the two would be different people or
        models shown the same. Names with the same identity key ('Carol', 'carol') are one name, not refused."""
        seen = self.lookalikes.setdefault(key, {})
        first = seen.setdefault(skeleton(name), (identity_key(name), name, where))
        if first[0] == identity_key(name):
            return True
        letters = lookalike_letters(name) or lookalike_letters(first[1])
        self.add(where, key, _("a name that does not look like another: {taken} ({place}) is taken and looks the same, "
                               "written with other letters ({letters})").format(
                                   taken=repr(first[1]), place=place(first[2]), letters=", ".join(letters)), repr(name))
        return False

    def notes(self) -> list[str]:
        return [_(NORMALISED).format(n=self.normalised)] if self.normalised else []

    def option(self, option: str, value: str | None, *, what: str = N_("name")) -> str | None:
        """A name given beside the file (--dataset, --track, --model, --metric; the upload page's controls) in the
        one normal form of names (NFKC, surrounding whitespace removed: '--metric ＢＬＥＵ４' is BLEU4). Refused at
        once, naming the option, when it holds a control character or a lone surrogate (a terminal acts on
        the first; the second, from a command line's undecodable bytes, cannot be stored) or nothing. None (not
        given) stays None."""
        if value is None:
            return None
        bad = bad_character(value)
        if bad:
            raise ImportRefused([Problem(self.file, "", option, _("a {what} without control characters or lone "
                                                                 "surrogates").format(what=_(what)), bad)])
        out = normalise_id(value)
        if not out:
            raise ImportRefused([Problem(self.file, "", option, _("a non-empty {what}").format(what=_(what)),
                                         short(value))])
        return out

    def number(self, rec: dict, where: str, key: str) -> float | None:
        """A number: a JSON or spreadsheet number, or a cell in plain decimal (see `decimal`), finite and at most
        limits.MAX_MAGNITUDE in magnitude."""
        value = rec.get(key)
        if isinstance(value, bool):
            self.add(where, key, _("a number"), short(value))
            return None
        if isinstance(value, (int, float)):
            try:
                number = float(value)
            except OverflowError:   # an int no float holds (JSON is refused before: strictjson)
                number = math.inf
        elif isinstance(value, str) and value.strip():
            number = decimal(value)
            if number is None:
                self.add(where, key, *_not_decimal(value))
                return None
        else:
            self.add(where, key, _("a number"), _("nothing") if value in (None, "") else short(value))
            return None
        if math.isnan(number) or (math.isinf(number) and not isinstance(value, (int, str))):
            self.add(where, key, _("a finite number"), short(value))
            return None
        if abs(number) > limits.MAX_MAGNITUDE:
            self.add(where, key, _("a number of magnitude at most {limit} (larger ones make sums, means and squares "
                                   "overflow to infinity)").format(limit=f"{limits.MAX_MAGNITUDE:g}"), short(value))
            return None
        return number

    def string_list(self, rec: dict, where: str, key: str, *, required: bool = True) -> list[str] | None:
        value = rec.get(key)
        if value is None:
            if required:
                self.add(where, key, _("a list of strings"), _("nothing"))
            return None if required else []
        if not isinstance(value, list):
            self.add(where, key, _("a list of strings"), f"{type(value).__name__} {short(value)}")
            return None
        bad = [i for i, v in enumerate(value) if not isinstance(v, str)]
        if bad:
            self.add(where, f"{key}[{bad[0]}]", _("a string"), f"{type(value[bad[0]]).__name__} {short(value[bad[0]])}")
            return None
        # each element under the same limits as any text field (length, control characters)
        ok = [self.text({f"{key}[{i}]": v}, where, f"{key}[{i}]", allow_empty=True) for i, v in enumerate(value)]
        return None if None in ok else value

    def texts_within(self, value: object, where: str, key: str) -> bool:
        """Every string anywhere inside a JSON value (grounding: lists of lists, objects) under the text limits;
        keys included. False (with the problems added) when one is not."""
        ok = True
        if isinstance(value, str):
            return self.text({key: value}, where, key, allow_empty=True) is not None
        if isinstance(value, list):
            for i, v in enumerate(value):
                ok = self.texts_within(v, where, f"{key}[{i}]") and ok
        elif isinstance(value, dict):
            for k, v in value.items():
                ok = self.texts_within(k, where, f"{key} (a key)") and ok
                ok = self.texts_within(v, where, f"{key}.{k}") and ok
        return ok

    def refuse_if_any(self) -> None:
        if self.problems:
            raise ImportRefused(self.problems)
