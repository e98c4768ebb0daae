"""Overview: what the store holds and where to start."""
import streamlit as st

from evalcore.pagedata import catalog
from evalcore.store import resolve_db_path
from pages.kit.runtime import building_note, data
from pages.kit.state import empty_store
from pages.kit.text import md_escape

st.title("Multi-skill dialogue evaluation")
st.caption("Which automatic metrics can you trust, for which skill? Start from a dataset below.")

if not empty_store():
    building_note()
    summary = data(catalog.summary)
    cols = st.columns(4)
    cols[0].metric("Datasets", summary["dataset"].nunique())
    cols[1].metric("Tracks", len(summary))
    cols[2].metric("Responses", f"{int(summary['responses'].sum()):,}")
    cols[3].metric("Human ratings", f"{int(summary['human_ratings'].sum()):,}")
    st.markdown("**Where to start:** *Metric trust* shows at a glance which metric agrees with people on which skill, "
                "the *Leaderboard* ranks models per track, *Correlations* shows each track's "
                "metric x dimension correlations, *Drill-down* opens single dialogues, *Human evaluation* "
                "shows how far annotators agree, *Ensembles* combines metrics (MME-CRS), *Compare* puts two "
                "models side by side, and *Upload* adds your own model's responses or ratings.")
    st.subheader("Tracks")
    st.dataframe(summary, hide_index=True, width="stretch")
    st.subheader("Datasets")
    st.caption("A dataset's language picks its default tokenizer and METEOR's mode; imported without one, it is "
               "detected from the texts.")
    st.dataframe(data(catalog.dataset_languages), hide_index=True, width="stretch")
    st.subheader("Models")
    st.dataframe(data(catalog.model_table), hide_index=True, width="stretch")
st.caption(f"Store: {md_escape(str(resolve_db_path()))}")
