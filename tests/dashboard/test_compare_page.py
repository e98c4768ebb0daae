"""The Compare page: each listed item links to its drill-down, its context beside the two responses,
numbers with sensible digits, and model names and responses shown as text (never markup)."""
from __future__ import annotations

import json
from urllib.parse import parse_qs, urlsplit

import numpy as np
import pandas as pd
import pytest
from streamlit.testing.v1 import AppTest

from evalcore.pagedata import formatting, responses
from support import write_jsonl

NASTY = "**bold** <b>x</b> $x$"  # markdown, HTML and LaTeX: must show as these very characters
ODD_ITEM = "t3 & a=b?#"  # an item id that needs URL encoding
ITEMS = [
    {"item_id": "t1", "dataset": "toy", "track": "toy/chitchat", "dialogue_id": "d1",
     "context": ["第一轮", "第二轮", "第三轮 最后"], "references": ["今天 天气 不错"]},
    {"item_id": "t2", "dataset": "toy", "track": "toy/chitchat", "dialogue_id": "d2",
     "context": ["你好"], "references": ["你好 呀"]},
    {"item_id": ODD_ITEM, "dataset": "toy", "track": "toy/chitchat", "dialogue_id": "d3",
     "context": ["看过 电影 吗"], "references": ["看过"]},
]


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    """Three items answered by a plain model and by one named (and answering) in markdown/HTML/LaTeX, scored."""
    from evalcore.ingest.formats.items import import_items
    from evalcore.ingest.formats.responses import import_responses
    from evalcore.scoring import score
    from evalcore.store import connect

    folder = tmp_path_factory.mktemp("compare")
    con = connect(folder / "store.duckdb")
    import_items(con, write_jsonl(folder / "items.jsonl", ITEMS))
    pd.DataFrame({"item_id": ["t1", "t2", ODD_ITEM], "model": "plain",
                  "response": ["今天 天气 不错", "你好 呀", "看过"]}).to_csv(folder / "plain.csv", index=False)
    pd.DataFrame({"item_id": ["t1", "t2", ODD_ITEM], "model": NASTY,
                  "response": ["嗯", f"你好 {NASTY}", "没 看过"]}).to_csv(folder / "nasty.csv", index=False)
    for name in ("plain.csv", "nasty.csv"):
        import_responses(con, folder / name, dataset="toy", track="toy/chitchat")
    score(con, dataset="toy", metrics="F1,DIST1,BLEU4", progress=False)
    con.close()
    return folder / "store.duckdb"


def run(page: str, monkeypatch, db, **query) -> AppTest:
    from support.apptest import run as run_page

    return run_page(page, monkeypatch, {"EVALCORE_DB": db}, **query)


def config(frame_element) -> dict:
    return json.loads(frame_element.proto.columns or "{}")


def test_items_have_context_and_a_drilldown_link(monkeypatch, store):
    at = run("compare", monkeypatch, store, dataset="toy", track="toy/chitchat", a="plain", b=NASTY,
             sort=f"F1 ({NASTY} - plain)")
    assert not at.warning
    deltas, items = at.dataframe[0], at.dataframe[-1]
    table = items.value
    # the item, its link, its context beside the two responses, then the delta the rows are sorted by
    assert list(table.columns[:6]) == ["item_id", "drill-down", "context", "plain", NASTY, f"F1 ({NASTY} - plain)"]
    assert set(table["item_id"]) == {"t1", "t2", ODD_ITEM}
    row = table.set_index("item_id")
    assert row.loc["t1", "context"] == "… / 第二轮 / 第三轮 最后"  # the last two turns
    assert row.loc["t2", "context"] == "你好"
    link = config(items)["drill-down"]
    assert link["type_config"] == {"type": "link", "display_text": "open"}
    for item, url in row["drill-down"].items():
        parts = urlsplit(url)
        assert parts.path == "drilldown" and not parts.netloc  # relative: works behind any host or base path
        assert parse_qs(parts.query) == {"dataset": ["toy"], "track": ["toy/chitchat"], "flavor": ["default"],
                                         "item": [item]}
    assert "item=t3+%26+a%3Db%3F%23" in row.loc[ODD_ITEM, "drill-down"]
    # numbers: a format from the magnitude, and no floating-point residue
    formats = {k: v["type_config"].get("format") for k, v in config(deltas).items() if "type_config" in v}
    assert formats["delta"] == formats["ci_low"] == "%.4f" and formats["n"] == "%d"
    assert formats[f"mean {NASTY}"] == "%.4f"
    values = table.select_dtypes("number").to_numpy().ravel()
    values = values[~np.isnan(values)]
    assert not ((values != 0) & (np.abs(values) < 1e-4)).any()  # rounded as shown: residue is 0, not 6e-17
    assert not np.signbit(values[values == 0]).any()  # and never -0.0000


def test_the_link_opens_the_drilldown_on_that_item(monkeypatch, store):
    at = run("compare", monkeypatch, store, dataset="toy", track="toy/chitchat", a="plain", b=NASTY)
    url = at.dataframe[-1].value.set_index("item_id").loc[ODD_ITEM, "drill-down"]
    query = {k: v[-1] for k, v in parse_qs(urlsplit(url).query).items()}
    dd = run(urlsplit(url).path, monkeypatch, store, **query)
    assert any(s.value.replace("\\", "") == f"Item {ODD_ITEM}" for s in dd.subheader)  # escaped markdown
    assert dd.query_params["item"] == ODD_ITEM and not dd.info  # no notice: every parameter was understood
    assert any(t.value == "看过 电影 吗" for t in dd.text)  # its context


def test_markup_in_names_and_responses_is_shown_literally(monkeypatch, store):
    at = run("compare", monkeypatch, store, dataset="toy", track="toy/chitchat", a="plain", b=NASTY)
    table = at.dataframe[-1].value.set_index("item_id")
    assert table.loc["t2", NASTY] == f"你好 {NASTY}"  # the grid draws cell text as text
    assert NASTY in at.dataframe[-1].value.columns and f"mean {NASTY}" in at.dataframe[0].value.columns
    caption = next(c.value for c in at.caption if "items both answered" in c.value)
    assert r"\*\*bold\*\* \<b\>x\<\/b\> \$x\$".replace(r"\/", "/") in caption
    # nowhere does the raw text reach markdown (captions, markdown, notices, subheaders, widget labels)
    texts = [e.value for kind in ("markdown", "caption", "info", "subheader", "warning") for e in at.get(kind)]
    texts += [w.label for w in at.selectbox]
    assert not [t for t in texts if "**bold**" in t or "<b>" in t or "$x$" in t]


def test_sensible_format():
    assert formatting.sensible_format([0.5, -0.01, np.nan]) == "%.4f"
    assert formatting.sensible_format(pd.Series([-3.5, 0.2])) == "%.2f"
    assert formatting.sensible_format([1.0, -1.0, 0.01]) == "%.4f"  # a bounded score's whole range keeps 4 decimals
    assert formatting.sensible_format([100.0, 2.5]) == "%.2f"
    assert formatting.sensible_format(pd.DataFrame({"a": [150.0], "b": [0.1]})) == "%.1f"
    assert formatting.sensible_format([np.inf, 0.3]) == "%.4f"  # infinities do not count
    assert formatting.sensible_format([]) == formatting.sensible_format([np.nan]) == "%.4f"


def test_clean_noise_and_rounding_show_zero_as_zero():
    frame = pd.DataFrame({"x": [5.8e-17, -6.3e-17, -3e-9, 0.123456, np.nan], "n": [1, 2, 3, 4, 5], "s": list("abcde")})
    clean = formatting.clean_noise(frame)
    assert clean["x"].tolist()[:4] == [0.0, 0.0, -3e-9, 0.123456] and clean["n"].dtype == frame["n"].dtype
    assert frame["x"][0] == 5.8e-17  # the input is left as it was
    shown = formatting.round_to_format(clean, {"x": formatting.sensible_format(clean["x"]), "s": "%.1f"})
    assert shown["x"].tolist()[:4] == [0.0, 0.0, 0.0, 0.1235] and not np.signbit(shown["x"][2])  # not -0.0000
    assert shown["s"].tolist() == list("abcde")


def test_context_snippet_and_link():
    assert responses.context_snippet(["a", "b\n c", "d"]) == "… / b c / d"
    assert responses.context_snippet([]) == "" and responses.context_snippet(["只有一轮"]) == "只有一轮"
    long = responses.context_snippet(["x" * 200], width=80)
    assert len(long) == 80 and long.endswith("…")
    assert responses.drilldown_link("d s", "a/b", "i&j=k", "default") == \
        "drilldown?dataset=d+s&track=a%2Fb&flavor=default&item=i%26j%3Dk"
