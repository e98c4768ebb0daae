"""Helpers every page shares: the store connection and cached queries."""
from __future__ import annotations

import duckdb
import streamlit as st

from evalcore._malloc import tune
from evalcore.defaults import ensure_default
from evalcore.store import connect, resolve_db_path


@st.cache_resource(show_spinner="Opening the store (building it from data/ on first run)...")
def store() -> duckdb.DuckDBPyConnection:
    """One connection per process; pages take a cursor per call (DuckDB's thread rule)."""
    tune()
    con = connect(resolve_db_path())
    ensure_default(con)
    return con


def cursor() -> duckdb.DuckDBPyConnection:
    return store().cursor()
