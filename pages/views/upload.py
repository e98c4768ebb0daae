"""Upload: a new model's responses (or human ratings) into a track; validated whole, then scored."""
import tempfile
from pathlib import Path

import pandas as pd
import streamlit as st

from evalcore.errors import ImportRefused
from evalcore.ingest.ratings import import_ratings, parse_scale
from evalcore.ingest.responses import import_responses
from evalcore.scoring import score
from pages.views.common import data, md_escape, pick_track, publish, start

con, vs = start("Upload")
dataset, track, c = pick_track(con, vs, "up", skills=False)
kind = vs.one("kind", ["responses", "ratings"], "responses")
kind = c[2].radio("File holds", ["responses", "ratings"], index=["responses", "ratings"].index(kind), key="up-kind")
values = {"dataset": dataset, "track": track, "kind": kind}

if kind == "responses":
    st.caption("CSV, TSV, JSONL or xlsx with columns `item_id`, `response` and, unless you name the model "
               "here, `model`. UTF-8 (with or without BOM) or GBK/GB18030.")
else:
    st.caption("Long format: `item_id` (or `dialogue_id`), `model`, `annotator`, `dimension`, `score`.")
upload = st.file_uploader("File", type=["csv", "tsv", "jsonl", "json", "xlsx"], key="up-file")
model = st.text_input("Model name (blank: the file's model column)", key="up-model").strip() if kind == "responses" else ""
scales = st.text_input("Scales of new dimensions (e.g. Info=0:2, Coh=0:2)", key="up-scales") if kind == "ratings" else ""
existing = data("models_of", dataset, track) if track else []
neural = kind == "responses" and st.checkbox(
    "Also score the model-based metrics (BERTScore, EV, VE, GM, ST)", key="up-neural",
    help="Minutes per thousand responses on a CPU; the first run also converts the default BERTScore model.")
replace = False
if kind == "responses" and model and model in existing:
    choice = st.radio(f"Model {model!r} already has responses in {track}.",
                      ["Use another name", "Replace its responses (one transaction)"], key="up-replace")
    replace = choice.startswith("Replace")
    if not replace:
        st.info("Pick a new model name above to keep both.")

if upload is not None and st.button("Validate and import", type="primary", key="up-go",
                                    disabled=kind == "responses" and bool(model) and model in existing and not replace):
    folder = Path(tempfile.mkdtemp(prefix="evalcore-upload-"))
    path = folder / Path(upload.name).name
    path.write_bytes(upload.getvalue())
    try:
        if kind == "responses":
            report = import_responses(con, path, dataset=dataset, track=track, model=model or None, replace=replace)
        else:
            parsed = dict((n, (lo, hi)) for n, lo, hi in (parse_scale(t.strip()) for t in scales.split(",") if t.strip()))
            report = import_ratings(con, path, dataset=dataset, track=track, scales=parsed)
    except ImportRefused as exc:
        st.error(f"{md_escape(upload.name)} was refused: {len(exc.problems)} problem(s). Nothing was written.")
        report = pd.DataFrame([{"where": p.where or "(whole file)", "field": p.field, "expected": p.expected,
                                "got": p.got} for p in exc.problems])
        st.table(report.head(200))
        if len(report) > 200:
            st.caption(f"... and {len(report) - 200} more.")
    except ValueError as exc:
        st.error(md_escape(str(exc)))
    else:
        st.success(md_escape(report.render().replace(str(path), upload.name)))
        if kind == "responses":
            bar = st.progress(0.0, text="Scoring...")
            scored = score(con, dataset=dataset, track=track, metrics="lexical,neural" if neural else "lexical",
                           progress=False,
                           on_progress=lambda done, total, label: bar.progress(done / max(total, 1),
                                                                                text=f"Scoring {label}: {done}/{total}"))
            bar.progress(1.0, text="Scored.")
            st.text(scored.render())
        st.page_link("pages/views/leaderboard.py", label="See the leaderboard", icon=":material/leaderboard:",
                     query_params={"dataset": dataset, "track": track})

if track:
    held = data("track_models", dataset, track)
    st.subheader(f"Already in {md_escape(track)}")
    if held.empty:
        st.caption("No model has responses in this track yet.")
    else:
        st.dataframe(held, hide_index=True, width="stretch",
                     column_config={"coverage": st.column_config.ProgressColumn("coverage", format="percent")})

publish("upload", values, vs.notices)
