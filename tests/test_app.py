"""The dashboard renders on the embedded default (built on first run)."""
from streamlit.testing.v1 import AppTest

from conftest import ROOT


def test_overview_on_default_store(tmp_path, monkeypatch):
    monkeypatch.setenv("EVALCORE_DB", str(tmp_path / "app.duckdb"))
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120).run()
    assert not at.exception
    assert at.title[0].value == "Multi-skill dialogue evaluation"
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["Datasets"] == "2" and metrics["Tracks"] == "8"
    assert len(at.dataframe) == 3
