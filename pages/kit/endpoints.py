"""The Upload page's endpoint parts: "Evaluate an endpoint" (a generation and its scoring queued as one job, run by
a worker process) and the registered endpoints (listed for everyone; added and removed with write access). No key
is ever asked for or shown: only the name of the variable the server reads it from."""
from __future__ import annotations

import streamlit as st

from evalcore.core import i18n
from evalcore.core.i18n import N_, _
from evalcore.generation.templates import shipped
from evalcore.pagedata import catalog
from evalcore.pagedata import endpoints as views
from evalcore.services import evaluate
from evalcore.services import upload as uploads
from evalcore.store import WriteConflict, retrying
from evalcore.store import endpoints as registry
from pages.kit.runtime import data
from pages.kit.text import md_escape
from pages.kit.widgets import grid

EVERY_TRACK = N_("every track of the dataset")   # an option's id (shown through _)
OWN_TEMPLATE = N_("each track's skill and language")   # the form's template options, before the shipped ones' names
TRACK_TEMPLATE = N_("each track's own")
SHIPPED = N_("shipped")   # a template's source: shipped with evalcore (else the path of a user's file)
DEFAULT = registry.Registered("", "", "")   # the form's defaults are `evalcore endpoint add`'s


def evaluate_form(con, dataset: str, track: str | None, allowed: bool) -> int | None:
    """The form; the job it queued and started (None: none)."""
    table = data(views.registered)
    names = table["name"].tolist()
    st.caption(_("Sends every item of the chosen tracks to a registered endpoint (an OpenAI-compatible server: vLLM, "
                 "Ollama, llama.cpp, ...), each with its grounding, stores the replies as one model's responses "
                 "(resumable, signed) and scores them. A worker process runs it; its progress is under Jobs below."))
    if not names:
        st.info(_("No endpoint is registered yet: add one under Endpoints below, or `evalcore endpoint add`.")
                if allowed else _("No endpoint is registered yet: add one under Endpoints below (write access "
                                  "needed), or `evalcore endpoint add`."))
        return None
    if not allowed:
        st.caption(_("Starting a run needs write access."))
        return None
    e1, e2 = st.columns(2)
    endpoint = e1.selectbox(_("Endpoint"), names, key="ev-endpoint")
    model = e2.text_input(_("Model name (its replies are stored under it)"), key="ev-model").strip()
    t1, t2, t3 = st.columns([2, 1, 1])
    choices = ([track] if track else []) + [EVERY_TRACK]
    where = t1.radio(_("Tracks"), choices, horizontal=True, key="ev-tracks",
                     format_func=lambda t: _(EVERY_TRACK) if t == EVERY_TRACK else t)   # a track's name is data
    sample = t2.number_input(_("Items (0: every item)"), min_value=0, value=0, step=50, key="ev-items")
    seed = t3.number_input(_("Sample seed"), min_value=0, value=0, key="ev-seed")
    own = next((r["template"] for r in table.to_dict("records") if r["name"] == endpoint), None)
    template = st.selectbox(_("Template"), [OWN_TEMPLATE] + [t.name for t in shipped()],
                            index=0, key="ev-template", format_func=lambda t: _(OWN_TEMPLATE) if t == OWN_TEMPLATE else t,
                            help=_("The shipped templates; the endpoint's own, if it names one, is used by default."))
    template = None if template == OWN_TEMPLATE else template
    tracks = None if where == EVERY_TRACK else [track]
    shown = tracks or data(catalog.tracks, dataset)["track"].tolist()
    with st.expander(_("What the model is sent: the template of each track")):
        st.caption(_("The grounding goes into the system message, the context turn by turn; the template's hash is "
                     "part of the generation signature."))
        for row in data(views.track_templates, dataset, tuple(shown), template or own).to_dict("records"):
            st.text(_("{track}: {template} (sha256 {sha256}…, {source})").format(
                track=row["track"], template=row["template"], sha256=row["sha256"],
                source=_(SHIPPED) if row["source"] == SHIPPED else row["source"]))   # else a file's path
            st.code(row["text"], language="toml")
    taken = data(views.model_taken, dataset, model) if model else None
    if taken:
        st.caption(md_escape(taken))
    elif model and model in data(catalog.models_ranked, dataset):
        st.caption(md_escape(_("{model} was generated here before: the same endpoint and settings resume it (only "
                               "items without a reply are sent); other settings need another name.").format(
                                   model=repr(model))))
    if not st.button(_("Generate and score"), type="primary", key="ev-go", disabled=not model or bool(taken)):
        return None
    try:
        job, items = evaluate.queue_generation(con, dataset=dataset, tracks=tracks, endpoint=endpoint, model=model,
                                               items=int(sample) or None, seed=int(seed) if sample else None,
                                               template=template)
    except (ValueError, WriteConflict) as exc:
        st.error(md_escape(str(exc)))
        return None
    uploads.start(job)
    st.info(md_escape(_("Job {job}: {items} items go to {endpoint}, then the replies are scored. It goes on if "
                        "you leave this page; its progress is below, under Jobs.").format(
                            job=job, items=i18n.number(items), endpoint=endpoint)))
    return job


def endpoints_panel(con, allowed: bool) -> None:
    """The registered endpoints, and (with write access) a form to add one and a control to remove one."""
    said = st.session_state.pop("ep-said", None)   # what the last add or remove did, said after the rerun
    if said:
        st.success(md_escape(said))
    table = views.shown(data(views.registered))
    if table.empty:
        st.caption(_("None registered."))
    else:
        grid(table, width="stretch", column_config={"base_url": st.column_config.TextColumn(N_("base URL")),
                                                     "key": st.column_config.TextColumn(
                                                         N_("key variable"), help=_("read by the server at each call; "
                                                         "the key itself is never stored or shown"))})
    if not allowed:
        st.caption(_("Adding or removing an endpoint needs write access."))
        return
    with st.form("ep-add", clear_on_submit=False):
        a1, a2, a3 = st.columns([1, 2, 2])
        name = a1.text_input(_("Name"), key="ep-name")
        url = a2.text_input(_("Base URL"), placeholder="http://127.0.0.1:8000/v1", key="ep-url")
        served = a3.text_input(_("Served model name"), placeholder="Qwen/Qwen2.5-7B-Instruct", key="ep-model")
        b1, b2, b3, b4 = st.columns(4)
        var = b1.text_input(_("Key variable"), value=DEFAULT.api_key_env, key="ep-key",
                            help=_("the NAME of the environment variable (or .streamlit/secrets.toml entry) the "
                                   "server reads the key from, never the key; leave it for a server without a key"))
        temperature = b2.number_input(_("Temperature"), 0.0, 2.0, DEFAULT.temperature, 0.1, key="ep-t")
        top_p = b3.number_input(_("Top-p"), 0.01, 1.0, DEFAULT.top_p, 0.05, key="ep-p")
        max_tokens = b4.number_input(_("Max tokens"), 1, 32768, DEFAULT.max_tokens, key="ep-max")
        c1, c2, c3, c4 = st.columns(4)
        seed = c1.number_input(_("Seed (blank: none)"), min_value=0, value=None, key="ep-seed")
        timeout = c2.number_input(_("Timeout (s)"), 1.0, 3600.0, DEFAULT.timeout, key="ep-timeout")
        concurrency = c3.number_input(_("Concurrency"), 1, 512, DEFAULT.concurrency, key="ep-c")
        template = c4.selectbox(_("Template"), [TRACK_TEMPLATE] + [t.name for t in shipped()], key="ep-template",
                                format_func=lambda t: _(TRACK_TEMPLATE) if t == TRACK_TEMPLATE else t)
        if st.form_submit_button(_("Add endpoint")):
            entry = registry.Registered(name.strip(), url.strip(), served.strip(), var.strip() or None,
                                        float(temperature), float(top_p), int(max_tokens),
                                        None if seed is None else int(seed), float(timeout), int(concurrency),
                                        None if template == TRACK_TEMPLATE else template)
            write(registry.add, con, entry, said=_("Endpoint {name} added: {model} at {url}.").format(
                name=entry.name, model=entry.model, url=entry.base_url))
    if not table.empty:
        r1, r2 = st.columns([2, 1])
        gone = r1.selectbox(_("Remove an endpoint"), table["name"].tolist(), key="ep-remove-pick")
        if r2.button(_("Remove"), key="ep-remove"):
            write(registry.remove, con, gone, said=_("Endpoint {name} removed (what it generated stays).").format(
                name=gone))


def write(change, *args, said: str) -> None:
    """One change to the registry; its refusal said here, its success said after the rerun that shows it."""
    try:
        retrying(change, *args)
    except (ValueError, WriteConflict) as exc:
        st.error(md_escape(str(exc)))
    else:
        st.session_state["ep-said"] = said
        st.rerun()
