"""View state <-> URL query. Pages read their whole state from the query and write it back, so a
copied link reopens the same view; an invalid or stale value falls back to a default and leaves a
short notice instead of an error."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Collection, Mapping, Sequence
from urllib.parse import urlencode, urlsplit


@dataclass
class ViewState:
    """Parses query parameters against what the store offers."""

    query: Mapping[str, str | list[str]]
    notices: list[str] = field(default_factory=list)
    values: dict[str, str | list[str]] = field(default_factory=dict)

    def _raw(self, name: str) -> str | None:
        value = self.query.get(name)
        if isinstance(value, list):
            value = value[-1] if value else None
        return value if value not in (None, "") else None

    def peek(self, name: str) -> str | None:
        """The link's value of `name` as given, unchecked (None when absent): to learn which options to offer."""
        return self._raw(name)

    def one(self, name: str, options: Sequence[str], default: str | None = None, *,
            unavailable: str | None = None, known: Collection[str] | None = None) -> str | None:
        """The parameter if it is one of options; else the default (first option) and a notice.
        `unavailable` words the notice for a value that is valid in general but not here (e.g. a level
        with no data for the chosen dataset: "level 'turn' has nothing to correlate in X"). With `known`
        (the names valid anywhere, e.g. every metric), only those get that wording, as "'METEOR' is not
        scored on this dataset"; any other value is "not a known" one."""
        raw = self._raw(name)
        fallback = default if default in options else (options[0] if options else None)
        if raw is None:
            value = fallback
        elif raw in options:
            value = raw
        else:
            value = fallback
            if known is not None:
                what = f"'{raw}' {unavailable}" if unavailable and raw in known else f"'{raw}' is not a known {name}"
            else:
                what = f"{name} '{raw}' {unavailable}" if unavailable else f"'{raw}' is not a known {name}"
            self.notices.append(f"{what}; showing {fallback!r} instead." if fallback is not None else f"{what}.")
        if value is not None:
            self.values[name] = value
        return value

    def many(self, name: str, options: Sequence[str], default: Sequence[str] | None = None, *,
             unavailable: str | None = None, known: Collection[str] | None = None) -> list[str]:
        """Comma-separated values kept when known; unknown ones dropped with a notice. With `known` and
        `unavailable` (as for one()), the dropped values valid elsewhere get their own notice, e.g.
        "'METEOR' is not scored on this dataset; left out"."""
        raw = self._raw(name)
        if raw is None:
            chosen = [o for o in (default if default is not None else options) if o in options]
        else:
            asked = [v for v in raw.split(",") if v]
            chosen = [v for v in asked if v in options]
            absent = [v for v in asked if v not in options and known is not None and unavailable and v in known]
            unknown = [v for v in asked if v not in options and v not in absent]
            self.notices += [f"'{v}' {unavailable}; left out." for v in absent]
            if unknown:
                self.notices.append(f"unknown {name} ignored: {', '.join(unknown)}")
            if not chosen:
                chosen = [o for o in (default if default is not None else options) if o in options]
        self.values[name] = chosen
        return chosen

    def member(self, name: str, key: str) -> bool:
        """Whether `key` is one of the comma-separated values of `name` (e.g. open=why,signatures)."""
        raw = self._raw(name)
        return key in (raw.split(",") if raw else [])

    def number(self, name: str, default: float, lo: float, hi: float) -> float:
        raw = self._raw(name)
        try:
            value = float(raw) if raw is not None else default
        except ValueError:
            self.notices.append(f"'{raw}' is not a number for {name}; using {default:g}.")
            value = default
        if not lo <= value <= hi:
            self.notices.append(f"{name} must lie in {lo:g}..{hi:g}; using {default:g}.")
            value = default
        self.values[name] = f"{value:g}"
        return value


def to_query(values: Mapping[str, str | Sequence[str] | None]) -> dict[str, str]:
    """Values as query parameters: lists comma-joined, empty ones left out."""
    out = {}
    for k, v in values.items():
        if v is None:
            continue
        text = ",".join(v) if isinstance(v, (list, tuple)) else str(v)
        if text != "":
            out[k] = text
    return out


def link(base: str, page: str, values: Mapping[str, str | Sequence[str] | None]) -> str:
    """A shareable link: the server of `base` (any path or query in it dropped), page path, view query."""
    parts = urlsplit(base)
    root = f"{parts.scheme}://{parts.netloc}" if parts.scheme and parts.netloc else base.rstrip("/")
    query = urlencode(to_query(values))
    return f"{root}/{page.strip('/')}" + (f"?{query}" if query else "")
