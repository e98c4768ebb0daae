"""The dashboard's data helpers: the DataFrames pages draw (views), view state <-> URL (share), and who
may write through a shared dashboard (access). Pages call these; evalcore/ui never imports Streamlit."""
