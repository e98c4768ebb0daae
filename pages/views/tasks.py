"""Rating tasks: plan a human evaluation (how many units and raters a question needs), create a task, follow it live
(progress, agreement, disputed units, what its ratings settle and a judge calibrated by them; for side-by-side tasks
the Bradley-Terry ranking), close or reopen it, and export its ratings."""
import streamlit as st

from evalcore.core import i18n
from evalcore.core.errors import StoreError
from evalcore.core.i18n import N_, _
from evalcore.pagedata import annotation as ann
from evalcore.pagedata import calibration, catalog
from evalcore.services.tasks import task_language
from evalcore.store.tasks import LEVELS, MAX_SEED, MODES, SAMPLINGS
from pages.kit import crowd_admin
from pages.kit.access import may_write
from pages.kit.runtime import data
from pages.kit.state import base_url, page_link, publish, start
from pages.kit.text import md_escape, md_message
from pages.kit.widgets import download, grid, select, unless_empty


def ranked(table) -> None:
    """A Bradley-Terry table as people read it: ratings to one decimal on the Elo scale, and the notes that explain
    blank ratings as sentences under it (a cell held them, cut at 1400 px)."""
    shown, notes = ann.notes_apart(table)
    one = st.column_config.NumberColumn(format="%.1f")
    grid(shown, width="stretch", column_config={"rating": one, "ci_low": one, "ci_high": one})
    for note in notes:
        st.text(note)


QUESTIONS = {"difference": N_("difference: the difference between two systems"),
             "ranking": N_("ranking: a ranking of all systems"),
             "correlation": N_("correlation: a metric's or judge's correlation with people"),
             "agreement": N_("agreement: a judge's agreement with people")}   # each question's id, and what it asks
NONE = calibration.NONE
# ids this page shows through _ (a task's mode, sampling, state; no predictor): their words in the catalog
WORDS = (N_("absolute"), N_("pairwise"), N_("stratified"), N_("disagreement"), N_("active"), N_("open"),
         N_("closed"), N_("deleted"), N_("(none)"))
LEVEL_WORDS = {"response": N_("one response"),
               "dialogue": N_("a whole dialogue (a conversation one model held; side by side: ACUTE-Eval)")}
# the headers of the tables this page shows (grid() translates each through the catalog)
HEADERS = (
    # the tasks; progress per annotator; agreement; the annotators and their keys
    N_("task_id"), N_("name"), N_("dataset"), N_("track"), N_("mode"), N_("level"), N_("state"), N_("created_at"),
    N_("language"), N_("n_items"), N_("k"), N_("n_annotators"), N_("units"), N_("annotator"), N_("done"), N_("skipped"),
    N_("flagged"), N_("median_seconds"), N_("dimension"), N_("statistic"), N_("value"), N_("ci_low"),
    N_("ci_high"), N_("note"), N_("answers"), N_("first_entry"), N_("key_issued"), N_("signed_in"),
    # units disputed
    N_("unit"), N_("item_id"), N_("model"), N_("spread"), N_("annotators"), N_("different_answers"),
    # Bradley-Terry ratings
    N_("rating"), N_("rank"), N_("rank_ci_low"), N_("rank_ci_high"), N_("wins"), N_("losses"), N_("ties"),
    N_("votes"), N_("source"),
    # the planner
    N_("with"), N_("units needed"), N_("raters (K)"), N_("budget"), N_("power at budget"), N_("± at budget"),
    N_("smallest detectable"),
    # what the ratings settle; a judge calibrated by them; active sampling's widths
    N_("a - b"), N_("95% interval (fixed size)"), N_("excludes 0 (fixed size)"), N_("calibrated 95%"),
    N_("people only 95%"), N_("rated / valued"), N_("gain"), N_("anytime 95%"), N_("rank 95%"), N_("rated"),
    N_("width"), N_("uniform width"), N_("uniform / reached"),
    # a crowd study's workers and the decisions that excluded them or put them back
    N_("outcome"), N_("excluded"), N_("reason"), N_("gold_share"), N_("loo_spearman"), N_("competence"),
    N_("too_fast_share"), N_("straight_lined"), N_("hourly_pay"), N_("other_identity"), N_("platform_id"),
    N_("decided_at"), N_("decision"), N_("decided_by"),
)


def with_language(tasks):
    """The tasks' table as shown: each task's language beside its dataset (as the language names itself), its mode
    and state in the viewer's words."""
    if tasks.empty:
        return tasks
    shown = tasks.copy()
    langs = [getattr(ann.task(con, int(t)), "lang", None) for t in shown["task_id"]]
    shown.insert(shown.columns.get_loc("dataset") + 1, "language", [i18n.NAMES.get(x, x) for x in langs])
    for column in ("mode", "state"):
        if column in shown:
            shown[column] = shown[column].map(lambda v: _(v) if isinstance(v, str) else v)
    return shown


def option(value: str) -> str:
    """An option that is an id (kept in the link and the store) in the viewer's words; data stays itself."""
    return _(value) if value == NONE else value


def planner() -> None:
    """How many units and raters a question needs, or what a budget reaches (evalcore plan): from the store's own
    ratings of the dimension where there are some (a pilot), else from an assumed spread, which it says."""
    datasets = data(catalog.datasets)
    p1, p2, p3 = st.columns([1, 2, 1])   # the question's words need the room
    dataset = p1.selectbox(_("Dataset"), datasets, key="tk-plan-dataset") if datasets else None
    question = p2.selectbox(_("Question"), list(QUESTIONS), format_func=lambda q: _(QUESTIONS[q]),
                            key="tk-plan-question")
    dimension = p3.selectbox(_("Dimension"), ann.dimensions_of(con, dataset), key=f"tk-plan-dim-{dataset}")
    if dataset is None or dimension is None:
        return
    pilot = calibration.pilot_size(con, dataset, dimension)
    spec = {"dataset": dataset, "dimension": dimension}
    q1, q2, q3 = st.columns(3)
    if question in ("difference", "ranking"):
        effect = q1.number_input(_("Effect") if question == "difference" else _("Smallest gap worth ordering (0: none)"),
                                 0.0, 1e6, 0.5 if question == "difference" else 0.0, step=0.1, key="tk-plan-effect",
                                 help=_("On the dimension's scale: the difference between two systems worth detecting"))
        spec["effect"] = effect if effect > 0 or question == "difference" else None
        if pilot:
            models = calibration.pilot_models(con, dataset, dimension)
            if question == "difference" and len(models) > 2:
                spec["models"] = st.multiselect(_("The two systems"), models, models[:2], max_selections=2,
                                                key=f"tk-plan-models-{dataset}-{dimension}") or None
        else:
            spec["sd"] = q2.number_input(_("Rating SD (assumed)"), 0.01, 1e6, 1.0, step=0.1, key="tk-plan-sd",
                                         help=_("A response's rating standard deviation, e.g. from a published study: "
                                                "there are no ratings of this dimension here to take it from"))
            spec["rater_sd"] = q3.number_input(_("Rater SD (assumed)"), 0.0, 1e6, 0.0, step=0.1,
                                               key="tk-plan-rater-sd",
                                               help=_("How much two people's ratings of one response differ"))
    elif question == "correlation":
        r = q1.number_input(_("Expected correlation (0: from the pilot and a predictor)"), -0.99, 0.99, 0.0, step=0.05,
                            key="tk-plan-r")
        spec["r"] = r if r else None
    else:
        spec["p"] = q1.number_input(_("Expected agreement"), 0.01, 0.99, 0.8, step=0.05, key="tk-plan-p")
        spec["half_width"] = q2.number_input(_("Half-width"), 0.005, 0.5, 0.05, step=0.01, key="tk-plan-hw",
                                             help=_("How closely to know the agreement rate (95% interval: ± this)"))
    r1, r2, r3 = st.columns(3)
    spec["raters"] = int(r1.number_input(_("Raters per unit (K)"), 1, 20, 1, key="tk-plan-k"))
    budget = int(r2.number_input(_("Budget: units per system (0: none)"), 0, 1_000_000, 0, key="tk-plan-budget"))
    spec["budget"] = budget or None
    options = [NONE, *data(calibration.predictors, dataset)]
    chosen = r3.selectbox(_("Predictor (judge or metric, optional)"), options, key=f"tk-plan-by-{dataset}",
                          format_func=option,
                          help=_("With a predictor that follows people, PPI needs fewer people's ratings beside it: "
                                 "its correlation with people comes from the pilot"))
    spec["predictor"] = None if chosen == NONE else chosen
    got = calibration.plan(con, question, **spec)
    if "refused" in got:
        st.info(md_message(got["refused"]))
        return
    st.caption(md_escape((_("Spread from {source}; power 0.8, 95% two-sided.") if pilot else
                          _("Spread from {source} (no ratings of this dimension here); power 0.8, 95% two-sided."))
                         .format(source=got["source"])))
    rows = got["rows"]
    three = st.column_config.NumberColumn(format="%.3f")
    grid(rows.drop(columns=["notes"]), width="stretch",
         column_config={"with": st.column_config.Column(width=180), "± at budget": three,
                        "power at budget": st.column_config.NumberColumn(format="%.2f"), "smallest detectable": three})
    for row in rows.to_dict("records"):
        if row["notes"]:
            st.caption(md_escape(f"{row['with']}: {row['notes']}"))


def settled_so_far(task) -> None:
    """What an absolute task's ratings settle so far, people only, and a judge or metric calibrated by them; the
    intervals that assume a size fixed in advance are said to, and only the anytime ones are for stopping."""
    st.subheader(_("What these ratings settle"))
    got = calibration.settles(con, task.task_id)
    if "refused" in got:
        st.caption(md_message(got["refused"]))
    elif len(got["rows"]):
        st.caption(_("Each pair of models, people's ratings only: the difference a - b with its 95% interval, and "
                     "the smallest difference these ratings detect with power 0.8. These intervals assume the number "
                     "of ratings was fixed before looking: stopping the first time one excludes 0 makes that happen "
                     "too often. To stop as ratings arrive, read the anytime intervals below."))
        grid(got["rows"], width="stretch", column_config={
            "a": st.column_config.Column(width=150), "b": st.column_config.Column(width=150),
            "a - b": st.column_config.NumberColumn(format="%.3f"),
            "smallest detectable": st.column_config.NumberColumn(format="%.3f")})
    else:
        st.caption(_("No ratings yet."))
    judge = task.judge
    options = [NONE, *data(calibration.predictors, task.dataset)]
    c1, c2 = st.columns(2)
    dim = c1.selectbox(_("Dimension"), [d.dimension for d in task.dimensions], key=f"tk-cal-dim-{task.task_id}")
    by = c2.selectbox(_("Calibrate a judge or metric by these ratings"), options,
                      index=options.index(judge) if judge in options else 0, key=f"tk-cal-by-{task.task_id}",
                      format_func=option,
                      help=_("Its values on every response, calibrated by the people's ratings (PPI++); {judge} "
                             "steered this task's sampling").format(judge=judge) if judge else
                      _("Its values on every response, calibrated by the people's ratings (PPI++)"))
    if by == NONE:
        return
    est = calibration.calibrated(con, task.dataset, dim, by)
    if "refused" in est:
        st.warning(md_message(_("No calibrated estimate: {reason}").format(reason=est["refused"])))
        return
    rows = est["rows"]
    # a model's name may be long: its column keeps a set width, so the figures stay in view at 800 px
    table = calibration.table(rows)
    grid(calibration.one_track_less(table.drop(columns=["sampling", "note"])), width="stretch",
         column_config={"model": st.column_config.Column(pinned=True, width="medium"),
                        calibration.GAIN: st.column_config.NumberColumn(format="%.2f"),
                        calibration.ANYTIME: st.column_config.Column(help=_("a confidence sequence: valid however "
                                                                           "often it is looked at, so it may be read "
                                                                           "after every rating and used to stop"))})
    for note in calibration.notes(table):
        st.caption(md_escape(note))
    settled = calibration.apart(rows)
    st.caption(_("Settled whatever the number of looks (pairs whose anytime intervals do not overlap; each is a 95% "
                 "sequence, so both hold together at least 90% of the time): {pairs}")
               .format(pairs=md_escape("; ".join(settled))) if settled else
               _("Settled whatever the number of looks (pairs whose anytime intervals do not overlap; each is a 95% "
                 "sequence, so both hold together at least 90% of the time): none yet."))
    if task.sampling == "active":
        st.caption(_("Active sampling: the 95% interval's width each model has reached with these ratings, beside "
                     "the width a uniform sample of the same number of ratings would have reached (above 1: active "
                     "sampling narrowed it)"))
        three = st.column_config.NumberColumn(format="%.3f")
        grid(calibration.one_track_less(calibration.widths(rows)), width="stretch",
             column_config={"model": st.column_config.Column(pinned=True, width="medium"), calibration.WIDTH: three,
                            calibration.UNIFORM: three,
                            "uniform / reached": st.column_config.NumberColumn(format="%.2f")})
    st.caption(md_escape(calibration.caption(est)))


con, vs = start(_("Rating tasks"))
tasks = ann.all_tasks(con)
ids = [str(t) for t in tasks["task_id"]]
chosen = vs.one("task", ids, ids[-1] if ids else None, unavailable=_("is not a task of this store"))
values = {"task": chosen} if chosen else {}
publish("tasks", values, vs.notices)

st.caption(_("People rate sampled responses (absolute) or pairs of responses (side by side) on the Annotate page; "
             "their ratings count at once everywhere (leaderboards, correlations, Metric trust)."))
if not tasks.empty:
    grid(with_language(tasks), width="stretch")

allowed, who = may_write()   # creating, closing and reopening tasks writes to the store
plan_box = st.expander(_("Plan a task: how many units and raters a question needs"), key="tk-plan-open",
                       on_change="rerun")
if plan_box.open:   # computed only when opened: the page's first view stays as light as before
    with plan_box:
        planner()
created = st.session_state.pop("tk-created", None)
if created:   # what the last click created, once, above the form it emptied
    new_id, notes = created
    # its link and code in the confirmation itself: the task shown below is drawn after this run's heavier work,
    # and until then the browser still showed the previous task's link and code under "shown below"
    made = ann.task(con, new_id)
    st.success(md_escape(_("Task {task} created. Its annotators open {link} and give the access code {code}.")
                         .format(task=new_id, link=page_link("annotate", {"task": str(new_id)}),
                                 code=made.access_code)))
    for note in notes:
        st.warning(md_escape(note))
with st.expander(_("Create a task"), expanded=tasks.empty):
    if not allowed:
        st.caption(_("Creating a task needs write access (see above)."))
    else:
        datasets = data(catalog.datasets)
        dataset = select(_("Dataset"), datasets, datasets[0] if datasets else None, key="tk-dataset")
        gen = st.session_state.get("tk-form", 0)   # a new form (its defaults) after each task created
        with st.form(f"tk-create-{gen}"):
            c1, c2, c3 = st.columns(3)
            mode = c1.selectbox(_("Mode"), MODES, key=f"tk-mode-{gen}", format_func=_)
            items = c2.number_input(_("Units to rate"), 1, 5000, 20, key=f"tk-items-{gen}")
            per_item = c3.number_input(_("Annotators per unit (K)"), 1, 20, 2, key=f"tk-k-{gen}")
            dims = st.multiselect(_("Dimensions"), ann.dimensions_of(con, dataset), ["Info", "Coh"],
                                  key=f"tk-dims-{gen}")
            track_options = data(catalog.track_options, dataset, skills=False)
            tracks = st.multiselect(_("Tracks (none: all)"), track_options, key=f"tk-tracks-{gen}",
                                    placeholder=_("Choose options") if track_options else _("No options to select"))
            c4, c5, c6 = st.columns(3)
            sampling = c4.selectbox(_("Sampling"), SAMPLINGS, key=f"tk-sampling-{gen}", format_func=_,
                                    help=_("stratified: at least 3 units per track, the rest by the tracks' sizes, "
                                           "over their models in turn; disagreement: where the metrics disagree "
                                           "most; active: where the judge chosen below is uncertain")
                                    if "active" in SAMPLINGS else
                                    _("stratified: at least 3 units per track, the rest by the tracks' sizes, over "
                                      "their models in turn; disagreement: where the metrics disagree most"))
            judge = None
            if "active" in SAMPLINGS:   # active sampling: the judge or metric whose uncertainty picks the units
                judges = [NONE, *data(calibration.predictors, dataset)] if dataset else [NONE]
                judge = st.selectbox(_("Judge (active sampling)"), judges, key=f"tk-judge-{gen}", format_func=option,
                                     help=_("active: each response offered with a probability that favours where "
                                            "this judge or metric is uncertain (with a floor), stored with the unit "
                                            "so the estimates stay unbiased; absolute tasks of single responses "
                                            "only"))
                judge = None if judge == NONE else judge
            seed = c5.number_input(_("Seed"), 0, MAX_SEED, 0, key=f"tk-seed-{gen}")
            ties = c6.checkbox(_("Ties allowed (side by side)"), True, key=f"tk-ties-{gen}")
            level = st.selectbox(_("Unit"), LEVELS, key=f"tk-level-{gen}",
                                 format_func=lambda v: _(LEVEL_WORDS[v]) if v in LEVEL_WORDS else v)
            # the language its annotators read the Annotate page, the definitions and the questions in: by default
            # the dataset's (the key follows the dataset, so its default does too)
            default = task_language(con, dataset) if dataset else i18n.EN
            lang_of_task = st.selectbox(_("Language"), i18n.LANGS, index=i18n.LANGS.index(default),
                                        format_func=i18n.NAMES.get, key=f"tk-lang-{gen}-{dataset}",
                                        help=_("The language its annotators read the Annotate page, the dimension "
                                               "definitions and the questions in, whatever their browser's language "
                                               "(by default the dataset's)"))
            name = st.text_input(_("Name"), max_chars=120, key=f"tk-name-{gen}")
            guidelines = st.text_area(_("Guidelines for annotators"), max_chars=5000, key=f"tk-guide-{gen}")
            if st.form_submit_button(_("Create task")):
                try:
                    new = ann.create(con, dataset=dataset, mode=mode, dimensions=dims, items=int(items),
                                     per_item=int(per_item), tracks=tracks or None, seed=int(seed), name=name or None,
                                     sampling=sampling, ties=ties, guidelines=guidelines, created_by=who, level=level,
                                     lang=lang_of_task, **({"judge": judge} if judge else {}))
                    st.session_state["tk-created"] = (new, ann.coverage(con, new))
                except (ValueError, StoreError) as exc:
                    st.error(md_escape(str(exc)))
                else:
                    st.session_state["tk-form"] = gen + 1
                    st.query_params["task"] = str(new)
                    st.rerun()

if chosen:
    task = ann.task(con, int(chosen))
    # the heading, link and code first, before the results are computed: the previous view's stay on screen
    # until this run draws over them, and a task's link and code are what must never be another task's
    st.subheader(_("Task {task}").format(task=task.task_id))
    url = page_link("annotate", {"task": str(task.task_id)})
    st.link_button(_("Open the annotator page"), url, help=_("The page annotators rate on: send them this link."))
    if allowed:   # the code is for annotators: shown to whoever may write, not to every reader
        st.text(_("Annotators open {link} and give the access code {code}").format(link=url, code=task.access_code))
    else:
        st.text(_("Annotators open {link} (the access code is shown to those who may write)").format(link=url))
    result = ann.results(con, task.task_id)
    st.text(f"{task.name}\n" + _("{mode} on {dataset}: {dimensions}; {units} units, {per_item} annotators each; "
                                  "{state}").format(mode=_(task.mode), dataset=task.dataset,
                                                    dimensions=", ".join(d.dimension for d in task.dimensions),
                                                    units=i18n.number(result["units"]),
                                                    per_item=i18n.number(task.per_item), state=_(task.state)))
    st.progress(min(result["finished"] / max(result["needed"], 1), 1.0),
                text=_("{finished} of {needed} done ({units} units, {per_item} annotators each)").format(
                    finished=i18n.number(result["finished"]), needed=i18n.number(result["needed"]),
                    units=i18n.number(result["units"]), per_item=i18n.number(task.per_item)))
    st.caption(_("Progress per annotator: units finished, skipped, flagged; median seconds per unit finished by "
                 "answering, from the unit being shown to its last answer"))
    grid(result["progress"], width="stretch")
    st.caption(_("Agreement per dimension as answers arrive (95% bootstrap intervals, 200 resamples)")
               if task.mode == "absolute" else
               _("Agreement per dimension as answers arrive (95% bootstrap intervals, 200 resamples); a vote is one "
                 "of three categories: the first model, a tie, the other model of the unit's pair, whichever side "
                 "each annotator saw it on"))
    agreement = unless_empty(result["agreement"], "note")   # shown only where a value is withheld, and why
    pairs = agreement["statistic"].str.startswith("cohen_kappa") if len(agreement) else []
    grid(agreement[~pairs] if len(agreement) else agreement, width="stretch")
    if len(agreement) and pairs.any():
        with st.expander(_("Cohen's kappa per pair of annotators ({n} rows)").format(n=i18n.number(int(pairs.sum())))):
            grid(agreement[pairs], width="stretch")
    if task.mode == "pairwise":
        st.caption(_("Bradley-Terry ratings (Elo scale, 1000 = the mean) from this task's votes, with 95% bootstrap "
                     "intervals and rank intervals"))
        ranked(ann.ranking(con, task))
        matrix = ann.win_rates(con, task)
        if len(matrix):
            st.caption(_("Win rate of the row's model against the column's, per dimension (a tie counts half; "
                         "blank: never met)"))
            models = [c for c in matrix.columns if c not in ("dimension", "model")]
            grid(matrix, width="stretch",
                 column_config={m: st.column_config.NumberColumn(format="%.2f") for m in models})
        both = ann.sources_side_by_side(con, task.dataset)
        if len(both):
            st.caption(_("People's votes and each LLM judge's pairwise verdicts on this dataset, side by side"))
            ranked(both)
    if task.mode == "absolute" and task.level == "response":
        settled_so_far(task)
    if len(result["disputed"]):
        st.caption(_("Units annotators disagree on most (for adjudication)"))
        grid(result["disputed"], width="stretch")
    download(ann.export(con, task.task_id), f"task-{task.task_id}-ratings", _("Download the ratings (CSV)"))
    if allowed and task.state in ("open", "closed"):
        target = "closed" if task.state == "open" else "open"
        if st.button(_("Close the task") if target == "closed" else _("Reopen the task"), key="tk-state"):
            try:
                ann.set_state(con, task.task_id, target)
            except (ValueError, StoreError) as exc:
                st.error(md_escape(str(exc)))
            else:
                st.rerun()
    crowd_admin.study_part(con, task, kind="rating", allowed=allowed, who=who, prefix="tk")

if allowed:
    with st.expander(_("Annotators and their personal keys")):
        st.caption(_("Each annotator enters with their name and the personal key issued at their first entry (with "
                     "a sign-in, their address). Someone who lost their key gets a new one here (or with `evalcore "
                     "task reset-key NAME`): it is shown once, to you, to pass on; their old key stops working, and "
                     "their answers stay theirs."))
        grid(ann.annotators(con), width="stretch")
        with st.form("tk-reset"):
            lost = st.text_input(_("Annotator who lost their key"), max_chars=80, key="tk-lost")
            if st.form_submit_button(_("Issue a new key")):
                try:
                    person, key = ann.reset_key(con, lost)
                except (ValueError, StoreError) as exc:
                    st.error(md_escape(str(exc)))
                else:
                    st.success(md_escape(_("A new personal key for {person} (shown this once):").format(person=person)))
                    st.text(key)
                    if chosen:
                        st.caption(_("Their personal link to this task"))
                        st.text(ann.personal_link(base_url(), int(chosen), person, key))
