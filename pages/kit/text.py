"""Text that may be a user's, made safe to show or to name a file: literal markdown, evalcore's messages with
their commands as code, highlighted overlaps, download file names."""
from __future__ import annotations

import re

_MD_SPECIAL = re.compile(r"([\\`*_{}\[\]()#+\-.!|<>:~$=^&\"'])")
# Streamlit rewrites some text after the markdown is parsed, where backslash escapes no longer count:
# " -- " to an em dash, " -> ", " <- ", " <-> ", " >= ", " <= ", " ~= " to arrows and signs (each between
# spaces), ":material_x:" (and ":material/x"), ":streamlit:" and ":smile:" to icons. An invisible WORD
# JOINER (U+2060) between their characters keeps them as typed; text elsewhere ("--dataset") is untouched.
WORD_JOINER = "\u2060"
_REWRITTEN = re.compile(r"(?<!\S)(?:<->|->|<-|--|>=|<=|~=)(?!\S)|(?<=:)(?=[\w+/-]+:|material/)")


def md_escape(text: str) -> str:
    """Text as literal markdown: every markdown or HTML character escaped (uploaded text is data), and
    Streamlit's own rewrites (dashes, arrows, icons) kept from firing."""
    text = _REWRITTEN.sub(lambda m: WORD_JOINER.join(m.group()) or WORD_JOINER, text)
    return _MD_SPECIAL.sub(r"\\\1", text).replace("\n", "  \n")


def md_message(text: str) -> str:
    """One of evalcore's messages as markdown: its `command` spans as inline code, the rest escaped as text
    (escaped whole, a message showed its backticks: "run `evalcore score ...`"). Split at every backtick, a code
    span never holds one, so no text in it (a dataset's name) can end it early and become markup."""
    parts = text.split("`")
    if len(parts) % 2 == 0 or any(not part.strip() for part in parts[1::2]):  # unpaired or empty: all text
        return md_escape(text)
    return "".join(md_escape(part) if i % 2 == 0 else f"`{part}`" for i, part in enumerate(parts))


def safe_filename(name: str, limit: int = 150) -> str:
    """A download's file name (without extension) from text that may be a user's: letters of any script,
    digits, '.', '-' and '_' kept, every other run of characters (path separators, spaces, markup,
    control characters) one '_'; no leading dot, at most `limit` characters, never empty."""
    stem = re.sub(r"_{2,}", "_", re.sub(r"[^\w.-]+", "_", name)).strip("._-")[:limit].rstrip("._-")
    return stem or "download"


def highlighted(segments: list[tuple[str, bool]]) -> str:
    """Escaped markdown with shared segments on a coloured background (each plain run escaped whole, so
    no rewrite spans two segments)."""
    out, plain = [], ""
    for s, shared in segments:
        if shared and s.strip():
            out += [md_escape(plain), f":orange-background[{md_escape(s)}]"]
            plain = ""
        else:
            plain += s
    return "".join(out) + md_escape(plain)
