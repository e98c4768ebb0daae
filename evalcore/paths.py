"""Where the dashboard's files are: the repository root in a clone (or an editable install), or the
copy an installed wheel carries in evalcore/dashboard/ (pyproject.toml puts app.py, pages/, data/ and
.streamlit/config.toml there)."""
from __future__ import annotations

import os
import subprocess
import sys
import tomllib
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent
SHIPPED = PACKAGE / "dashboard"


def app_root() -> Path:
    return SHIPPED if (SHIPPED / "app.py").is_file() else PACKAGE.parent


def data_dir() -> Path:
    """The embedded default data the store is built from on first run."""
    return app_root() / "data"


def streamlit_flags(root: Path) -> list[str]:
    """The project's .streamlit/config.toml as command-line options: Streamlit reads that file only from
    the working directory, and `evalcore app` runs from any directory."""
    path = root / ".streamlit" / "config.toml"
    if not path.is_file():
        return []
    with open(path, "rb") as f:
        config = tomllib.load(f)
    flags = []
    for section, options in config.items():
        for key, value in options.items():
            text = str(value).lower() if isinstance(value, bool) else str(value)
            flags.append(f"--{section}.{key}={text}")
    return flags


LOCAL = "127.0.0.1"  # `evalcore app` listens here unless --address says otherwise


def run_app(db: str | None, port: int | None, address: str | None, extra: list[str] | None = None) -> int:
    """`evalcore app`: the dashboard on `db`, served by Streamlit (app.py's own `python app.py` path,
    which keeps Streamlit out of evalcore) on `address`, 127.0.0.1 unless another is given.

    On POSIX this process becomes the server (os.execve): a SIGTERM or SIGINT sent to `evalcore app`
    reaches Streamlit itself, which stops serving and exits; no child is left holding the port.
    Elsewhere the server runs as a child that is sent the signal this process gets, and waited for."""
    from evalcore.store import resolve_db_path

    root = app_root()
    env = dict(os.environ)
    if db:
        env["EVALCORE_DB"] = str(resolve_db_path(db))
    args = [sys.executable, str(root / "app.py"), *streamlit_flags(root)]
    if port:
        args.append(f"--server.port={port}")
    args.append(f"--server.address={address or LOCAL}")
    args += extra or []
    if os.name == "posix":
        sys.stdout.flush()
        sys.stderr.flush()
        os.execve(sys.executable, args, env)  # does not return
    return _child(args, env)


def _child(args: list[str], env: dict) -> int:
    """The server as a child process that gets every SIGTERM/SIGINT this one gets; its exit status."""
    import signal

    proc = subprocess.Popen(args, env=env)

    def forward(signum, _frame) -> None:
        if proc.poll() is None:
            proc.send_signal(signum)

    old = {s: signal.signal(s, forward) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        while True:
            try:
                return proc.wait()
            except KeyboardInterrupt:  # forwarded already; wait for the server to stop
                continue
    finally:
        for s, handler in old.items():
            signal.signal(s, handler)
