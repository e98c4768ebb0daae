"""Modules imported when first used, not when their user is imported: what keeps a page's first run and the
server's start from importing what they do not run (scipy.stats was 0.35 s of every first page run, the metric
families' models and the generation client 0.2 s of the server's start; `python bench/startup.py`).

A module named by a string (`module("scipy.stats")`) or an object by a "module:object" reference (`load`), as
lm-eval's registry and this CLI's command table keep their entries: the import happens at the first attribute read
or call. The package's own modules named so are checked for the direction of the layers like any import
(tests/project/test_lazy.py), so a reference cannot hide a cycle either."""
from __future__ import annotations

import importlib


def load(reference: str):
    """The object a "module:object" reference names, its module imported now (once: Python keeps it)."""
    name, _, attr = reference.partition(":")
    return getattr(importlib.import_module(name), attr)


class Module:
    """A module imported on the first read of one of its attributes. Reads go to the module each time, so what a
    test patches on the module is what its users see. importlib's own per-module lock makes a first read from two
    threads at once import it once."""

    __slots__ = ("_name",)

    def __init__(self, name: str):
        self._name = name

    def __getattr__(self, attr: str):
        return getattr(importlib.import_module(self._name), attr)

    def __repr__(self) -> str:
        return f"<module {self._name!r}, imported on first use>"


def module(name: str) -> Module:
    """`name`, imported when one of its attributes is first read."""
    return Module(name)
