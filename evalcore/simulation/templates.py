"""User-role templates and persona styles, as data: one TOML file per skill and language (templates/user-<skill>-
<language>.toml), in the generation templates' format (evalcore.generation.templates: the scenario's grounding in
the system message, part by part) with two more fields: `end`, what the simulated user writes alone to end the
conversation, and `rating`, the questionnaire it answers afterwards ($dimensions: one line per dimension). A style
(styles.toml) is one sentence per language written after the system message. The file's text and the style's
sentence are what is hashed and carried in a simulator's signature."""
from __future__ import annotations

import functools
import hashlib
import string
import tomllib
from dataclasses import dataclass
from pathlib import Path

from evalcore.generation import templates as generation

HERE = Path(__file__).resolve().parent
STYLES_FILE = HERE / "styles.toml"
DEFAULT_STYLE = "cooperative"


@dataclass(frozen=True)
class UserTemplate:
    template: generation.Template   # the file as a generation template (its system message and parts)
    style: str
    style_text: str

    @property
    def name(self) -> str:
        return self.template.name

    @property
    def sha256(self) -> str:
        """Of the template's text and the style's sentence: what decides how the user is told to behave."""
        return hashlib.sha256((self.template.text + "\n#style\n" + self.style_text).encode("utf-8")).hexdigest()

    @property
    def end(self) -> str:
        return self.template.fields.get("end", "[END]")

    def system(self, grounding: dict | None) -> str:
        return (self.template.system(grounding) + "\n" + self.style_text).strip()

    def messages(self, grounding: dict | None, turns: list[tuple[str, str]]) -> list[dict]:
        """What the simulator is sent for the user's next message: the system message, then the conversation with
        the roles turned round (the system's replies are what the simulator answers, its own earlier messages are
        its side); an empty conversation opens with the template's `opening`."""
        out = [{"role": "system", "content": self.system(grounding)}]
        if not turns:
            return out + [{"role": "user", "content": self.template.fields["opening"]}]
        if turns[0][0] == "user":   # the simulator spoke first: the opening prompted it
            out.append({"role": "user", "content": self.template.fields["opening"]})
        for role, text in turns:
            out.append({"role": "assistant" if role == "user" else "user", "content": text})
        return out

    def rating_messages(self, grounding: dict | None, turns: list[tuple[str, str]], dimensions) -> list[dict]:
        """The questionnaire after the conversation: the same conversation, then the template's `rating` with one line
        per dimension (its name, range and question)."""
        lines = "\n".join(f'"{d.dimension}": {d.min:g}..{d.max:g}' + (f" ({d.question or d.description})"
                                                                    if (d.question or d.description) else "")
                          for d in dimensions)
        rating = string.Template(self.template.fields.get("rating", "$dimensions")).safe_substitute(dimensions=lines)
        body = self.messages(grounding, turns)
        if body[-1]["role"] == "user":
            body[-1] = {"role": "user", "content": body[-1]["content"] + "\n\n" + rating}
        else:
            body.append({"role": "user", "content": rating})
        return body


@functools.lru_cache(maxsize=1)
def styles() -> dict[str, dict[str, str]]:
    """{style: {language: sentence}} as shipped."""
    return tomllib.loads(STYLES_FILE.read_text(encoding="utf-8"))


def check_style(style: str) -> str:
    if style not in styles():
        raise ValueError(f"unknown style {style!r}; shipped styles: {', '.join(styles())}")
    return style


@functools.lru_cache(maxsize=1)
def shipped() -> tuple[generation.Template, ...]:
    return tuple(sorted((generation.parse(p.read_text(encoding="utf-8"), "shipped", p.name)
                         for p in (HERE / "templates").glob("*.toml")), key=lambda t: t.name))


def resolve(spec: str | None, skill: str | None, language: str | None, style: str = DEFAULT_STYLE) -> UserTemplate:
    """The user template a simulator uses on a skill: `spec` None, the skill's shipped one (chit-chat's for another
    skill) in the dataset's language (zh, or en for any other); a shipped name; else a file's path."""
    lang = "zh" if language is None or str(language).lower().startswith("zh") else "en"
    found = {t.name: t for t in shipped()}
    if spec is None:
        template = found[f"user-{skill if skill in generation.SKILLS else 'chitchat'}-{lang}"]
    elif spec in found:
        template = found[spec]
    elif Path(spec).is_file():
        template = generation.load(spec)
    else:
        raise ValueError(f"user template {spec!r} is neither a shipped one ({', '.join(found)}) nor a file")
    sentence = styles()[check_style(style)]
    return UserTemplate(template, style, sentence.get(lang) or sentence.get("en", ""))
