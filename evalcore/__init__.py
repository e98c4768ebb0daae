"""evalcore: the engine behind the multi-skill dialogue evaluation dashboard.

It owns the DuckDB store, the importers, tokenizers, metrics, statistics and the
query functions pages call. It never imports Streamlit.

For notebooks: `evalcore.score(hypotheses, references, metrics=[...])` and `evalcore.open(db)`
(evalcore/api.py), loaded on first use so `import evalcore` stays light.
"""

__version__ = "0.1.0"


def __getattr__(name: str):
    if name in ("score", "open", "Scores", "Store"):
        from evalcore import api

        return getattr(api, name)
    raise AttributeError(f"module 'evalcore' has no attribute {name!r}")
