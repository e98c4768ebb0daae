"""Overview: what the store holds and where to start."""
import streamlit as st

from evalcore.core import i18n
from evalcore.core.i18n import _
from evalcore.pagedata import catalog
from evalcore.store import resolve_db_path
from pages.kit.runtime import building_note, data
from pages.kit.state import empty_store, title_row
from pages.kit.text import md_escape
from pages.kit.widgets import grid

title_row(_("Multi-skill dialogue evaluation"))
st.caption(_("Which automatic metrics can you trust, for which skill? Start from a dataset below."))

if not empty_store():
    building_note()
    summary = data(catalog.summary)
    cols = st.columns(4)
    cols[0].metric(_("Datasets"), summary["dataset"].nunique())
    cols[1].metric(_("Tracks"), len(summary))
    cols[2].metric(_("Responses"), i18n.number(int(summary["responses"].sum())))
    cols[3].metric(_("Human ratings"), i18n.number(int(summary["human_ratings"].sum())))
    st.markdown(_("**Where to start:** *Metric trust* shows at a glance which metric agrees with people on which "
                  "skill, the *Leaderboard* ranks models per track, *Correlations* shows each track's "
                  "metric x dimension correlations, *Drill-down* opens single dialogues, *Human evaluation* "
                  "shows how far annotators agree, *Ensembles* combines metrics (MME-CRS), *Compare* puts two "
                  "models side by side, and *Upload* adds your own model's responses or ratings."))
    st.subheader(_("Tracks"))
    grid(summary, width="stretch")
    st.subheader(_("Datasets"))
    st.caption(_("A dataset's language picks its default tokenizer and METEOR's mode; imported without one, it is "
                 "detected from the texts."))
    grid(data(catalog.dataset_languages), width="stretch")
    st.subheader(_("Models"))
    grid(data(catalog.model_table), width="stretch")
st.caption(_("Store: {path}").format(path=md_escape(str(resolve_db_path()))))
