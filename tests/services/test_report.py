"""`evalcore report`: one HTML file that opens offline. Its leaderboard holds the numbers `evalcore leaderboard
--format csv` prints, its checksum is the sha256 of the data text it shows, it references nothing on a network,
and every name from the store (model, track, annotator) is text, never markup. A report of an evaluation record
holds the tables of the report of the store it was exported from and names the record's content_sha256; a file
that is not a record, or whose tables changed since export, is refused naming it. The slow test opens it in
headless Chromium from a file:// URL with the network cut (a record's report too) and keeps screenshots in
docs/img/screens/."""
from __future__ import annotations

import hashlib
import html
import io
import json
import random
import re
import zipfile
from datetime import datetime, timezone
from pathlib import Path

import pandas as pd
import pytest

from evalcore.cli import main
from evalcore.cli.declarations_report import VIEWS as DECLARED_VIEWS
from evalcore.ingest.formats.items import import_items
from evalcore.ingest.formats.ratings import import_ratings
from evalcore.ingest.formats.responses import import_responses
from evalcore.scoring import score
from evalcore.services.report import VIEWS, build
from evalcore.store import connect
from support import ROOT, copy_default_store, write_jsonl

SCRIPT = "<script>alert(1)</script>"
IMG = "<img src=x onerror=alert(1)>"
CHROMIUM = "/usr/bin/chromium"
SCREENS = ROOT / "docs" / "img" / "screens"


def run(capsys, *argv) -> str:
    assert main(list(argv)) in (0, None)
    return capsys.readouterr().out


def data_sections(text: str) -> dict[str, list[str]]:
    """The report's data text (the <pre> under "Data behind the checksum"), unescaped, as name -> lines."""
    pre = html.unescape(re.search(r"<pre>(.*?)</pre>", text, re.S).group(1))
    sections = {}
    for block in pre.split("# ")[1:]:
        name, *lines = block.rstrip("\n").split("\n")
        sections[name] = lines
    return sections, pre


@pytest.fixture(scope="module")
def demo(default_store_file, tmp_path_factory):
    return copy_default_store(default_store_file, tmp_path_factory.mktemp("report") / "store.duckdb")


def test_the_leaderboard_is_the_cli_s_numbers_and_the_checksum_is_the_data_text(demo, tmp_path, capsys):
    out = tmp_path / "report.html"
    track = "lccc/chitchat"
    run(capsys, "report", "--db", str(demo), "--dataset", "demo-zh", "--tracks", track, "--view", "leaderboard",
        "--out", str(out))
    text = out.read_text(encoding="utf-8")
    cli = run(capsys, "leaderboard", "--db", str(demo), "--dataset", "demo-zh", "--track", track, "--format", "csv")
    sections, pre = data_sections(text)
    lines = cli.rstrip("\n").split("\n")
    # the same header and the same rows, to the 12 significant digits the data text keeps (rows sorted as text)
    assert sections["leaderboard"][0] == lines[0]
    shown = pd.read_csv(pd.io.common.StringIO("\n".join(sections["leaderboard"]))).sort_values("model")
    given = pd.read_csv(pd.io.common.StringIO(cli)).sort_values("model")
    pd.testing.assert_frame_equal(shown.reset_index(drop=True), given.reset_index(drop=True), rtol=1e-11,
                                  check_dtype=False)
    assert len(lines) == 3   # two models on the track
    # the table a person reads shows each number as the CLI's table rounds it (4 decimals)
    board = pd.read_csv(pd.io.common.StringIO(cli))
    for value in board["F1"]:
        assert f'<td class="num">{round(value, 4):g}</td>' in text
    for model in board["model"]:
        assert f"<td>{model}</td>" in text
    # each computed column's signature is in the report, as `leaderboard --signatures` gives it
    sigs = run(capsys, "leaderboard", "--db", str(demo), "--dataset", "demo-zh", "--track", track, "--signatures",
               "--format", "csv")
    signature = next(s for s in sigs.split("\n") if s.startswith(f"{track},F1,"))
    assert signature in sections["leaderboard signatures"]
    # the checksum shown is the sha256 of the data text shown
    assert hashlib.sha256(pre.encode("utf-8")).hexdigest() in text
    assert "data checksum" in text and "the checksum covers" in text


def test_a_report_references_nothing_on_a_network(demo, tmp_path, capsys):
    out = tmp_path / "report.html"
    run(capsys, "report", "--db", str(demo), "--dataset", "engagement-en", "--out", str(out))
    text = out.read_text(encoding="utf-8")
    tags = re.findall(r"<(?:script|link|img|iframe)\b[^>]*>", text, re.I)
    assert not [t for t in tags if re.search(r"\b(?:src|href)\s*=", t, re.I)], tags
    # no attribute of the page's own markup points off the page (the table of contents' anchors are #...);
    # plotly.js's source, inlined, holds URLs as strings it never loads
    markup = re.sub(r"<script\b[^>]*>.*?</script>", "", text, flags=re.S | re.I)
    links = re.findall(r'\b(?:src|href)\s*=\s*"([^"]*)"', markup)
    assert links and all(link.startswith("#") for link in links)
    # plotly.js is in the file, once
    assert text.count("Plotly.newPlot") >= 1 and len(re.findall(r"plotly\.js v\d", text)) == 1
    # every view is there, with the agreement rows' definitions
    for title in ("Which metric to trust", "Leaderboard", "Metric-human correlations", "Human ratings"):
        assert f">{title}</h2>" in text
    sections, _ = data_sections(text)
    assert sections["agreement"][0].endswith(",definition")
    assert all(line.rsplit(",", 1)[1] for line in sections["agreement"][1:4])


def test_the_checksum_is_of_the_data_not_of_when_it_was_made(demo):
    con = connect(demo, read_only=True)
    try:
        early = build(con, "engagement-en", views=("leaderboard", "human"), now=datetime(2026, 1, 1, tzinfo=timezone.utc))
        late = build(con, "engagement-en", views=("human", "leaderboard"), now=datetime(2026, 6, 1, tzinfo=timezone.utc))
    finally:
        con.close()
    assert "2026-01-01 00:00:00" in early and "2026-06-01 00:00:00" in late
    sums = [re.search(r"<th>data checksum</th><td>([0-9a-f]{64})</td>", t).group(1) for t in (early, late)]
    assert sums[0] == sums[1]   # the same tables, in whatever order the views were asked for


def test_the_declared_views_are_the_reports():
    assert DECLARED_VIEWS == VIEWS


def test_an_unknown_track_is_an_error_naming_it(demo, tmp_path, capsys):
    assert main(["report", "--db", str(demo), "--dataset", "demo-zh", "--tracks", "nope", "--out",
                 str(tmp_path / "r.html")]) == 2
    assert "unknown track 'nope' in dataset 'demo-zh'; known, closest first:" in capsys.readouterr().err
    assert not (tmp_path / "r.html").exists()


def hostile_store(folder: Path) -> Path:
    """Two tracks (one named with a script tag), four models (two named as tags), three annotators (two named
    as tags) rating one dimension; lexically scored."""
    rng = random.Random(0)
    db = folder / "store.duckdb"
    con = connect(db)
    try:
        tracks = {"h/chitchat": "chitchat", f"{SCRIPT}/chitchat": "chitchat"}
        items = [{"item_id": f"i{t}{i}", "dataset": "h", "track": track, "dialogue_id": f"d{t}{i}",
                  "context": [f"turn {i}", "ok"], "references": [f"reference {i} {IMG}"], "skill": skill}
                 for t, (track, skill) in enumerate(tracks.items()) for i in range(6)]
        import_items(con, write_jsonl(folder / "items.jsonl", items))
        for track in tracks:
            rows = [{"item_id": it["item_id"], "model": m, "response": f"{SCRIPT} reply {rng.randint(0, 9)}"}
                    for it in items if it["track"] == track for m in (SCRIPT, IMG, "plain-a", "plain-b")]
            pd.DataFrame(rows).to_csv(folder / "responses.csv", index=False)
            import_responses(con, folder / "responses.csv", dataset="h", track=track)
            ratings = [{"item_id": r["item_id"], "model": r["model"], "annotator": a, "dimension": "Coh",
                        "score": rng.randint(0, 2)} for r in rows for a in (SCRIPT, IMG, "ann-3")]
            pd.DataFrame(ratings).to_csv(folder / "ratings.csv", index=False)
            import_ratings(con, folder / "ratings.csv", dataset="h", track=track, scales={"Coh": (0, 2)})
        score(con, dataset="h", progress=False)
    finally:
        con.close()
    return db


@pytest.fixture(scope="module")
def hostile_db(tmp_path_factory) -> Path:
    return hostile_store(tmp_path_factory.mktemp("hostile-store"))


@pytest.fixture(scope="module")
def hostile_report(hostile_db, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("hostile-report") / "report.html"
    assert main(["report", "--db", str(hostile_db), "--dataset", "h", "--out", str(out)]) in (0, None)
    return out


@pytest.fixture(scope="module")
def hostile_record(hostile_db, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("hostile-record") / "h-record.zip"
    assert main(["record", "export", "--db", str(hostile_db), "--dataset", "h", "--out", str(out)]) == 0
    return out


def test_hostile_names_are_text(hostile_report):
    names_are_text(hostile_report.read_text(encoding="utf-8"))


def names_are_text(text: str) -> None:
    """The hostile store's names in a report: text in its tables and charts, never markup or a script."""
    # every alert(1) in the file is inside an escaped name (in a table, or in a chart's JSON, where plotly writes
    # "/" as \u002f): taken out, none is left, and neither is any <img
    escaped = [html.escape(SCRIPT), html.escape(IMG), html.escape(SCRIPT).replace("/", "\\u002f")]
    rest = text
    for form in escaped:
        rest = rest.replace(form, "")
    assert "alert(1)" not in rest and "<img" not in text.lower()
    assert text.count(html.escape(SCRIPT)) > 10 and text.count(html.escape(IMG)) > 10
    # the only scripts are plotly's: its config line and plotly.js, inlined once, then one call drawing each chart
    scripts = re.findall(r"<script\b[^>]*>(.*?)</script>", text, re.S | re.I)
    assert len(scripts) == 2 + text.count('class="plotly-graph-div"')
    assert scripts[0] == "window.PlotlyConfig = {MathJaxConfig: 'local'};" and "plotly.js v" in scripts[1][:400]
    assert all(s.strip().startswith("window.PLOTLYENV") for s in scripts[2:])
    # the names are in the data as they are: a track, a model, an annotator
    sections, _ = data_sections(text)
    assert any(line.startswith(f"{SCRIPT}/chitchat,{IMG},") for line in sections["leaderboard"])
    assert any(f",{IMG}," in line for line in sections["annotators"])


def manifest_of(record: Path) -> dict:
    with zipfile.ZipFile(record) as zf:
        return json.loads(zf.read("manifest.json"))


def fact(text: str, name: str) -> str:
    return html.unescape(re.search(rf"<th>{re.escape(html.escape(name))}</th><td>(.*?)</td>", text).group(1))


def test_a_record_s_report_names_its_checksum_and_holds_the_store_s_tables(hostile_report, hostile_record, tmp_path):
    out, nowhere = tmp_path / "from-record.html", tmp_path / "no-store.duckdb"
    # no store is read: --db names none, and none is made
    assert main(["report", "--record", str(hostile_record), "--db", str(nowhere), "--out", str(out)]) == 0
    assert not nowhere.exists()
    text, stored = out.read_text(encoding="utf-8"), hostile_report.read_text(encoding="utf-8")
    manifest = manifest_of(hostile_record)
    assert re.fullmatch(r"[0-9a-f]{64}", manifest["content_sha256"])
    assert fact(text, "record") == (f"h-record.zip, content_sha256 {manifest['content_sha256']}, made "
                                    f"{manifest['created_at']} by evalcore {manifest['evalcore']}")
    assert "store revision" in stored and "store revision" not in text   # the scratch store's says nothing
    # the same tables as the report of the store the record was exported from, so the same data checksum
    assert data_sections(text) == data_sections(stored)
    assert fact(text, "data checksum") == fact(stored, "data checksum")
    assert fact(text, "tracks") == fact(stored, "tracks") == f"{SCRIPT}/chitchat, h/chitchat"
    names_are_text(text)


def test_tracks_and_views_narrow_a_record_s_report_as_a_store_s(hostile_db, hostile_record, tmp_path):
    narrowed = ["--tracks", "h/chitchat", "--view", "human", "leaderboard"]
    assert main(["report", "--db", str(hostile_db), "--dataset", "h", *narrowed, "--out", str(tmp_path / "s.html")]) == 0
    # --dataset with --record: accepted when it is the record's dataset
    assert main(["report", "--record", str(hostile_record), "--dataset", "h", *narrowed, "--out",
                 str(tmp_path / "r.html")]) == 0
    stored, text = ((tmp_path / n).read_text(encoding="utf-8") for n in ("s.html", "r.html"))
    assert data_sections(text) == data_sections(stored)
    assert sorted(data_sections(text)[0]) == ["agreement", "annotators", "leaderboard", "leaderboard signatures"]
    assert fact(text, "tracks") == "h/chitchat"


def test_another_dataset_than_the_record_s_is_refused(hostile_record, tmp_path, capsys):
    assert main(["report", "--record", str(hostile_record), "--dataset", "other", "--out", str(tmp_path / "r.html")]) == 2
    assert (f"{hostile_record}, manifest.json, field 'dataset': expected the dataset --dataset names ('other'), "
            "got 'h' (leave --dataset out: the record names its dataset)") in capsys.readouterr().err
    assert not (tmp_path / "r.html").exists()


def test_neither_a_dataset_nor_a_record_is_an_error(tmp_path, capsys):
    assert main(["report", "--out", str(tmp_path / "r.html")]) == 1
    assert "say what to report: --dataset D (of the store at --db) or --record FILE.zip" in capsys.readouterr().err


def test_a_file_that_is_not_a_record_is_refused_naming_it(tmp_path, capsys):
    (tmp_path / "notes.zip").write_bytes(b"not a zip")
    with zipfile.ZipFile(tmp_path / "other.zip", "w") as zf:
        zf.writestr("manifest.json", json.dumps({"format": "other", "version": 9}))
    for name, said in (("notes.zip", "not an evaluation record (expected a zip with manifest.json)"),
                       ("other.zip", "expected format 'evalcore-record' version 1, got 'other' version 9")):
        out = tmp_path / f"{name}.html"
        assert main(["report", "--record", str(tmp_path / name), "--out", str(out)]) == 2
        err = capsys.readouterr().err
        assert err.startswith(f"refused {tmp_path / name}: 1 problem(s); nothing was written")
        assert f"{tmp_path / name}: expected an evaluation record (`evalcore record export`), got " in err
        assert said in err and not out.exists()


def edited(record: Path, dest: Path, member: str, change) -> Path:
    """A copy of `record` with the bytes of `member` put through `change`."""
    with zipfile.ZipFile(record) as zin, zipfile.ZipFile(dest, "w") as zout:
        for info in zin.infolist():
            data = zin.read(info.filename)
            zout.writestr(info, change(data) if info.filename == member else data)
    return dest


def shifted(data: bytes) -> bytes:
    """A metric_values table with its first value 0.25 higher."""
    values = pd.read_parquet(io.BytesIO(data))
    values.loc[0, "value"] = values.loc[0, "value"] + 0.25
    buffer = io.BytesIO()
    values.to_parquet(buffer, index=False)
    return buffer.getvalue()


def test_a_record_changed_since_export_is_refused_naming_the_table(hostile_record, tmp_path, capsys):
    changed = edited(hostile_record, tmp_path / "changed.zip", "tables/metric_values.parquet", shifted)
    assert main(["report", "--record", str(changed), "--out", str(tmp_path / "r.html")]) == 2
    err = capsys.readouterr().err
    sha = manifest_of(changed)["tables"]["metric_values"]["sha256"]
    assert f"{changed}, tables/metric_values.parquet, field 'sha256': expected {sha} (the manifest's), got " in err
    assert "changed since export" in err
    broken = edited(hostile_record, tmp_path / "broken.zip", "tables/datasets.parquet", lambda data: b"not parquet")
    assert main(["report", "--record", str(broken), "--out", str(tmp_path / "r.html")]) == 2
    assert f"{broken}, tables/datasets.parquet: expected a Parquet table, got " in capsys.readouterr().err
    assert not (tmp_path / "r.html").exists()


@pytest.mark.slow
@pytest.mark.browser
@pytest.mark.skipif(not Path(CHROMIUM).exists(), reason="Chromium is not installed (apt-get install chromium)")
def test_the_report_opens_offline_in_chromium(demo, hostile_report, hostile_record, tmp_path, capsys):
    playwright = pytest.importorskip("playwright.sync_api", reason="pip install -r tests/requirements.txt")
    out, of_record = tmp_path / "report.html", tmp_path / "record-report.html"
    run(capsys, "report", "--db", str(demo), "--dataset", "msde-paper", "--out", str(out))
    run(capsys, "report", "--record", str(hostile_record), "--out", str(of_record))
    SCREENS.mkdir(parents=True, exist_ok=True)
    with playwright.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=["--headless", "--no-sandbox", "--disable-gpu"])
        try:
            for report, width, shot in ((out, 1400, "report-1400px.png"), (out, 800, "report-800px.png"),
                                        (hostile_report, 1400, None), (of_record, 1400, None)):
                context = browser.new_context(viewport={"width": width, "height": 1000}, offline=True)
                asked, errors = [], []
                context.route("**/*", lambda r: r.continue_() if r.request.url.startswith("file:")
                              else (asked.append(r.request.url), r.abort()))
                page = context.new_page()
                page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
                page.on("dialog", lambda d: (errors.append(f"dialog: {d.message}"), d.dismiss()))
                page.goto(report.as_uri())
                page.wait_for_selector(".js-plotly-plot .main-svg", timeout=30_000)
                assert page.locator(".js-plotly-plot").count() >= 2
                assert page.locator("img").count() == 0   # a name shaped as a tag made none
                assert errors == [] and asked == []
                if shot:
                    page.screenshot(path=str(SCREENS / shot), full_page=False)
                context.close()
        finally:
            browser.close()


def test_the_share_box_offers_the_dataset_s_report(demo, monkeypatch):
    from support.apptest import run as run_page

    at = run_page("leaderboard", monkeypatch, {"EVALCORE_DB": demo}, dataset="engagement-en")
    buttons = [b for b in at.get("download_button") if b.proto.label == "Offline report (HTML)"]
    assert len(buttons) == 1
    # deferred: the report is made when the button is clicked (a file id to ask for), not sent with every page
    assert buttons[0].proto.deferred_file_id and not buttons[0].proto.url
