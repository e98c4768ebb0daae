"""Generation templates, as data: one TOML file per skill and language (templates/<skill>-<language>.toml) saying
how an item becomes chat messages. The grounding goes into the system message, each part (knowledge triples, the
goal path, the persona or user profile) with its header and one line per entry; the context follows turn by turn,
the last turn the user's. A user's own file (--template FILE) has the same fields.

Placeholders are string.Template's ($knowledge), never str.format: a template cannot reach attributes, and text
substituted into it is not read again, so a '$' or '{}' in a dialogue stays as it is. The file's text is what is
hashed, shown on the page, and carried (by its hash) in the generation signature."""
from __future__ import annotations

import functools
import hashlib
import string
import tomllib
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent / "templates"
PARTS = ("knowledge", "goal", "persona")   # the grounding keys items carry (evalcore.ingest.formats.items.GROUNDING_KEYS)
PLACEHOLDERS = set(PARTS) | {"grounding"}   # $grounding: every other key, written generically
REQUIRED = ("name", "skill", "language", "description", "opening", "system")
MAX_BYTES = 64 * 1024
SKILLS = ("chitchat", "knowledge", "recommendation", "persona")


@dataclass(frozen=True)
class Template:
    name: str
    skill: str
    language: str
    description: str
    text: str      # the file's text as read: what is hashed and shown
    source: str    # "shipped", or the path of a user's file

    @property
    def sha256(self) -> str:
        return hashlib.sha256(self.text.encode("utf-8")).hexdigest()

    @property
    def short_hash(self) -> str:
        return self.sha256[:12]

    @property
    def fields(self) -> dict:
        return _fields(self.text)

    def system(self, grounding: dict | None) -> str:
        """The system message: the template's text with each grounding part written in, the line of a part the
        item lacks left out. Keys with no placeholder of their own are written after it ($grounding or the end)."""
        fields, grounding = self.fields, grounding or {}
        parts = fields.get("parts", {})
        written = {key: _part(parts.get(key, {}), key, grounding.get(key)) for key in PARTS}
        others = [k for k in grounding if k not in PARTS]
        used = set(_placeholders(fields["system"]))
        generic = "\n".join(_part(parts.get(k, {}), k, grounding[k]) for k in others
                            + [k for k in PARTS if k not in used and grounding.get(k)])
        values = {**written, "grounding": generic}
        lines = []
        for line in fields["system"].split("\n"):
            names = _placeholders(line)
            rendered = string.Template(line).substitute({n: values[n] for n in names})
            if names and not rendered.strip():
                continue   # a part the item lacks: its line goes, not left blank
            lines.append(rendered)
        text = "\n".join(lines).strip()
        if generic and "grounding" not in used:
            text += "\n" + generic
        return text

    def render(self, context: list[str], grounding: dict | None, speakers: list[str | None] | None = None) -> list[dict]:
        """OpenAI chat messages: the system message (unless empty), then the context turn by turn. The last turn is
        the user's; with `speakers` (one per turn, every one known), a turn by the last turn's speaker is the user's and
        any other the assistant's, else the roles alternate backwards. Consecutive turns of one role are joined by a newline
        (servers' chat templates expect the roles to alternate). An empty context opens with the template's
        `opening`, so the model speaks first."""
        out = []
        system = self.system(grounding)
        if system:
            out.append({"role": "system", "content": system})
        if not context:
            return out + [{"role": "user", "content": self.fields["opening"]}]
        last = len(context) - 1
        # an unknown speaker (None) cannot be told from the others: alternation is the better guess then
        known = speakers is not None and len(speakers) == len(context) and None not in speakers
        for i, text in enumerate(context):
            if known:
                role = "user" if speakers[i] == speakers[last] else "assistant"
            else:
                role = "user" if (last - i) % 2 == 0 else "assistant"
            if out and out[-1]["role"] == role:
                out[-1] = {"role": role, "content": out[-1]["content"] + "\n" + text}
            else:
                out.append({"role": role, "content": text})
        return out


@functools.lru_cache(maxsize=64)
def _fields(text: str) -> dict:
    """A template file's fields, parsed once per text (a run renders thousands of items with one template).
    Callers only read the dict."""
    return tomllib.loads(text)


def _placeholders(text: str) -> list[str]:
    return [m.group("named") or m.group("braced") for m in string.Template.pattern.finditer(text)
            if m.group("named") or m.group("braced")]


def _entry(value) -> str:
    if isinstance(value, (list, tuple)):
        return " | ".join(_entry(v) for v in value)
    if isinstance(value, dict):
        return "; ".join(f"{k}: {_entry(v)}" for k, v in value.items())
    return str(value)


def _part(spec: dict, key: str, value) -> str:
    """A grounding part as its header and one line per entry; '' when the item has none."""
    if value is None or value == [] or value == {} or value == "":
        return ""
    entries = (list(value.items()) if isinstance(value, dict) else value if isinstance(value, list) else [value])
    line = string.Template(spec.get("line", "$entry"))
    lines = [line.substitute(n=i, entry=f"{e[0]}: {_entry(e[1])}" if isinstance(value, dict) else _entry(e))
             for i, e in enumerate(entries, 1)]
    return "\n".join([spec.get("header", f"{key}:")] + lines)


def parse(text: str, source: str, where: str) -> Template:
    """A template from its file's text; ValueError naming the file and the field for one that cannot be used."""
    if len(text.encode("utf-8")) > MAX_BYTES:
        raise ValueError(f"{where}: a template of more than {MAX_BYTES // 1024} KB")
    try:
        fields = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ValueError(f"{where}: not TOML: {exc}") from None
    for name in REQUIRED:
        if not isinstance(fields.get(name), str):
            raise ValueError(f"{where}: field {name!r} must be a string (a template has {', '.join(REQUIRED)})")
    if not string.Template(fields["system"]).is_valid():
        raise ValueError(f"{where}: field 'system' has a '$' that starts no placeholder (write $$ for a dollar sign)")
    unknown = [p for p in _placeholders(fields["system"]) if p not in PLACEHOLDERS]
    if unknown:
        raise ValueError(f"{where}: field 'system' has the placeholder ${unknown[0]}; a template knows "
                         + ", ".join(f"${p}" for p in sorted(PLACEHOLDERS)))
    parts = fields.get("parts", {})
    if not isinstance(parts, dict):
        raise ValueError(f"{where}: [parts] must be a table of parts, e.g. [parts.knowledge]")
    for key, spec in parts.items():
        line = spec.get("line", "$entry") if isinstance(spec, dict) else None
        if not isinstance(line, str) or not isinstance(spec.get("header", ""), str):
            raise ValueError(f"{where}: [parts.{key}] needs a string header and line")
        if not string.Template(line).is_valid():
            raise ValueError(f"{where}: [parts.{key}] line has a '$' that starts no placeholder (write $$ for a dollar sign)")
        bad = [p for p in _placeholders(line) if p not in ("n", "entry")]
        if bad:
            raise ValueError(f"{where}: [parts.{key}] line has the placeholder ${bad[0]}; a line knows $n and $entry")
    return Template(fields["name"], fields["skill"], fields["language"], fields["description"], text, source)


@functools.lru_cache(maxsize=1)
def shipped() -> tuple[Template, ...]:
    """The templates that ship with evalcore, by name: read once per process (a chat resolves its template for every
    reply, and read anew that was sixteen files per message)."""
    return tuple(sorted((parse(p.read_text(encoding="utf-8"), "shipped", p.name) for p in HERE.glob("*.toml")),
                        key=lambda t: t.name))


def named(name: str) -> Template:
    found = {t.name: t for t in shipped()}
    if name not in found:
        raise ValueError(f"no shipped template {name!r}; shipped: {', '.join(found)}")
    return found[name]


def load(path: str | Path) -> Template:
    """A user's template file; ValueError naming the file (and the field) for one that cannot be used."""
    path = Path(path)
    try:
        if path.stat().st_size > MAX_BYTES:   # refused before reading a file of any size into memory
            raise ValueError(f"{path}: a template of more than {MAX_BYTES // 1024} KB")
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ValueError(f"template {path}: cannot be read ({exc})") from None
    return parse(text, str(path), str(path))


def pick(skill: str | None, language: str | None) -> Template:
    """The shipped template of a skill (another or none: chit-chat's) and a language (zh, or en for any other;
    Chinese when the dataset says none)."""
    lang = "zh" if language is None or str(language).lower().startswith("zh") else "en"
    return named(f"{skill if skill in SKILLS else 'chitchat'}-{lang}")


def resolve(spec: str | None, skill: str | None, language: str | None) -> Template:
    """The template a run uses: `spec` None, the skill's own (pick); a shipped name; else a file's path."""
    if spec is None:
        return pick(skill, language)
    if spec in {t.name for t in shipped()}:
        return named(spec)
    if not Path(spec).is_file():
        raise ValueError(f"template {spec!r} is neither a shipped template ({', '.join(t.name for t in shipped())}) "
                         "nor a file")
    return load(spec)
