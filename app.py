"""The dashboard's entry point: `streamlit run app.py`.

The store comes from EVALCORE_DB, else the default store, built from data/ on first run.
URL paths are fixed so shared links stay stable.
"""
import streamlit as st

st.set_page_config(page_title="Multi-skill dialogue evaluation", page_icon="💬", layout="wide")

pages = [
    st.Page("pages/overview.py", title="Overview", icon="🏠", url_path="", default=True),
    st.Page("pages/leaderboard.py", title="Leaderboard", icon="🏆", url_path="leaderboard"),
    st.Page("pages/correlations.py", title="Correlations", icon="📈", url_path="correlations"),
    st.Page("pages/drilldown.py", title="Drill-down", icon="🔎", url_path="drilldown"),
    st.Page("pages/compare.py", title="Compare", icon="⚖️", url_path="compare"),
    st.Page("pages/upload.py", title="Upload", icon="⬆️", url_path="upload"),
]
st.navigation(pages).run()
