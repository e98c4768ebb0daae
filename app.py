"""The dashboard's entry point: `streamlit run app.py`.

The store comes from EVALCORE_DB, else the default store, built from data/ on first run.
"""
import streamlit as st

st.set_page_config(page_title="Multi-skill dialogue evaluation", page_icon="💬", layout="wide")

pages = [
    st.Page("pages/overview.py", title="Overview", icon="🏠", url_path="", default=True),
]
st.navigation(pages).run()
