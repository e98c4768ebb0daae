"""evalcore: the engine behind the multi-skill dialogue evaluation dashboard.

One folder per layer, imports pointing down only (docs/development/architecture.md; tests/project/test_layers.py):
core <- store <- metrics <- scoring <- ingest, analysis <- services <- cli, api and ui (the
dashboard's data helpers). It never imports Streamlit.

For notebooks: `evalcore.score(hypotheses, references, metrics=[...])` and `evalcore.open(db)`
(evalcore/api.py), loaded on first use so `import evalcore` stays light.
"""

__version__ = "0.1.0"


def __getattr__(name: str):
    if name in ("score", "open", "Scores", "Store"):
        from evalcore import api

        return getattr(api, name)
    raise AttributeError(f"module 'evalcore' has no attribute {name!r}")
