"""View state <-> URL query. Pages read their whole state from the query and write it back, so a
copied link reopens the same view; an invalid or stale value falls back to a default and leaves a
short notice instead of an error.

Two rules keep a link honest about what the user chose:
- A value that equals its default is not a choice: the page leaves it out of the query (None), so when an
  upstream choice changes (another track, another dataset) it is derived again from what is there. A
  multi-select that holds all of its default options is absent, not a list of them; a track change then
  shows the new track's dimensions, all of them, instead of carrying the old track's set as if chosen.
- A notice is for a link that named something unknown. A query the page wrote itself in this session
  (`from_link` False) holds only what the user chose; an upstream change that makes a dependent value
  inapplicable (an item of another track, a dimension another dataset does not rate) falls back without a
  notice, and a multi-select's chosen options that the new choice does not offer are noted once, in `notes`.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Collection, Mapping, Sequence
from urllib.parse import urlencode, urlsplit

from evalcore.core.i18n import N_, _

# What a parameter is called in a notice, where its name in the URL is short or internal (in the viewer's language
# where the catalog has it: the URL's own names are English ids, N_ below).
LABELS = {"dim": N_("human dimension"), "dims": N_("human dimensions"), "a": N_("model (a)"), "b": N_("model (b)"),
          "rank_by": N_("column to rank by"), "across_by": N_("column to rank across skills by")}
NAMED = (N_("dataset"), N_("track"), N_("level"), N_("origin"), N_("metric"), N_("metrics"), N_("model"),
         N_("models"), N_("flavor"), N_("sort"), N_("order"), N_("item"), N_("task"), N_("dimension"), N_("skill"))


def label(name: str) -> str:
    return _(LABELS.get(name, name))


@dataclass
class ViewState:
    """Parses query parameters against what the store offers. `from_link`: the query came from a link (opened,
    typed or shared), not from this page in this session; only then does a value it cannot use get a notice."""

    query: Mapping[str, str | list[str]]
    notices: list[str] = field(default_factory=list)
    values: dict[str, str | list[str]] = field(default_factory=dict)
    from_link: bool = True
    notes: list[str] = field(default_factory=list)   # what an upstream change of the user's left out, said once

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
            if self.from_link:   # after the user's own change upstream, an inapplicable value falls back quietly
                # `unavailable` is a page's predicate ("is not scored on this dataset"), in the viewer's language
                if known is not None and unavailable and raw in known:
                    what = _("'{value}' {unavailable}").format(value=raw, unavailable=unavailable)
                elif known is None and unavailable:
                    what = _("{name} '{value}' {unavailable}").format(name=label(name), value=raw, unavailable=unavailable)
                else:
                    what = _("'{value}' is not a known {name}").format(value=raw, name=label(name))
                self.notices.append(_("{what}; showing {fallback} instead.").format(what=what, fallback=repr(fallback))
                                    if fallback is not None else _("{what}.").format(what=what))
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
            if not self.from_link:   # chosen by the user, not offered after their own change upstream: said once
                gone = absent + unknown
                if gone:
                    self.notes.append((_("Not offered here, so left out of {name}: {values}; showing the default "
                                         "instead.") if not chosen else
                                       _("Not offered here, so left out of {name}: {values}.")).format(
                        name=label(name), values=", ".join(gone)))
            else:
                self.notices += [_("'{value}' {unavailable}; left out.").format(value=v, unavailable=unavailable)
                                 for v in absent]
                if unknown:
                    self.notices.append(_("unknown {name} ignored: {values}").format(name=label(name),
                                                                                      values=", ".join(unknown)))
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
            self.notices.append(_("'{value}' is not a number for {name}; using {default}.").format(
                value=raw, name=label(name), default=f"{default:g}"))
            value = default
        if not lo <= value <= hi:
            if self.from_link:   # a range the user's own change upstream moved: quietly the default
                self.notices.append(_("{name} must lie in {lo}..{hi}; using {default}.").format(
                    name=label(name), lo=f"{lo:g}", hi=f"{hi:g}", default=f"{default:g}"))
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
