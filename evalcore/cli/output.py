"""What the commands print: frames as a table, JSON or CSV, waits for the store, and stored text made safe
for a terminal."""
from __future__ import annotations

import json
import sys

import pandas as pd

from evalcore.core.text import CONTROL


def emit(frame: pd.DataFrame, fmt: str, digits: int | None = None) -> None:
    """Print a frame as a table, JSON records or CSV; `digits` rounds the table only (files keep
    full precision). This output is for programs: cells are written as stored, a name that begins with `=`
    included (no quote added: a program reading it gets the model's real name). Files for people, which a
    spreadsheet program opens (the dashboard's downloads, `evalcore template`), are neutralised by
    evalcore.core.export instead."""
    if fmt == "table" and digits is not None:
        frame = frame.round(digits)
    if fmt == "json":
        print(json.dumps(json.loads(frame.to_json(orient="records", date_format="iso")), ensure_ascii=False, indent=2))
    elif fmt == "csv":
        sys.stdout.write(frame.to_csv(index=False))
    else:
        print(frame.to_string(index=False) if not frame.empty else "(nothing)")


def on_wait(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def escaped(value):
    """A text with its control characters written as escapes (ESC as \\x1b); anything else as it is."""
    return CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}", value) if isinstance(value, str) else value


def visible(frame: pd.DataFrame) -> pd.DataFrame:
    """Text cells with their control characters written as escapes: what an older store may hold goes to a
    terminal as text, never as a command to it."""
    return frame.map(escaped) if len(frame) else frame
