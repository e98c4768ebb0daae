"""The interface's language in tests: the catalogs' messages (English -> Chinese), what a page shows as text in
AppTest, and which of it is an English message of the catalog left untranslated on a Chinese page."""
from __future__ import annotations

import re
from functools import lru_cache

from babel.messages.pofile import read_po

from evalcore.core.i18n import LOCALE_DIR

_ESCAPE = re.compile(r"\\(.)")
_FIELD = re.compile(r"\{[^{}]*\}")


@lru_cache(maxsize=1)
def translations() -> dict[str, str]:
    """msgid -> its zh-CN translation, over every .po file of zh_CN (messages.po and any part-*.po)."""
    out: dict[str, str] = {}
    for path in sorted((LOCALE_DIR / "zh_CN" / "LC_MESSAGES").glob("*.po")):
        with path.open("rb") as fh:
            for message in read_po(fh):
                if message.id and message.string:
                    ids = message.id if isinstance(message.id, tuple) else (message.id,)
                    for one in ids:
                        out.setdefault(one, message.string if isinstance(message.string, str) else message.string[0])
    return out


@lru_cache(maxsize=1)
def _patterns() -> list[tuple[str, re.Pattern]]:
    """Each English message whose translation differs from it, as a pattern over a whole text (placeholders: any
    text)."""
    out = []
    for msgid, string in translations().items():
        if string == msgid or not re.search(r"[A-Za-z]{3,}", _FIELD.sub("", msgid)):   # words, not placeholders
            continue
        parts = _FIELD.split(msgid)
        out.append((msgid, re.compile(".*?".join(re.escape(p) for p in parts), re.S)))
    return out


def plain(text: str) -> str:
    """Markdown source as the words a reader sees (escapes dropped)."""
    return _ESCAPE.sub(r"\1", text or "").strip()


def page_texts(at) -> list[str]:
    """Every interface text of an AppTest run: titles, headers, captions, markdown, notices, and the labels and
    shown options of its controls."""
    texts: list[str] = []
    for kind in ("title", "header", "subheader", "caption", "markdown", "info", "warning", "error", "success",
                 "exception"):
        texts += [plain(str(e.value)) for e in at.get(kind)]
    for kind in ("button", "download_button", "selectbox", "multiselect", "radio", "text_input", "text_area",
                 "number_input", "checkbox", "toggle", "slider", "select_slider", "button_group", "chat_input",
                 "metric", "expander", "tab", "popover", "date_input"):
        for e in at.get(kind):
            label = getattr(e, "label", None) or getattr(e, "placeholder", None)
            if label:
                texts.append(plain(str(label)))
            for option in getattr(e, "options", None) or []:
                texts.append(plain(str(option)))
    return [t for t in texts if t]


def english_left(texts: list[str]) -> list[str]:
    """The texts that are, whole, one of the catalog's English messages (a sentence with its placeholders filled
    counts): interface text a Chinese page left in English."""
    left = []
    for text in texts:
        for msgid, pattern in _patterns():
            if pattern.fullmatch(text):
                left.append(f"{text!r} (message {msgid!r})")
                break
    return left
