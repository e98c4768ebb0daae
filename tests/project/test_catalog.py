"""The interface's catalogs (issue 64): every message the pages and the engine mark for translation (`pybabel extract`
over the tree, as docs/development/translations.md runs it) has a zh-CN translation that is neither empty nor fuzzy,
with the same placeholders as its English; the compiled .mo files are the .po files as they stand; and no module that
imports `_` uses the name for anything else (an `a, _ = ...` there would turn every later `_()` into a crash)."""
import ast
import gettext
import re
from pathlib import Path

from babel.messages.extract import extract_from_dir
from babel.messages.mofile import write_mo
from babel.messages.pofile import read_po

from evalcore.core.i18n import LOCALE_DIR
from support import ROOT

CATALOGS = sorted((LOCALE_DIR / "zh_CN" / "LC_MESSAGES").glob("*.po"))
FIELDS = re.compile(r"\{([^{}]*)\}")
PERCENT = re.compile(r"%\([^)]+\)[-#0 +]*\d*(?:\.\d+)?[diouxXeEfFgGcrs]")   # named %-fields (a "95%" is text)


def _mapping():
    methods, options = [], {}
    for line in (LOCALE_DIR / "babel.cfg").read_text(encoding="utf-8").splitlines():
        found = re.fullmatch(r"\[(\w+):\s*(\S+)\]", line.strip())
        if found:
            methods.append((found.group(2), found.group(1)))
    return methods, options


def extracted() -> dict[str, list[str]]:
    """msgid -> where it is marked, over the tree (the paths babel.cfg names)."""
    methods, options = _mapping()
    out: dict[str, list[str]] = {}
    for filename, lineno, message, comments, context in extract_from_dir(str(ROOT), methods, options):
        ids = message if isinstance(message, tuple) else (message,)
        for one in ids:
            if one:
                out.setdefault(one, []).append(f"{filename}:{lineno}")
    return out


def catalog() -> dict[str, object]:
    out = {}
    for path in CATALOGS:
        with path.open("rb") as fh:
            for message in read_po(fh):
                for one in (message.id,) if isinstance(message.id, str) else message.id:   # a plural: both forms
                    if one:
                        out[one] = message
    return out


def test_every_marked_message_has_a_zh_cn_translation():
    messages, have = extracted(), catalog()
    assert len(messages) > 100
    missing = {m: where[:2] for m, where in messages.items() if m not in have}
    assert not missing, f"{len(missing)} messages not in the catalog (pybabel extract + update): {list(missing.items())[:10]}"
    empty = [m for m in messages if not all(have[m].string if isinstance(have[m].string, tuple) else [have[m].string])]
    assert not empty, f"{len(empty)} untranslated: {empty[:10]}"
    fuzzy = [m for m in messages if have[m].fuzzy]
    assert not fuzzy, fuzzy[:10]


def test_placeholders_match_their_english():
    wrong = []
    for msgid, message in catalog().items():
        strings = message.string if isinstance(message.string, tuple) else (message.string,)
        ids = message.id if isinstance(message.id, tuple) else (message.id,)
        for string in strings:
            if not string:
                continue
            if sorted(FIELDS.findall(string)) != sorted(FIELDS.findall(ids[-1])) \
                    or sorted(PERCENT.findall(string)) != sorted(PERCENT.findall(ids[-1])):
                wrong.append((msgid, string))
    assert not wrong, wrong[:10]


def test_the_compiled_catalogs_are_the_po_files(tmp_path):
    for path in CATALOGS:
        with path.open("rb") as fh:
            po = read_po(fh)
        fresh = tmp_path / (path.stem + ".mo")
        with fresh.open("wb") as out:
            write_mo(out, po)
        with fresh.open("rb") as a, path.with_suffix(".mo").open("rb") as b:
            assert gettext.GNUTranslations(a)._catalog == gettext.GNUTranslations(b)._catalog, \
                f"{path.with_suffix('.mo').name} is stale: pybabel compile -d evalcore/locale"


def test_no_module_that_translates_assigns_the_name_underscore():
    bad = []
    for path in [ROOT / "app.py", *sorted((ROOT / "pages").rglob("*.py")), *sorted((ROOT / "evalcore").rglob("*.py"))]:
        tree = ast.parse(path.read_text(encoding="utf-8"))
        if not any(isinstance(n, ast.ImportFrom) and any(a.name == "_" for a in n.names) for n in ast.walk(tree)):
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.Name) and node.id == "_" and isinstance(node.ctx, ast.Store):
                bad.append(f"{path.relative_to(ROOT)}:{node.lineno}")
            if isinstance(node, ast.arg) and node.arg == "_":
                bad.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert not bad, bad
