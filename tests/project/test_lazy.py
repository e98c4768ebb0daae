"""Modules imported on first use (evalcore.core.lazy): a reference by name points down the layers like any import, so
a cycle cannot hide behind one (test_layers checks the import statements); and what a cold start imports stays
off it: the server's start and the `evalcore app` parent import neither the statistics (scipy.stats), nor the
readers' spreadsheet library, nor the metric families' models."""
from __future__ import annotations

import ast
import subprocess
import sys

import pytest
from project.test_layers import layer_of, modules

from support import ROOT

from evalcore.core import lazy


def references(source: str) -> list[tuple[str, int]]:
    """(module, line) of every lazy.module("...") and lazy.load("module:object") in `source`."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in ("module", "load")
                and isinstance(node.func.value, ast.Name) and node.func.value.id == "lazy" and node.args
                and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str)):
            found.append((node.args[0].value.partition(":")[0], node.lineno))
    return found


def test_lazy_references_point_down_the_layers():
    mods = modules()
    found, named = [], 0
    for name, path in mods.items():
        here = layer_of(name)
        for target, line in references(path.read_text(encoding="utf-8")):
            if not target.startswith("evalcore"):
                continue
            named += 1
            assert target in mods, f"{name}:{line} names {target}, which is no module of the package"
            there = layer_of(target)
            if there[1] > here[1]:
                found.append(f"{name}:{line} ({here[0]}) names {target} ({there[0]})")
    assert named > 0   # the walk sees the references (the services' and the metric families')
    assert found == [], "\n".join(found)


def test_an_upward_reference_is_caught():
    source = 'from evalcore.core import lazy\nboards = lazy.module("evalcore.pagedata.boards")\n'
    assert references(source) == [("evalcore.pagedata.boards", 2)]
    assert layer_of("evalcore.pagedata.boards")[1] > layer_of("evalcore.analysis.trust")[1]


def test_a_lazy_module_imports_on_first_read_and_reads_through():
    """Nothing is imported until an attribute is read; what is patched on the module is what its users see."""
    code = ("import sys\nfrom evalcore.core import lazy\nm = lazy.module('email.mime.text')\n"
            "assert 'email.mime.text' not in sys.modules\nassert m.MIMEText.__name__ == 'MIMEText'\n"
            "assert 'email.mime.text' in sys.modules\n")
    subprocess.run([sys.executable, "-c", code], cwd=ROOT, check=True)
    m = lazy.module("json")
    import json
    original = json.dumps
    try:
        json.dumps = lambda *a, **k: "patched"
        assert m.dumps({}) == "patched"
    finally:
        json.dumps = original
    assert lazy.load("json:loads")("[1]") == [1]
    with pytest.raises(ModuleNotFoundError):
        lazy.module("evalcore.no_such_module").anything


# what the server imports before it serves (app.py's __main__ branch), and the `evalcore app` parent before it
# hands over: each in a fresh interpreter, then which heavy modules are in sys.modules
SERVER = ("from streamlit.web import cli; from evalcore.core.processes import die_with_parent; "
          "from evalcore.pagedata.access import forwarded_allow_ips; from evalcore.services import jobs; "
          "from evalcore.store import resolve_db_path, server_lock; import pages.kit.runtime")
# what every page imports before it computes anything (pages.kit.state: the report, the trust table's modules)
PAGE = ("import pages.kit.state, evalcore.pagedata.trust_tables, evalcore.pagedata.boards, evalcore.services.report, "
        "evalcore.services.upload, evalcore.ingest.formats.responses, evalcore.ingest.formats.msde")
CLI_APP = ("from evalcore.cli import build_parser; from evalcore.cli.commands import load; "
           "args = build_parser().parse_args(['app']); load('evalcore.cli.running:run'); load(args.declared.handler)")
HEAVY = ("scipy.stats", "scipy.sparse", "openpyxl", "evalcore.metrics.learned.ablstm", "evalcore.metrics.neural.embedding",
         "evalcore.generation.run", "evalcore.analysis.stats")


@pytest.mark.parametrize("code, absent", [(SERVER, HEAVY), (PAGE, ("scipy.stats", "scipy.special", "openpyxl")),
                                          (CLI_APP, HEAVY + ("pandas", "duckdb"))], ids=["server", "page", "evalcore-app"])
def test_a_cold_start_leaves_the_heavy_modules_out(code, absent):
    probe = f"{code}\nimport sys\nprint(' '.join(m for m in {absent!r} if m in sys.modules))"
    done = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True,
                          env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin", "EVALCORE_DB": "/nonexistent/x.duckdb"})
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split() == []


def test_the_written_out_normal_quantile_is_scipys():
    from scipy import special

    from evalcore.analysis.trust_stats import Z95
    assert Z95 == float(special.ndtri(0.975))
