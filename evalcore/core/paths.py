"""Where the dashboard's files are: the repository root in a clone (or an editable install), or the
copy an installed wheel carries in evalcore/dashboard/ (pyproject.toml puts app.py, pages/, data/ and
.streamlit/config.toml there)."""
from __future__ import annotations

import tomllib
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1]  # evalcore/, this file being evalcore/core/paths.py
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
