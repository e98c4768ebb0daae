"""The Upload page's endpoint parts: "Evaluate an endpoint" (a generation and its scoring queued as one job, run by
a worker process) and the registered endpoints (listed for everyone; added and removed with write access). No key
is ever asked for or shown: only the name of the variable the server reads it from."""
from __future__ import annotations

import streamlit as st

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

EVERY_TRACK = "every track of the dataset"
DEFAULT = registry.Registered("", "", "")   # the form's defaults are `evalcore endpoint add`'s


def evaluate_form(con, dataset: str, track: str | None, allowed: bool) -> int | None:
    """The form; the job it queued and started (None: none)."""
    table = data(views.registered)
    names = table["name"].tolist()
    st.caption("Sends every item of the chosen tracks to a registered endpoint (an OpenAI-compatible server: vLLM, "
               "Ollama, llama.cpp, ...), each with its grounding, stores the replies as one model's responses "
               "(resumable, signed) and scores them. A worker process runs it; its progress is under Jobs below.")
    if not names:
        st.info("No endpoint is registered yet: add one under Endpoints below"
                + ("" if allowed else " (write access needed)") + ", or `evalcore endpoint add`.")
        return None
    if not allowed:
        st.caption("Starting a run needs write access.")
        return None
    e1, e2 = st.columns(2)
    endpoint = e1.selectbox("Endpoint", names, key="ev-endpoint")
    model = e2.text_input("Model name (its replies are stored under it)", key="ev-model").strip()
    t1, t2, t3 = st.columns([2, 1, 1])
    choices = ([track] if track else []) + [EVERY_TRACK]
    where = t1.radio("Tracks", choices, horizontal=True, key="ev-tracks")
    sample = t2.number_input("Items (0: every item)", min_value=0, value=0, step=50, key="ev-items")
    seed = t3.number_input("Sample seed", min_value=0, value=0, key="ev-seed")
    own = next((r["template"] for r in table.to_dict("records") if r["name"] == endpoint), None)
    template = st.selectbox("Template", ["each track's skill and language"] + [t.name for t in shipped()],
                            index=0, key="ev-template",
                            help="The shipped templates; the endpoint's own, if it names one, is used by default.")
    template = None if template.startswith("each track") else template
    tracks = None if where == EVERY_TRACK else [track]
    shown = tracks or data(catalog.tracks, dataset)["track"].tolist()
    with st.expander("What the model is sent: the template of each track"):
        st.caption("The grounding goes into the system message, the context turn by turn; the template's hash is "
                   "part of the generation signature.")
        for row in data(views.track_templates, dataset, tuple(shown), template or own).to_dict("records"):
            st.text(f"{row['track']}: {row['template']} (sha256 {row['sha256']}…, {row['source']})")
            st.code(row["text"], language="toml")
    taken = data(views.model_taken, dataset, model) if model else None
    if taken:
        st.caption(md_escape(taken))
    elif model and model in data(catalog.models_ranked, dataset):
        st.caption(md_escape(f"{model!r} was generated here before: the same endpoint and settings resume it (only "
                             "items without a reply are sent); other settings need another name."))
    if not st.button("Generate and score", type="primary", key="ev-go", disabled=not model or bool(taken)):
        return None
    try:
        job, items = evaluate.queue_generation(con, dataset=dataset, tracks=tracks, endpoint=endpoint, model=model,
                                               items=int(sample) or None, seed=int(seed) if sample else None,
                                               template=template)
    except (ValueError, WriteConflict) as exc:
        st.error(md_escape(str(exc)))
        return None
    uploads.start(job)
    st.info(md_escape(f"Job {job}: {items:,} items go to {endpoint}, then the replies are scored. It goes on if "
                      "you leave this page; its progress is below, under Jobs."))
    return job


def endpoints_panel(con, allowed: bool) -> None:
    """The registered endpoints, and (with write access) a form to add one and a control to remove one."""
    said = st.session_state.pop("ep-said", None)   # what the last add or remove did, said after the rerun
    if said:
        st.success(md_escape(said))
    table = views.shown(data(views.registered))
    if table.empty:
        st.caption("None registered.")
    else:
        grid(table, width="stretch", column_config={"base_url": st.column_config.TextColumn("base URL"),
                                                     "key": st.column_config.TextColumn(
                                                         "key variable", help="read by the server at each call; "
                                                         "the key itself is never stored or shown")})
    if not allowed:
        st.caption("Adding or removing an endpoint needs write access.")
        return
    with st.form("ep-add", clear_on_submit=False):
        a1, a2, a3 = st.columns([1, 2, 2])
        name = a1.text_input("Name", key="ep-name")
        url = a2.text_input("Base URL", placeholder="http://127.0.0.1:8000/v1", key="ep-url")
        served = a3.text_input("Served model name", placeholder="Qwen/Qwen2.5-7B-Instruct", key="ep-model")
        b1, b2, b3, b4 = st.columns(4)
        var = b1.text_input("Key variable", value=DEFAULT.api_key_env, key="ep-key",
                            help="the NAME of the environment variable (or .streamlit/secrets.toml entry) the server "
                                 "reads the key from, never the key; leave it for a server without a key")
        temperature = b2.number_input("Temperature", 0.0, 2.0, DEFAULT.temperature, 0.1, key="ep-t")
        top_p = b3.number_input("Top-p", 0.01, 1.0, DEFAULT.top_p, 0.05, key="ep-p")
        max_tokens = b4.number_input("Max tokens", 1, 32768, DEFAULT.max_tokens, key="ep-max")
        c1, c2, c3, c4 = st.columns(4)
        seed = c1.number_input("Seed (blank: none)", min_value=0, value=None, key="ep-seed")
        timeout = c2.number_input("Timeout (s)", 1.0, 3600.0, DEFAULT.timeout, key="ep-timeout")
        concurrency = c3.number_input("Concurrency", 1, 512, DEFAULT.concurrency, key="ep-c")
        template = c4.selectbox("Template", ["each track's own"] + [t.name for t in shipped()], key="ep-template")
        if st.form_submit_button("Add endpoint"):
            entry = registry.Registered(name.strip(), url.strip(), served.strip(), var.strip() or None,
                                        float(temperature), float(top_p), int(max_tokens),
                                        None if seed is None else int(seed), float(timeout), int(concurrency),
                                        None if template.startswith("each track") else template)
            write(registry.add, con, entry, said=f"Endpoint {entry.name} added: {entry.model} at {entry.base_url}.")
    if not table.empty:
        r1, r2 = st.columns([2, 1])
        gone = r1.selectbox("Remove an endpoint", table["name"].tolist(), key="ep-remove-pick")
        if r2.button("Remove", key="ep-remove"):
            write(registry.remove, con, gone, said=f"Endpoint {gone} removed (what it generated stays).")


def write(change, *args, said: str) -> None:
    """One change to the registry; its refusal said here, its success said after the rerun that shows it."""
    try:
        retrying(change, *args)
    except (ValueError, WriteConflict) as exc:
        st.error(md_escape(str(exc)))
    else:
        st.session_state["ep-said"] = said
        st.rerun()
