"""The interface's language: gettext catalogs made with Babel (evalcore/locale), the language of this page run, and
numbers in that language's form.

The dashboard says which language a run is in (`use`, once per script run, from the person's switch, their browser,
a task's language or the server's default); everything that makes a sentence for a page calls `_` at that moment, in
that run's thread, so the engine's messages come out in the viewer's language on a page and in English everywhere
else: the CLI, jobs and exports never call `use`, and their messages stay as they are (the CLI's ecosystem is English).
Data (names, texts, model replies) never goes through `_`.

The source strings are the English ones: English needs no catalog, and a message with no translation yet shows in
English rather than as an id. Catalogs: `evalcore/locale/<locale>/LC_MESSAGES/*.mo`, compiled from the `.po` beside
them (docs/development/translations.md says how to extract, update and compile; tests/project/test_catalog.py holds
them complete and compiled)."""
from __future__ import annotations

import gettext
from contextlib import contextmanager
from contextvars import ContextVar
from functools import lru_cache
from pathlib import Path

LOCALE_DIR = Path(__file__).resolve().parent.parent / "locale"
EN, ZH = "en", "zh-CN"
LANGS = (EN, ZH)                        # what a person may pick, as BCP 47 tags (a link, a task, `--lang`)
NAMES = {EN: "English", ZH: "中文"}      # each language in itself, as the switch shows it
_CATALOG = {ZH: "zh_CN"}                # the catalog's folder; English is the source
_BABEL = {EN: "en", ZH: "zh_Hans_CN"}   # Babel's locale for numbers and dates
ENV_VAR = "EVALCORE_LANG"               # the server's default (`evalcore app --lang`)

_current: ContextVar[str] = ContextVar("evalcore_lang", default=EN)


def normal(tag: str | None) -> str | None:
    """A language tag as one of LANGS (zh, zh-CN, zh_Hans, zh-SG -> zh-CN; en-US, en_GB -> en), or None for
    any other language (a browser set to French) or none at all. Traditional Chinese (zh-TW, zh-HK, zh-Hant)
    maps to zh-CN too: closer to its reader than English, and the only Chinese the catalogs hold."""
    if not tag or not isinstance(tag, str):
        return None
    head = tag.strip().replace("_", "-").split("-")[0].lower()
    return ZH if head == "zh" else EN if head == "en" else None


def use(lang: str | None) -> str:
    """Make `lang` this run's language (anything normal() does not know: English); returns it."""
    lang = normal(lang) or EN
    _current.set(lang)
    return lang


@contextmanager
def speaking(lang: str):
    """The block in `lang`, then the language before it (tests; a thread that makes something for a page)."""
    token = _current.set(normal(lang) or EN)
    try:
        yield
    finally:
        _current.reset(token)


def current() -> str:
    """This run's language (English unless use() said otherwise in this thread)."""
    return _current.get()


@lru_cache(maxsize=None)
def _catalog(lang: str) -> gettext.NullTranslations:
    """Every compiled catalog of `lang`, merged (messages.mo first), read once per process."""
    folder = _CATALOG.get(lang)
    files = sorted((LOCALE_DIR / folder / "LC_MESSAGES").glob("*.mo"), key=lambda p: (p.stem != "messages", p.name)) \
        if folder else []
    if not files:
        return gettext.NullTranslations()
    with files[0].open("rb") as fh:
        first = gettext.GNUTranslations(fh)
    for path in files[1:]:
        with path.open("rb") as fh:
            first.add_fallback(gettext.GNUTranslations(fh))
    return first


def _(message: str) -> str:
    """`message` in this run's language (itself in English, or where the catalog has no translation)."""
    lang = _current.get()
    return message if lang == EN else _catalog(lang).gettext(message)


def ngettext(singular: str, plural: str, n: int) -> str:
    """The form of a message for `n` things (Chinese has one form; English two)."""
    lang = _current.get()
    if lang == EN:
        return singular if n == 1 else plural
    return _catalog(lang).ngettext(singular, plural, n)


def pgettext(context: str, message: str) -> str:
    """`message` as the catalog translates it in `context`, for one English word with two meanings ("open": a
    task's state, and a link's text)."""
    lang = _current.get()
    return message if lang == EN else _catalog(lang).pgettext(context, message)


def N_(message: str) -> str:
    """Marks a message for the catalog where it is defined (a module's constant, a page's title) and leaves it
    as it is: it is translated where it is shown, with _(that constant)."""
    return message


def number(value, digits: int | None = None) -> str:
    """A number in this run's form: grouped thousands, `digits` decimals when given (else as many as it has, up to
    three)."""
    from babel.numbers import format_decimal

    if digits is None:
        return format_decimal(value, locale=_BABEL[_current.get()])
    return format_decimal(value, format=f"#,##0.{'0' * digits}" if digits else "#,##0", locale=_BABEL[_current.get()])


def percent(value: float, digits: int = 0) -> str:
    """A share (0.25) as a percentage in this run's form."""
    from babel.numbers import format_percent

    return format_percent(value, format=f"#,##0.{'0' * digits}%" if digits else "#,##0%", locale=_BABEL[_current.get()])


def when(moment) -> str:
    """A date and time (a datetime) in this run's form, to the minute."""
    from babel.dates import format_datetime

    return format_datetime(moment, format="medium", locale=_BABEL[_current.get()])
