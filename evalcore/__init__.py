"""evalcore: the engine behind the multi-skill dialogue evaluation dashboard.

It owns the DuckDB store, the importers, tokenizers, metrics, statistics and the
query functions pages call. It never imports Streamlit.
"""

__version__ = "0.1.0"
