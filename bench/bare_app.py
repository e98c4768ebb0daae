"""The bare Streamlit app that bench/browser.py --baseline times next to the dashboard's pages:
a title and one st.dataframe of a small frame (10 rows x 3 columns), nothing else."""
import pandas as pd
import streamlit as st

st.title("Bare app")
st.dataframe(pd.DataFrame({"a": range(10), "b": [i * 0.5 for i in range(10)], "c": [f"row {i}" for i in range(10)]}))
