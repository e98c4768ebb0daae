"""Overview: what the store holds and where to start."""
import streamlit as st

from evalcore import queries
from evalcore.store import resolve_db_path
from pages.common import cursor

st.title("Multi-skill dialogue evaluation")
st.caption("Which automatic metrics can you trust, for which skill? Start from a dataset below.")

con = cursor()
summary = queries.summary(con)
if summary.empty:
    st.info("The store is empty. Import data with `python -m evalcore import ...` (see the README).")
    st.stop()

cols = st.columns(4)
cols[0].metric("Datasets", summary["dataset"].nunique())
cols[1].metric("Tracks", len(summary))
cols[2].metric("Responses", f"{int(summary['responses'].sum()):,}")
cols[3].metric("Human ratings", f"{int(summary['human_ratings'].sum()):,}")

st.subheader("Tracks")
st.dataframe(summary, hide_index=True, width="stretch")

st.subheader("Datasets")
st.dataframe(queries.datasets(con), hide_index=True, width="stretch")

st.subheader("Models")
st.dataframe(queries.models(con), hide_index=True, width="stretch")

st.caption(f"Store: {resolve_db_path()}")
