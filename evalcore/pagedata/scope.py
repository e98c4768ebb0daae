"""Which writes a view of the dashboard can see, declared where the view is defined.

The dashboard caches a view until the store changes in a way the view can see (store.stamp's scopes):
- @dataset_scoped: a view whose first argument is a dataset and which reads only that dataset's rows (and what no
  write confined to one dataset changes: the metric registry, signatures' descriptions), kept until that dataset
  changes. The text-keyed value cache is shared: a value another dataset's scoring adds for identical texts shows
  here at this dataset's next change.
- @global_scoped: a view of what changes only with writes not confined to one dataset (the store's registry of
  imported metrics: its writes are marked global).
- @catalog_scoped: a view of the catalog (the datasets' and tracks' names), kept through imports, scores and
  ratings of tracks that exist.
- @per_dataset(part, merge): a view over every dataset made of one part per dataset, where
  view(con) == merge({d: part(con, d) for d in datasets(con)}); each part is kept until its dataset changes, so a
  write to one dataset (a scoring job's commits) makes only its part anew.
An unmarked view is kept until any change. Each decorator sets the function's `cache_scope` (what the pages'
cache reads) and adds its name to the registry below, so the tests can walk every marked view.
"""
from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable
from types import ModuleType

DATASET, GLOBAL, CATALOG, EVERY_DATASET = "dataset", "global", "catalog", "per-dataset"

DATASET_SCOPED: set[str] = set()
GLOBAL_SCOPED: set[str] = set()
CATALOG_SCOPED: set[str] = set()
PER_DATASET: dict[str, tuple[Callable, Callable]] = {}   # view's name -> (part, merge)
VIEWS: dict[str, Callable] = {}   # every marked view by name: the caches key parts and merges by name alone


def _mark(fn: Callable, scope: str) -> Callable:
    other = VIEWS.get(fn.__name__)
    if other is not None and other.__module__ != fn.__module__:
        raise ValueError(f"two views named {fn.__name__}: {other.__module__} and {fn.__module__}")
    VIEWS[fn.__name__] = fn
    fn.cache_scope = scope
    return fn


def dataset_scoped(fn: Callable) -> Callable:
    DATASET_SCOPED.add(fn.__name__)
    return _mark(fn, DATASET)


def global_scoped(fn: Callable) -> Callable:
    GLOBAL_SCOPED.add(fn.__name__)
    return _mark(fn, GLOBAL)


def catalog_scoped(fn: Callable) -> Callable:
    CATALOG_SCOPED.add(fn.__name__)
    return _mark(fn, CATALOG)


def per_dataset(part: Callable, merge: Callable) -> Callable[[Callable], Callable]:
    def mark(fn: Callable) -> Callable:
        PER_DATASET[fn.__name__] = (part, merge)
        return _mark(fn, EVERY_DATASET)
    return mark


def of(fn: Callable) -> str | None:
    """The scope `fn` was marked with (None: unmarked, kept until any change)."""
    return getattr(fn, "cache_scope", None)


def view_modules() -> list[ModuleType]:
    """Every module of evalcore.pagedata that defines a marked view, imported (importing one registers its views),
    so a check over every view cannot miss a module added later."""
    package = importlib.import_module(__package__)
    modules = [importlib.import_module(f"{__package__}.{info.name}") for info in pkgutil.iter_modules(package.__path__)]
    return [m for m in modules if any(getattr(v, "__module__", None) == m.__name__ for v in VIEWS.values())]
