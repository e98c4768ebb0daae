"""The floor under each dashboard page: the same navigation and the same elements, drawn from a recording, with none
of the dashboard's own work (no evalcore import, no store, no computation) at run time.

    python bench/floor_app.py --record FILE --db STORE [--pages overview,leaderboard,...]
    FLOOR_FILE=FILE streamlit run bench/floor_app.py

--record runs each page once through Streamlit's AppTest on STORE (the script the server runs, in this process) and
keeps the messages it sent into the main area: every element and block, with its data (a grid's Arrow table and
styles, a chart's spec, a widget's options), in order. Served, each page of this app sends those same messages back
(ScriptRunContext.enqueue), so the browser receives and draws what it draws for the real page, and the server only
sends them. bench/browser.py --floor times it beside the dashboard and the bare app:
  page / floor  what the dashboard's own work costs (reading the store, computing, building the elements)
  floor / bare  what drawing the page's elements costs in Streamlit and the browser, whoever computes them
"""
from __future__ import annotations

import argparse
import os
import pickle
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))


def record(out: Path, db: str, names: list[str] | None) -> None:
    """{url path: [ForwardMsg bytes of the main area, in order]} of each page's first run, pickled to `out`."""
    os.environ["EVALCORE_DB"] = db
    from streamlit.testing.v1 import AppTest, local_script_runner

    from pages import PAGES

    kept: list = []
    parse = local_script_runner.parse_tree_from_messages

    def keep(messages):   # the messages AppTest builds its element tree from
        kept[:] = messages
        return parse(messages)

    local_script_runner.parse_tree_from_messages = keep
    floors = {}
    for p in PAGES:
        name = p.url_path or "overview"
        if names and name not in names:
            continue
        at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=300)
        if p.url_path:
            at.switch_page(p.script)
        at.run()
        # the page's deltas in the main area (path 0); set_page_config, navigation and session messages are the app's own
        floors[p.url_path] = [m.SerializeToString() for m in kept
                              if m.WhichOneof("type") == "delta" and list(m.metadata.delta_path)[:1] == [0]]
        print(f"recorded {name}: {len(floors[p.url_path])} messages", flush=True)
    out.write_bytes(pickle.dumps(floors))


def serve() -> None:
    import streamlit as st
    from streamlit.proto.ForwardMsg_pb2 import ForwardMsg
    from streamlit.runtime.scriptrunner_utils.script_run_context import get_script_run_ctx

    from pages import PAGES

    floors = pickle.loads(Path(os.environ["FLOOR_FILE"]).read_bytes())

    def drawer(messages: list[bytes]):
        def draw():
            ctx = get_script_run_ctx()
            for raw in messages:
                msg = ForwardMsg()
                msg.ParseFromString(raw)
                msg.delta.ClearField("fragment_id")
                ctx.enqueue(msg)
        return draw

    st.set_page_config(page_title="Floor", layout="wide")
    pages = [st.Page(drawer(floors.get(p.url_path, [])), title=p.title, icon=p.icon, url_path=p.url_path or "overview",
                     default=p.url_path == "") for p in PAGES]
    st.navigation(pages, position="top").run()


if __name__ == "__main__" and "--record" in sys.argv:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--record", type=Path, required=True)
    ap.add_argument("--db", required=True)
    ap.add_argument("--pages")
    a = ap.parse_args()
    record(a.record, a.db, a.pages.split(",") if a.pages else None)
else:
    serve()
