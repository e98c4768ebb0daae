"""Upload: a new model's responses (or human ratings) into a track; validated whole, then scored."""
import pandas as pd
import streamlit as st

from evalcore.core import i18n
from evalcore.core.errors import ImportRefused
from evalcore.core.export import safe_csv
from evalcore.core.i18n import N_, _, ngettext
from evalcore.core.words import count
from evalcore.ingest.places import place
from evalcore.pagedata import boards, catalog, intake
from evalcore.services import jobs
from evalcore.services import upload as uploads
from evalcore.store import WriteConflict, history, retrying
from pages.kit import lang
from pages.kit.access import may_write
from pages.kit.endpoints import endpoints_panel, evaluate_form
from pages.kit.runtime import cursor, data, release
from pages.kit.state import pick_track, publish, remember, start
from pages.kit.text import md_escape, safe_filename
from pages.kit.widgets import deferred, expander, grid

con, vs = start(_("Upload"))
# opens where the Leaderboard has a board to place a new model on (not on a chat task's dataset, first by name)
dataset, track, c = pick_track(con, vs, "up", skills=False, shows=data(boards.board_tracks))
KINDS = ["responses", "ratings", "endpoint"]
WORDS = {"responses": N_("Responses file"), "ratings": N_("Ratings file"), "endpoint": N_("An endpoint")}
# the refused file's problems as the page lists them (the CSV keeps these English names)
HEADERS = (N_("where"), N_("field"), N_("expected"), N_("got"), N_("problem"), N_("rows"))
STATES = (N_("queued"), N_("running"), N_("done"), N_("failed"), N_("interrupted"))   # a job's state, as shown
JOB_KINDS = (N_("score"), N_("generate"))   # a job's kind, as shown
REPLACE = [N_("Use another name"), N_("Replace its responses (the old ones are kept, restorable)")]   # ids (state)
kind = vs.one("kind", KINDS, "responses")
kind = c[2].radio(_("Evaluate"), KINDS, index=KINDS.index(kind), key="up-kind", format_func=lambda k: _(WORDS[k]),
                  help=_("A file of a model's responses or of human ratings, or a model served at a URL "
                         "(\"Evaluate an endpoint\")"))
values = {"dataset": dataset, "track": track, "kind": kind}

if kind == "responses":
    st.caption(_("CSV, TSV, JSONL or xlsx with columns `item_id`, `response` and, unless you name the model "
                 "here, `model`. A file with a `track` column goes to the tracks it names (one file can answer "
                 "every track of the dataset at once); a file without one goes to the track chosen above. A .zip "
                 "of one file per track, each named after its track (`lic2021_persona.csv`), does the same. The "
                 "MSDE release's own workbook (History, response) is matched to this track's items by History. "
                 "All tracks are imported or none. UTF-8 (with or without BOM) or GBK/GB18030. Start from a "
                 "template: every item with its context and reference, `response` left empty (the one for every "
                 "track has a `track` column: filled in, it goes into every track it names, in one transaction)."))
    t1, t2 = st.columns(2)  # half the row each: a quarter cut the labels to "Template f…" at 800 px
    if track:
        t1.download_button(_("Template for this track"), deferred(intake.template_csv, dataset, track),
                           file_name=safe_filename(f"template-{dataset}-{track}") + ".csv", mime="text/csv", key="up-tpl")
    t2.download_button(_("Template for every track"), deferred(intake.template_csv, dataset, None),
                       file_name=safe_filename(f"template-{dataset}") + ".csv", mime="text/csv", key="up-tpl-all")
elif kind == "ratings":
    st.caption(_("Long format: `item_id` (or `dialogue_id`), `model`, `annotator`, `dimension`, `score`."))
# Writing is gated here, in the page's own run: opening /upload directly gets the same check.
allowed, uploader = may_write()
upload, model, scales, missing, neural, replace = None, "", "", "", False, False
if kind == "endpoint":
    st.subheader(_("Evaluate an endpoint"))
    if dataset and (job := evaluate_form(con, dataset, track, allowed)) is not None:
        st.session_state["up-job"] = job
    with expander(vs, values, "endpoints", _("Endpoints: where models answer")):
        endpoints_panel(con, allowed)
elif allowed:
    upload = st.file_uploader(_("File"), type=["csv", "tsv", "jsonl", "json", "xlsx", "zip"], key="up-file")
    model = st.text_input(_("Model name (blank: the file's model column)"), key="up-model").strip() if kind == "responses" else ""
    scales = st.text_input(_("Scales of new dimensions (e.g. Info=0:2, Coh=0:2)"), key="up-scales") if kind == "ratings" else ""
    missing = st.text_input(_("Answers that are not numbers (patterns, comma-separated)"), key="up-missing",
                            help=_("Scores whose text matches one (e.g. `N/A*`) are stored as no rating and counted; "
                                   "any other text refuses the file.")) if kind == "ratings" else ""
    neural = kind == "responses" and st.checkbox(
        _("Also score the model-based metrics (BERTScore, EV, VE, GM, ST)"), key="up-neural",
        help=_("Minutes per thousand responses on a CPU; the first run also converts the default BERTScore model."))
existing = data(catalog.models_of, dataset, track) if track and kind != "endpoint" else []
if allowed and kind == "responses" and model and model in existing:
    choice = st.radio(md_escape(_("Model {model} already has responses in {track}.").format(model=repr(model), track=track)),
                      REPLACE, key="up-replace", format_func=_)
    replace = choice.startswith("Replace")
    if not replace:
        st.info(_("Pick a new model name above to keep both."))

recorded: dict = {}  # the job this run queued: its id and step count


def kinds(exc: ImportRefused) -> list[tuple[str, int]]:
    """ImportRefused.kinds in this run's language: (field and expectation, count), most frequent first."""
    counts: dict[tuple[str, str], int] = {}
    for p in exc.problems:
        counts[(p.field, p.expected)] = counts.get((p.field, p.expected), 0) + 1
    return [(_("field '{field}': expected {expected}").format(field=f, expected=e) if f
             else _("expected {expected}").format(expected=e), n)
            for (f, e), n in sorted(counts.items(), key=lambda kv: -kv[1])]


def start_job() -> None:
    """Run the job queued in this run in a worker process of its own: it goes on if the page is left."""
    job = recorded["job"]
    uploads.start(job)
    st.session_state["up-job"] = job
    st.info(_("Scoring runs as job {job} ({steps}). It goes on if you leave this page; its progress is below, "
              "under Jobs.").format(job=job, steps=count(recorded["steps"], N_("step"))))


def score_track() -> None:
    """'Score what is missing on this track': its job queued (one short write), then started."""
    assert allowed  # the button is behind the write check
    try:
        recorded["job"], recorded["steps"] = uploads.queue_track(con, dataset, track, neural=neural)
    except WriteConflict as exc:
        st.error(md_escape(str(exc)))
    else:
        start_job()


if kind != "endpoint" and upload is not None and st.button(_("Validate and import"), type="primary", key="up-go",
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
        st.error(ngettext("{file} was refused: {n} problem. Nothing was written.",
                          "{file} was refused: {n} problems. Nothing was written.", len(exc.problems)).format(
            file=md_escape(upload.name), n=i18n.number(len(exc.problems))))
        # where: "row 3" in the viewer's language (the row's number as it is); the sentences are the engine's, made
        # in this run's language
        report = pd.DataFrame([{"where": place(p.where) if p.where else _("(whole file)"), "field": p.field,
                                "expected": p.expected, "got": p.got} for p in exc.problems],
                              columns=["where", "field", "expected", "got"])
        shown = ImportRefused.MAX_SHOWN
        if len(report) > shown:  # thousands of rows wrong in one way: say so in one line each, then the first few
            grid(pd.DataFrame(kinds(exc), columns=["problem", "rows"]), width="stretch")
            st.caption(_("The first {shown} of {total}; the whole list is in the CSV below.").format(
                shown=shown, total=i18n.number(len(report))))
        st.table(report.head(shown).rename(columns=_))
        if len(report) > shown:
            st.download_button(_("All problems (CSV)"), safe_csv(report),
                               file_name="refused.csv", mime="text/csv", key="up-problems")
    except WriteConflict as exc:
        st.error(_("{file} was not imported: {reason}").format(file=md_escape(upload.name), reason=md_escape(str(exc))))
    except ValueError as exc:
        st.error(md_escape(str(exc)))
    else:
        text, warnings = done.messages(path, upload.name)   # each warning said once, on its own
        st.success(md_escape(text))
        for note in warnings:   # "warning: " marks them in the report (services.upload); the box says it in Chinese
            st.warning(md_escape(note if i18n.current() == i18n.EN else note.removeprefix("warning: ")))
        written = done.report.tracks or [track]
        if kind == "responses" and "job" in recorded:
            start_job()
        shown_track = track if track in written else written[0]  # a track the upload wrote into
        remember(dataset, shown_track)   # the Leaderboard opened from the navigation next opens there
        st.page_link("pages/views/leaderboard.py", label=_("See the leaderboard"), icon=":material/leaderboard:",
                     query_params={"dataset": dataset, "track": shown_track})
    finally:
        uploads.discard(path)  # the upload's copy; the store keeps its name and sha256



def job_panel() -> None:
    lang.resume()   # a fragment's rerun runs without app.py: the page's language
    try:
        job_table()
    finally:
        release()  # a fragment's rerun does not end in app.py: its cursor is given back here


def job_table() -> None:
    recent = intake.jobs_shown(jobs.listing(cursor(), dataset, limit=8))   # no "None" or "nan" for a queued job
    mine = st.session_state.get("up-job")
    if len(recent):  # this session's job, else the newest (a user back on the page sees how it ended)
        row = recent[recent["job_id"] == mine].iloc[0] if mine in set(recent["job_id"]) else recent.iloc[0]
        text = {"done": _("Scored."), "failed": _("Failed: "), "interrupted": _("Interrupted (server restarted): "),
                "queued": _("Waiting to start."), "running": _("Running: ")}
        if row["kind"] == "generate":   # its detail says which step: generating, or scoring
            text.update(done=_("Generated and scored."), running="")
        state = _(row["state"])
        head = (_("Job {job} for {model}, {state}.").format(job=row["job_id"], model=row["model"], state=state)
                if row["model"] else _("Job {job}, {state}.").format(job=row["job_id"], state=state))
        head += " " if i18n.current() == i18n.EN else ""   # Chinese sentences follow each other without a space
        tail = "" if row["state"] in ("done", "queued") else row["detail"]
        st.progress(row["progress"], text=md_escape(head) + text.get(row["state"], "") + md_escape(tail))
    if recent.empty:
        st.caption(_("None yet: an import or an endpoint's evaluation starts one."))
    else:
        st.caption(_("Newest first; `evalcore jobs` lists them too."))
        # what a person reads first: state, progress and detail (at 800 px the rest scrolls sideways)
        front = ["job_id", "model", "state", "progress", "detail"]
        shown = recent.drop(columns=["dataset"])
        # interface words (the comparisons above read the English): a job's state and kind
        shown["state"] = shown["state"].map(_)
        shown["kind"] = shown["kind"].map(lambda k: _(k) if isinstance(k, str) and k else k)
        grid(shown[front + [c for c in shown.columns if c not in front]], width="stretch",
             column_config={"progress": st.column_config.ProgressColumn("progress", format="percent"),
                            "detail": st.column_config.TextColumn(width="large")})


if track:
    held = data(intake.track_models, dataset, track)
    st.subheader(_("Already in {track}").format(track=md_escape(track)))
    if held.empty:
        st.caption(_("No model has responses in this track yet."))
    else:
        grid(held, width="stretch",
             column_config={"coverage": st.column_config.ProgressColumn("coverage", format="percent")})
        if allowed and st.button(_("Score what is missing on this track"), key="up-score-track",
                     help=_("Every configuration the track was scored with (the default lexical metrics on a track "
                            "never scored), for every model; only values not yet cached are computed.")):
            score_track()

if dataset:
    with expander(vs, values, "history", _("History of this dataset: every import, replace, delete and restore")):
        past = data(intake.submissions, dataset)
        if past.empty:
            st.caption(_("Nothing recorded yet."))
        else:
            st.caption(_("A replace or delete sets the old rows aside: Undo submission below brings them back "
                         "(see the state column). They stay set aside until an administrator purges them."))
            grid(past, width="stretch")
            undoable = [int(i) for i, state in zip(past["submission_id"], past["state"])
                        if state == intake.restorable(int(i))]
            if allowed and undoable:
                r1, r2 = st.columns([1, 2])
                pick = r1.selectbox(_("Undo submission"), undoable, key="up-restore-pick")
                if r2.button(_("Restore what it set aside"), key="up-restore"):
                    try:
                        done = retrying(history.restore, con, pick, uploader=uploader)
                    except (ValueError, WriteConflict) as exc:
                        st.error(md_escape(str(exc)))
                    else:
                        st.success(_("Restored what submission {pick} set aside (as submission {done}, itself "
                                     "undoable).").format(pick=pick, done=done))
    busy = jobs.listing(con, dataset, limit=8)["state"].isin(["queued", "running"]).any()
    st.subheader(_("Jobs"))
    st.fragment(run_every=1.5 if busy else None)(job_panel)()

publish("upload", values, vs.notices)
