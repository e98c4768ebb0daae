"""A browser tab without the browser: one session on a running page server, speaking Streamlit's own websocket
protocol (as bench/protocol.py does for page loads), that also uses the page's widgets.

It opens a page with a query string, keeps every widget's state the way Streamlit's frontend does (sent with
each rerun; a button's trigger once), and sets a widget or clicks a button found by its key or label, which
reruns the script, or only the widget's fragment when it lives in one (as a browser's click does). What the
last run drew is kept as plain values: texts, captions, alerts (st.error/warning/info/success), widgets.
"""
from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field

from streamlit.proto.BackMsg_pb2 import BackMsg
from streamlit.proto.ForwardMsg_pb2 import ForwardMsg
from streamlit.proto.WidgetStates_pb2 import WidgetState
from websockets.asyncio.client import connect

FINISHED = {0, 3}       # FINISHED_SUCCESSFULLY, FINISHED_FRAGMENT_RUN_SUCCESSFULLY
ALERTS = {1: "error", 2: "warning", 3: "info", 4: "success"}


@dataclass
class Widget:
    id: str
    kind: str           # the element's type: button, button_group, text_input, text_area ...
    label: str
    fragment: str       # the fragment it was drawn in ('' for the page itself)
    options: list[str] = field(default_factory=list)
    disabled: bool = False


class Session:
    """One tab on `base`'s page `page` (e.g. 'annotate') with `query` (e.g. 'task=2'); `headers` and `local_addr`
    (a source address such as ('127.0.0.2', 0)) act as another client, or one that claims another address."""

    def __init__(self, base: str, page: str, query: str, timeout: float = 120.0, headers: dict | None = None,
                 local_addr: tuple | None = None):
        self.base, self.page, self.query, self.timeout = base, page, query, timeout
        self.headers, self.local_addr = headers or {}, local_addr
        self.conn = None
        self.states: dict[str, object] = {}     # widget id -> WidgetState, as the frontend keeps them
        self.widgets: dict[str, Widget] = {}    # the widgets on the page now, by id
        self.drawn: list[tuple[str, str]] = []  # the last run's (kind, text): text, caption, error, warning, ...
        self.exceptions: list[str] = []

    async def open(self) -> "Session":
        self.conn = await connect(self.base.replace("http", "ws") + "/_stcore/stream", subprotocols=["streamlit"],
                                  max_size=None, open_timeout=self.timeout, additional_headers=self.headers,
                                  **({"local_addr": self.local_addr} if self.local_addr else {}))
        await self.run()
        return self

    async def close(self) -> None:
        if self.conn is not None:
            await self.conn.close()

    # ---------------------------------------------------------------- reading what the page drew
    def texts(self, kind: str | None = None) -> list[str]:
        """The last run's texts of one kind ('text', 'caption', 'markdown', 'error', 'warning', 'info',
        'success'), or of every kind, markdown escapes removed."""
        return [t.replace("\\", "") for k, t in self.drawn if kind is None or k == kind]

    def said(self, words: str) -> bool:
        return any(words in t for t in self.texts())

    def widget(self, key: str | None = None, label: str | None = None) -> Widget:
        """The widget with this key (its id ends with '-KEY') or label, the last drawn one when several."""
        found = [w for w in self.widgets.values()
                 if (key is not None and w.id.endswith(f"-{key}")) or (label is not None and w.label == label)]
        if not found:
            raise KeyError(key or label)
        return found[-1]

    # ---------------------------------------------------------------- using the widgets
    async def fill(self, label: str, value: str) -> None:
        """Type into a text input (in a form: kept until the form is submitted, as the frontend does)."""
        w = self.widget(label=label)
        self.states[w.id] = WidgetState(id=w.id, string_value=value)

    async def click(self, key: str | None = None, label: str | None = None) -> None:
        w = self.widget(key, label)
        self.states[w.id] = WidgetState(id=w.id, trigger_value=True)
        await self.run(w.fragment)
        self.states.pop(w.id, None)   # a trigger is sent once

    async def choose(self, key: str, option: str) -> None:
        """Pick an option of a segmented control (its shown text, e.g. '2')."""
        w = self.widget(key)
        state = WidgetState(id=w.id)
        state.string_array_value.data.append(option)
        self.states[w.id] = state
        await self.run(w.fragment)

    async def send_chat(self, key: str, text: str) -> None:
        """Submit `text` in the chat input with this key: its value is a trigger carrying the text (Streamlit's
        ChatInputValue), sent with this rerun only, as the frontend sends a message once."""
        w = self.widget(key)
        state = WidgetState(id=w.id)
        state.chat_input_value.data = text
        self.states[w.id] = state
        await self.run(w.fragment)
        self.states.pop(w.id, None)

    async def run(self, fragment: str = "") -> None:
        """One rerun (of the page, or of one fragment) until its script finishes (a st.rerun inside it is
        followed to the run it starts)."""
        msg = BackMsg()
        msg.rerun_script.query_string = self.query
        msg.rerun_script.page_name = self.page
        msg.rerun_script.fragment_id = fragment
        msg.rerun_script.widget_states.widgets.extend(self.states.values())
        await self.conn.send(msg.SerializeToString())
        deadline = time.monotonic() + self.timeout
        drawn: list[tuple[str, str]] = []
        seen: dict[str, Widget] = {}
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError(f"{self.page}: no script_finished in {self.timeout:g} s")
            raw = await asyncio.wait_for(self.conn.recv(), left)
            if isinstance(raw, str):
                continue
            fwd = ForwardMsg()
            fwd.ParseFromString(raw)
            kind = fwd.WhichOneof("type")
            if kind == "new_session":
                drawn, seen = [], {}
            elif kind == "delta" and fwd.delta.WhichOneof("type") == "new_element":
                self._read(fwd.delta.new_element, fwd.delta.fragment_id, drawn, seen)
            elif kind == "script_finished":
                if fwd.script_finished in FINISHED:
                    # what is on the page now: a fragment's run redraws that fragment only
                    kept = {i: w for i, w in self.widgets.items() if fwd.script_finished == 3 and w.fragment != fragment}
                    self.widgets = {**kept, **seen}
                    self.states = {i: v for i, v in self.states.items() if i in self.widgets}
                    self.drawn = drawn
                    return
                drawn, seen = [], {}   # finished early for a rerun: the next run draws anew

    def _read(self, el, fragment: str, drawn: list, seen: dict) -> None:
        kind = el.WhichOneof("type")
        if kind == "text":
            drawn.append(("text", el.text.body))
        elif kind == "markdown":
            drawn.append(("caption" if el.markdown.element_type == 2 else "markdown", el.markdown.body))
        elif kind == "alert":
            drawn.append((ALERTS.get(el.alert.format, "alert"), el.alert.body))
        elif kind == "progress":
            drawn.append(("progress", el.progress.text))
        elif kind == "exception":
            self.exceptions.append(el.exception.message)
            drawn.append(("exception", el.exception.message))
        elif kind in ("button", "button_group", "text_input", "text_area", "selectbox", "link_button", "chat_input"):
            proto = getattr(el, kind)
            if getattr(proto, "id", ""):
                options = [o.content for o in proto.options] if kind == "button_group" else []
                seen[proto.id] = Widget(proto.id, kind, getattr(proto, "label", ""), fragment, options,
                                        getattr(proto, "disabled", False))
