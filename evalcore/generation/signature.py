"""A generation's signature: everything that decides the replies, as one line stored with the submission and shown
beside the model (served model and host, each track's template and its hash, sampling, seed, the sample drawn,
the evalcore version), and the same as fields."""
from __future__ import annotations

from dataclasses import dataclass

from evalcore import __version__
from evalcore.generation.source import Item
from evalcore.generation.templates import Template
from evalcore.store.endpoints import Registered


@dataclass(frozen=True)
class Plan:
    dataset: str
    model: str
    endpoint: Registered
    tracks: list[str]
    items: list[Item]
    templates: dict[str, Template]   # track -> its template
    signature: str
    details: dict


def sign(dataset: str, tracks: list[str], entry: Registered, model: str, items: list[Item],
         templates: dict[str, Template], sample: tuple[int, int] | None) -> Plan:
    """The plan with its signature. The key and the endpoint's registered name are not in it (neither decides a
    reply); the concurrency is not either."""
    used = {t.name: t for t in templates.values()}
    tpl = ",".join(f"{name}#{t.short_hash}" for name, t in sorted(used.items()))
    parts = [f"gen:{entry.model}@{entry.endpoint().host}", f"tpl:{tpl}", f"t:{entry.temperature}",
             f"p:{entry.top_p}", f"max:{entry.max_tokens}", f"seed:{entry.seed}",
             f"items:{'all' if sample is None else f'{sample[0]}@{sample[1]}'}", f"evalcore:{__version__}"]
    details = {"served_model": entry.model, "base_url": entry.base_url, "host": entry.endpoint().host,
               "templates": {name: {"sha256": t.sha256, "source": t.source} for name, t in sorted(used.items())},
               "track_templates": {track: t.name for track, t in sorted(templates.items())},
               "temperature": entry.temperature, "top_p": entry.top_p, "max_tokens": entry.max_tokens,
               "seed": entry.seed, "sample": None if sample is None else {"items": sample[0], "seed": sample[1]},
               "evalcore": __version__, "stream": True}
    return Plan(dataset, model, entry, tracks, items, templates, "|".join(parts), details)
