"""Upload: a new model's responses (or human ratings) into a track; validated whole, then scored."""
import pandas as pd
import streamlit as st

from evalcore.core.errors import ImportRefused
from evalcore.core.export import safe_csv
from evalcore.core.words import count
from evalcore.pagedata import boards, catalog, intake
from evalcore.services import jobs
from evalcore.services import upload as uploads
from evalcore.store import WriteConflict, history, retrying
from pages.kit.access import may_write
from pages.kit.endpoints import endpoints_panel, evaluate_form
from pages.kit.runtime import cursor, data, release
from pages.kit.state import pick_track, publish, remember, start
from pages.kit.text import md_escape, safe_filename
from pages.kit.widgets import deferred, expander, grid

con, vs = start("Upload")
# opens where the Leaderboard has a board to place a new model on (not on a chat task's dataset, first by name)
dataset, track, c = pick_track(con, vs, "up", skills=False, shows=data(boards.board_tracks))
KINDS = ["responses", "ratings", "endpoint"]
WORDS = {"responses": "Responses file", "ratings": "Ratings file", "endpoint": "An endpoint"}
kind = vs.one("kind", KINDS, "responses")
kind = c[2].radio("Evaluate", KINDS, index=KINDS.index(kind), key="up-kind", format_func=WORDS.get,
                  help="A file of a model's responses or of human ratings, or a model served at a URL "
                       "(\"Evaluate an endpoint\")")
values = {"dataset": dataset, "track": track, "kind": kind}

if kind == "responses":
    st.caption("CSV, TSV, JSONL or xlsx with columns `item_id`, `response` and, unless you name the model "
               "here, `model`. A file with a `track` column goes to the tracks it names (one file can answer "
               "every track of the dataset at once); a file without one goes to the track chosen above. A .zip "
               "of one file per track, each named after its track (`lic2021_persona.csv`), does the same. The "
               "MSDE release's own workbook (History, response) is matched to this track's items by History. "
               "All tracks are imported or none. UTF-8 (with or without BOM) or GBK/GB18030. Start from a "
               "template: every item with its context and reference, `response` left empty (the one for every track "
               "has a `track` column: filled in, it goes into every track it names, in one transaction).")
    t1, t2 = st.columns(2)  # half the row each: a quarter cut the labels to "Template f…" at 800 px
    if track:
        t1.download_button("Template for this track", deferred(intake.template_csv, dataset, track),
                           file_name=safe_filename(f"template-{dataset}-{track}") + ".csv", mime="text/csv", key="up-tpl")
    t2.download_button("Template for every track", deferred(intake.template_csv, dataset, None),
                       file_name=safe_filename(f"template-{dataset}") + ".csv", mime="text/csv", key="up-tpl-all")
elif kind == "ratings":
    st.caption("Long format: `item_id` (or `dialogue_id`), `model`, `annotator`, `dimension`, `score`.")
# Writing is gated here, in the page's own run: opening /upload directly gets the same check.
allowed, uploader = may_write()
upload, model, scales, missing, neural, replace = None, "", "", "", False, False
if kind == "endpoint":
    st.subheader("Evaluate an endpoint")
    if dataset and (job := evaluate_form(con, dataset, track, allowed)) is not None:
        st.session_state["up-job"] = job
    with expander(vs, values, "endpoints", "Endpoints: where models answer"):
        endpoints_panel(con, allowed)
elif allowed:
    upload = st.file_uploader("File", type=["csv", "tsv", "jsonl", "json", "xlsx", "zip"], key="up-file")
    model = st.text_input("Model name (blank: the file's model column)", key="up-model").strip() if kind == "responses" else ""
    scales = st.text_input("Scales of new dimensions (e.g. Info=0:2, Coh=0:2)", key="up-scales") if kind == "ratings" else ""
    missing = st.text_input("Answers that are not numbers (patterns, comma-separated)", key="up-missing",
                            help="Scores whose text matches one (e.g. `N/A*`) are stored as no rating and counted; "
                                 "any other text refuses the file.") if kind == "ratings" else ""
    neural = kind == "responses" and st.checkbox(
        "Also score the model-based metrics (BERTScore, EV, VE, GM, ST)", key="up-neural",
        help="Minutes per thousand responses on a CPU; the first run also converts the default BERTScore model.")
existing = data(catalog.models_of, dataset, track) if track and kind != "endpoint" else []
if allowed and kind == "responses" and model and model in existing:
    choice = st.radio(md_escape(f"Model {model!r} already has responses in {track}."),
                      ["Use another name", "Replace its responses (the old ones are kept, restorable)"], key="up-replace")
    replace = choice.startswith("Replace")
    if not replace:
        st.info("Pick a new model name above to keep both.")

recorded: dict = {}  # the job this run queued: its id and step count


def start_job() -> None:
    """Run the job queued in this run in a worker process of its own: it goes on if the page is left."""
    job = recorded["job"]
    uploads.start(job)
    st.session_state["up-job"] = job
    st.info(f"Scoring runs as job {job} ({count(recorded['steps'], 'step')}). It goes on if you leave this page; "
            "its progress is below, under Jobs.")


def score_track() -> None:
    """'Score what is missing on this track': its job queued (one short write), then started."""
    assert allowed  # the button is behind the write check
    try:
        recorded["job"], recorded["steps"] = uploads.queue_track(con, dataset, track, neural=neural)
    except WriteConflict as exc:
        st.error(md_escape(str(exc)))
    else:
        start_job()


if kind != "endpoint" and upload is not None and st.button("Validate and import", type="primary", key="up-go",
                                    disabled=kind == "responses" and bool(model) and model in existing and not replace):
    path = uploads.received(upload.getvalue(), upload.name)
    try:
        if kind == "responses":
            # The file says where it goes (a `track` column, a .zip's file names), else the track chosen above;
            # its scoring job is queued in the import's own transaction.
            done = uploads.upload_responses(con, path, dataset=dataset, track=track, model=model or None,
                                            replace=replace, uploader=uploader, shown=upload.name, neural=neural)
            if done.job is not None:
                recorded.update(job=done.job, steps=done.steps)
        else:
            done = uploads.upload_ratings(con, path, dataset=dataset, track=track, scales=uploads.parse_scales(scales),
                                          shown=upload.name, missing=uploads.parse_patterns(missing))
    except ImportRefused as exc:
        st.error(f"{md_escape(upload.name)} was refused: {count(len(exc.problems), 'problem')}. Nothing was written.")
        report = pd.DataFrame([{"where": p.where or "(whole file)", "field": p.field, "expected": p.expected,
                                "got": p.got} for p in exc.problems])
        shown = ImportRefused.MAX_SHOWN
        if len(report) > shown:  # thousands of rows wrong in one way: say so in one line each, then the first few
            st.dataframe(pd.DataFrame(exc.kinds(), columns=["problem", "rows"]), hide_index=True, width="stretch")
            st.caption(f"The first {shown} of {len(report):,}; the whole list is in the CSV below.")
        st.table(report.head(shown))
        if len(report) > shown:
            st.download_button("All problems (CSV)", safe_csv(report),
                               file_name="refused.csv", mime="text/csv", key="up-problems")
    except WriteConflict as exc:
        st.error(f"{md_escape(upload.name)} was not imported: {md_escape(str(exc))}")
    except ValueError as exc:
        st.error(md_escape(str(exc)))
    else:
        text, warnings = done.messages(path, upload.name)   # each warning said once, on its own
        st.success(md_escape(text))
        for note in warnings:
            st.warning(md_escape(note))
        written = done.report.tracks or [track]
        if kind == "responses" and "job" in recorded:
            start_job()
        shown_track = track if track in written else written[0]  # a track the upload wrote into
        remember(dataset, shown_track)   # the Leaderboard opened from the navigation next opens there
        st.page_link("pages/views/leaderboard.py", label="See the leaderboard", icon=":material/leaderboard:",
                     query_params={"dataset": dataset, "track": shown_track})
    finally:
        uploads.discard(path)  # the upload's copy; the store keeps its name and sha256



def job_panel() -> None:
    try:
        job_table()
    finally:
        release()  # a fragment's rerun does not end in app.py: its cursor is given back here


def job_table() -> None:
    recent = intake.jobs_shown(jobs.listing(cursor(), dataset, limit=8))   # no "None" or "nan" for a queued job
    mine = st.session_state.get("up-job")
    if len(recent):  # this session's job, else the newest (a user back on the page sees how it ended)
        row = recent[recent["job_id"] == mine].iloc[0] if mine in set(recent["job_id"]) else recent.iloc[0]
        text = {"done": "Scored.", "failed": "Failed: ", "interrupted": "Interrupted (server restarted): ",
                "queued": "Waiting to start.", "running": "Running: "}
        if row["kind"] == "generate":   # its detail says which step: generating, or scoring
            text.update(done="Generated and scored.", running="")
        head = f"Job {row['job_id']}" + (f" for {row['model']}" if row["model"] else "") + f", {row['state']}. "
        tail = "" if row["state"] in ("done", "queued") else row["detail"]
        st.progress(row["progress"], text=md_escape(head) + text.get(row["state"], "") + md_escape(tail))
    if recent.empty:
        st.caption("None yet: an import or an endpoint's evaluation starts one.")
    else:
        st.caption("Newest first; `evalcore jobs` lists them too.")
        # what a person reads first: state, progress and detail (at 800 px the rest scrolls sideways)
        front = ["job_id", "model", "state", "progress", "detail"]
        shown = recent.drop(columns=["dataset"])
        grid(shown[front + [c for c in shown.columns if c not in front]], width="stretch",
             column_config={"progress": st.column_config.ProgressColumn("progress", format="percent"),
                            "detail": st.column_config.TextColumn(width="large")})


if track:
    held = data(intake.track_models, dataset, track)
    st.subheader(f"Already in {md_escape(track)}")
    if held.empty:
        st.caption("No model has responses in this track yet.")
    else:
        st.dataframe(held, hide_index=True, width="stretch",
                     column_config={"coverage": st.column_config.ProgressColumn("coverage", format="percent")})
        if allowed and st.button("Score what is missing on this track", key="up-score-track",
                     help="Every configuration the track was scored with (the default lexical metrics on a track "
                          "never scored), for every model; only values not yet cached are computed."):
            score_track()

if dataset:
    with expander(vs, values, "history", "History of this dataset: every import, replace, delete and restore"):
        past = data(intake.submissions, dataset)
        if past.empty:
            st.caption("Nothing recorded yet.")
        else:
            st.caption("A replace or delete sets the old rows aside: Undo submission below brings them back "
                       "(see the state column). They stay set aside until an administrator purges them.")
            st.dataframe(past, hide_index=True, width="stretch")
            undoable = [int(i) for i, state in zip(past["submission_id"], past["state"]) if state.startswith("restorable")]
            if allowed and undoable:
                r1, r2 = st.columns([1, 2])
                pick = r1.selectbox("Undo submission", undoable, key="up-restore-pick")
                if r2.button("Restore what it set aside", key="up-restore"):
                    try:
                        done = retrying(history.restore, con, pick, uploader=uploader)
                    except (ValueError, WriteConflict) as exc:
                        st.error(md_escape(str(exc)))
                    else:
                        st.success(f"Restored what submission {pick} set aside (as submission {done}, itself undoable).")
    busy = jobs.listing(con, dataset, limit=8)["state"].isin(["queued", "running"]).any()
    st.subheader("Jobs")
    st.fragment(run_every=1.5 if busy else None)(job_panel)()

publish("upload", values, vs.notices)
