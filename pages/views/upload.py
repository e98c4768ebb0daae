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

every_track = False
if kind == "responses":
    st.caption("CSV, TSV, JSONL or xlsx with columns `item_id`, `response` and, unless you name the model "
               "here, `model`; with a `track` column, one file answers every track of the dataset at once (all "
               "tracks are imported or none). UTF-8 (with or without BOM) or GBK/GB18030. Start from a template: "
               "every item with its context and reference, `response` left empty.")
    t1, t2, t3 = st.columns([1, 1, 2])
    if track:
        t1.download_button("Template for this track", data("template_csv", dataset, track),
                           file_name=f"template-{dataset}-{track}.csv".replace("/", "_"), mime="text/csv", key="up-tpl")
    t2.download_button("Template for every track", data("template_csv", dataset, None),
                       file_name=f"template-{dataset}.csv".replace("/", "_"), mime="text/csv", key="up-tpl-all")
    every_track = t3.toggle("The file has a `track` column: import into every track it names", key="up-every",
                            help="One model's responses for the whole benchmark in one file and one transaction.")
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
    choice = st.radio(md_escape(f"Model {model!r} already has responses in {track}."),
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
            report = import_responses(con, path, dataset=dataset, track=None if every_track else track,
                                      model=model or None, replace=replace)
        else:
            parsed = dict((n, (lo, hi)) for n, lo, hi in (parse_scale(t.strip()) for t in scales.split(",") if t.strip()))
            report = import_ratings(con, path, dataset=dataset, track=track, scales=parsed)
    except ImportRefused as exc:
        st.error(f"{md_escape(upload.name)} was refused: {len(exc.problems):,} problem(s). Nothing was written.")
        report = pd.DataFrame([{"where": p.where or "(whole file)", "field": p.field, "expected": p.expected,
                                "got": p.got} for p in exc.problems])
        shown = ImportRefused.MAX_SHOWN
        if len(report) > shown:  # thousands of rows wrong in one way: say so in one line each, then the first few
            st.dataframe(pd.DataFrame(exc.kinds(), columns=["problem", "rows"]), hide_index=True, width="stretch")
            st.caption(f"The first {shown} of {len(report):,}; the whole list is in the CSV below.")
        st.table(report.head(shown))
        if len(report) > shown:
            st.download_button("All problems (CSV)", report.to_csv(index=False).encode("utf-8-sig"),
                               file_name="refused.csv", mime="text/csv", key="up-problems")
    except ValueError as exc:
        st.error(md_escape(str(exc)))
    else:
        st.success(md_escape(report.render().replace(str(path), upload.name)))
        for note in [n for n in report.notes if n.startswith("warning:")]:
            st.warning(md_escape(note))
        if kind == "responses":
            bar = st.progress(0.0, text="Scoring...")
            for tr in report.tracks or [track]:
                scored = score(con, dataset=dataset, track=tr, metrics="lexical,neural" if neural else "lexical",
                               progress=False,
                               on_progress=lambda done, total, label: bar.progress(
                                   done / max(total, 1), text=f"Scoring {label}: {done}/{total}"))
                st.text(scored.render())
            bar.progress(1.0, text="Scored.")
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
