"""Every Eval Ever out and in: `export eee` writes files that validate against the schemas the every-eval-ever package
ships (vendored in tests/ingest/fixtures/eee_schema, see PROVENANCE.txt), `import eee` reads them back into an empty
store with the same items, responses, values and ratings, and a bad file is refused whole, naming file, line and
field, with the store unchanged."""
import json
from pathlib import Path

import jsonschema
import pytest

from evalcore.cli import main
from evalcore.scoring import response_scores
from evalcore.store import connect
from support import fingerprint, write_jsonl

SCHEMAS = Path(__file__).parent / "fixtures" / "eee_schema"
TRACK = "ext/chitchat"
ITEMS = [{"item_id": f"i{k}", "dataset": "ext", "track": TRACK, "dialogue_id": f"d{k // 2}",
          "context": [f"你好{k}", f"今天做什么{k}？"],
          "references": [f"去 公园 散步 {k}", f"在 家 看书 {k}"][: 1 + k % 2]} for k in range(4)]
ITEMS[0]["grounding"] = {"persona": ["我喜欢猫"]}
MODELS = ["a", "org/b"]
TEXTS = {(f"i{k}", m): f"去 公园 {'散步' if j else '看书'} {k}" for k in range(4) for j, m in enumerate(MODELS)}
# Overall per (item, model) by annotators x and y
HUMAN = {(f"i{k}", m): (1 + (k + j) % 5, 1 + (2 * k + j) % 5) for k in range(4) for j, m in enumerate(MODELS)}
JUDGE = {key: 0.5 * k + 0.25 * j for k, key in enumerate(sorted(TEXTS)) for j in [k % 2]}


def cli(*args) -> int:
    return main([str(a) for a in args])


@pytest.fixture
def store(tmp_path):
    db = tmp_path / "s.duckdb"
    assert cli("import", "items", write_jsonl(tmp_path / "i.jsonl", ITEMS), "--db", db) == 0
    (tmp_path / "r.csv").write_text("item_id,model,response\n" + "".join(
        f"{i},{m},{t}\n" for (i, m), t in TEXTS.items()), encoding="utf-8")
    assert cli("import", "responses", tmp_path / "r.csv", "--db", db, "--dataset", "ext", "--track", TRACK) == 0
    (tmp_path / "h.csv").write_text("item_id,model,annotator,dimension,score\n" + "".join(
        f"{i},{m},{who},Overall,{s}\n" for (i, m), pair in HUMAN.items() for who, s in zip("xy", pair)),
        encoding="utf-8")
    assert cli("import", "ratings", tmp_path / "h.csv", "--db", db, "--dataset", "ext", "--track", TRACK,
               "--scale", "Overall=1:5") == 0
    (tmp_path / "j.csv").write_text("item_id,model,value\n" + "".join(
        f"{i},{m},{v}\n" for (i, m), v in JUDGE.items()), encoding="utf-8")
    assert cli("import", "scores", tmp_path / "j.csv", "--db", db, "--dataset", "ext", "--metric", "GPT-judge",
               "--signature", "gpt-4o coherence prompt v2") == 0
    assert cli("score", "--db", db, "--dataset", "ext", "--metrics", "F1,BLEU1") == 0
    return db


def exported(store, out) -> tuple[list[Path], list[Path]]:
    assert cli("export", "eee", "--db", store, "--dataset", "ext", "--out", out, "--organization", "Lab") == 0
    return sorted(Path(out).rglob("*.json")), sorted(Path(out).rglob("*_samples.jsonl"))


def schema(name: str) -> jsonschema.Draft7Validator:
    return jsonschema.Draft7Validator(json.loads((SCHEMAS / name).read_text(encoding="utf-8")))


def test_export_validates_against_the_package_schemas(store, tmp_path):
    aggregates, samples = exported(store, tmp_path / "eee")
    assert len(aggregates) == len(samples) == 2   # one pair per model
    aggregate_schema, instance_schema = schema("eval.schema.json"), schema("instance_level_eval.schema.json")
    for path in aggregates:
        data = json.loads(path.read_text(encoding="utf-8"))
        assert not list(aggregate_schema.iter_errors(data)), path
        detailed = data["detailed_evaluation_results"]
        assert detailed["file_path"] == path.relative_to(tmp_path / "eee").with_name(path.stem + "_samples.jsonl"
                                                                                     ).as_posix()
    for path in samples:
        lines = path.read_text(encoding="utf-8").splitlines()
        assert lines
        for line in lines:
            assert not list(instance_schema.iter_errors(json.loads(line))), (path, line)
    # the layout data/<dataset>/<developer>/<model>/: "org/b" is developer org, model b
    assert {p.parent.relative_to(tmp_path / "eee").as_posix() for p in aggregates} == {
        "data/ext/unknown/a", "data/ext/org/b"}

    con = connect(store)
    try:
        stored = {(m, n): (v, s) for m, n, v, s in con.execute(
            "SELECT model, name, value, signature FROM system_scores WHERE dataset = 'ext' AND "
            "NOT ends_with(signature, '|system:sentence-mean')").fetchall()}
    finally:
        con.close()
    for path in aggregates:
        data = json.loads(path.read_text(encoding="utf-8"))
        model = data["model_info"]["name"]
        results = {r["metric_config"]["metric_id"]: r for r in data["evaluation_results"]}
        assert set(results) == {"F1", "BLEU1", "GPT-judge", "Overall"}
        for name in ("F1", "BLEU1", "GPT-judge"):
            value, sig = stored[model, name]
            assert results[name]["score_details"]["score"] == pytest.approx(value)
            assert results[name]["metric_config"]["additional_details"]["evalcore_signature"] == sig
        # the judge's system value is the mean of its four values; Overall the mean over responses of x's and y's
        mine = [v for (_, m), v in JUDGE.items() if m == model]
        assert results["GPT-judge"]["score_details"]["score"] == pytest.approx(sum(mine) / 4)
        overall = [sum(pair) / 2 for (_, m), pair in HUMAN.items() if m == model]
        assert results["Overall"]["score_details"]["score"] == pytest.approx(sum(overall) / 4)
        assert (results["Overall"]["metric_config"]["min_score"], results["Overall"]["metric_config"]["max_score"]) == (1, 5)
        assert data["source_metadata"]["source_organization_name"] == "Lab"


def _contents(db) -> dict:
    con = connect(db)
    try:
        items = sorted(con.execute("SELECT item_id, track, dialogue_id, context, grounding FROM items").fetchall())
        refs = sorted(con.execute("SELECT item_id, ref_index, text FROM item_references").fetchall())
        texts = sorted(con.execute("SELECT item_id, model, text FROM responses").fetchall())
        ratings = sorted(con.execute("SELECT track, item_id, model, annotator, dimension, score FROM human_ratings"
                                     ).fetchall())
        values = response_scores(con, "ext", TRACK)
        system = {(m, n.removeprefix("EEE:"), s.endswith("|system:sentence-mean")): v for m, n, v, s in con.execute(
            "SELECT model, name, value, signature FROM system_scores").fetchall()}
    finally:
        con.close()
    values = {(r.item_id, r.model, r.metric.removeprefix("EEE:")): r.value for r in values.itertuples()}
    return {"items": items, "refs": refs, "texts": texts, "ratings": ratings, "values": values, "system": system}


def test_import_reads_the_export_back_equal(store, tmp_path):
    exported(store, tmp_path / "eee")
    fresh = tmp_path / "fresh.duckdb"
    assert cli("import", "eee", tmp_path / "eee", "--db", fresh, "--dataset", "ext") == 0
    before, after = _contents(store), _contents(fresh)
    assert after["texts"] == before["texts"] and len(after["texts"]) == 8
    assert after["items"] == before["items"] and after["refs"] == before["refs"]
    assert after["ratings"] == before["ratings"] and len(after["ratings"]) == 16
    assert set(after["values"]) == set(before["values"])
    assert {k[2] for k in after["values"]} == {"F1", "BLEU1", "GPT-judge"}
    for key, value in before["values"].items():
        assert after["values"][key] == pytest.approx(value), key
    # system values: corpus as the file reports them, sentence-mean (new here) the mean of the values
    corpus = {k: v for k, v in before["system"].items() if not k[2]}   # `score` wrote the corpus aggregate only
    assert len(corpus) == 6 and {k for k in after["system"] if not k[2]} == set(corpus)
    for key, value in corpus.items():
        assert after["system"][key] == pytest.approx(value), key
    bleu = [v for (i, m, n), v in before["values"].items() if m == "a" and n == "BLEU1"]
    assert after["system"]["a", "BLEU1", True] == pytest.approx(sum(bleu) / len(bleu))
    # the imported judge keeps the signature text its values were made under
    con = connect(fresh)
    try:
        sigs = dict(con.execute("SELECT metric, signature FROM metric_signatures").fetchall())
    finally:
        con.close()
    assert sigs["EEE:GPT-judge"] == "EEE:GPT-judge|external|sig:GPT-judge|external|sig:gpt-4o coherence prompt v2"


def _edit_line(path: Path, number: int, change) -> None:
    lines = path.read_text(encoding="utf-8").splitlines()
    rec = json.loads(lines[number - 1])
    change(rec)
    lines[number - 1] = json.dumps(rec, ensure_ascii=False)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


@pytest.mark.parametrize("change, field, got", [
    (lambda rec: rec.pop("sample_id"), "sample_id", "nothing"),
    (lambda rec: rec["evaluation"].update(score="high"), "evaluation.score", "'high'"),
])
def test_a_hostile_file_is_refused_whole(store, tmp_path, capsys, change, field, got):
    _, samples = exported(store, tmp_path / "eee")
    target = samples[0]
    _edit_line(target, 3, change)
    fresh = tmp_path / "fresh.duckdb"
    assert cli("import", "items", write_jsonl(tmp_path / "one.jsonl", ITEMS[:1]), "--db", fresh) == 0
    con = connect(fresh)
    try:
        kept = fingerprint(con)
    finally:
        con.close()
    capsys.readouterr()
    assert cli("import", "eee", tmp_path / "eee", "--db", fresh, "--dataset", "ext") == 2
    err = capsys.readouterr().err
    assert f"{target}, line 3, field '{field}'" in err and got in err, err
    con = connect(fresh)
    try:
        assert fingerprint(con) == kept
    finally:
        con.close()


def test_a_file_another_tool_wrote_imports(tmp_path):
    """The package's own reference conversion (no evalcore metadata): the context is input.raw, the track the
    evaluation_name, the model model_info.id, the metric EEE:accuracy."""
    example = SCHEMAS / "example"
    for path in example.rglob("*.json"):
        assert not list(schema("eval.schema.json").iter_errors(json.loads(path.read_text(encoding="utf-8"))))
    db = tmp_path / "demo.duckdb"
    assert cli("import", "eee", example, "--db", db, "--dataset", "demo") == 0
    con = connect(db)
    try:
        assert con.execute("SELECT item_id, track, context FROM items").fetchall() == [
            ("demo_0001", "demo-source.demo_bench", '["What is 2 + 2?"]')]
        assert con.execute("SELECT text FROM item_references").fetchall() == [("4",)]
        assert con.execute("SELECT item_id, model, text FROM responses").fetchall() == [
            ("demo_0001", "demo-org/demo-model", "The answer is 4.")]
        assert con.execute("SELECT metric, higher_is_better FROM external_metrics").fetchall() == [("EEE:accuracy", True)]
        # the system value is the one the aggregate reports (0.75, over samples the file does not hold); the
        # sentence-mean aggregate is the mean of the one sample's value
        assert sorted(con.execute("SELECT ends_with(signature, '|system:sentence-mean'), model, value "
                                  "FROM system_scores WHERE name = 'EEE:accuracy'").fetchall()) == [
            (False, "demo-org/demo-model", 0.75), (True, "demo-org/demo-model", 1.0)]
    finally:
        con.close()


def test_one_track_out_and_a_second_import_refused_for_its_stored_ratings(store, tmp_path, capsys):
    assert cli("export", "eee", "--db", store, "--dataset", "ext", "--tracks", TRACK, "--out", tmp_path / "eee") == 0
    con = connect(store)
    try:
        kept = fingerprint(con)
    finally:
        con.close()
    capsys.readouterr()
    # items and responses are the stored ones (reused), but x's and y's ratings are stored already
    assert cli("import", "eee", tmp_path / "eee", "--db", store, "--dataset", "ext") == 2
    err = capsys.readouterr().err
    assert "field 'metadata.evalcore_ratings': expected a rating not stored yet" in err, err
    con = connect(store)
    try:
        assert fingerprint(con) == kept
    finally:
        con.close()
    # an unknown track: exit 2, naming the closest (as every command)
    assert cli("export", "eee", "--db", store, "--dataset", "ext", "--tracks", "ext/none", "--out", tmp_path / "x") == 2


def test_generation_settings_of_an_endpoint_model(store, tmp_path):
    """A model whose responses an endpoint generated carries its sampling settings and the `generations`
    signature (the row as evalcore.generation.signature.sign writes it)."""
    sig = "gen:qwen@localhost:8000|tpl:chitchat#abc123|t:0.7|p:0.9|max:256|seed:7|items:all|evalcore:0.1.0"
    details = {"served_model": "qwen", "host": "localhost:8000", "temperature": 0.7, "top_p": 0.9, "max_tokens": 256,
               "seed": 7}
    con = connect(store)
    try:
        con.execute("INSERT INTO generations (generation_id, dataset, model, endpoint, tracks, signature, details, "
                    "submission_id, state, total, created_at) VALUES (1, 'ext', 'a', 'local', ?, ?, ?, 1, 'done', 4, "
                    "now())", [json.dumps([TRACK]), sig, json.dumps(details)])
    finally:
        con.close()
    aggregates, _ = exported(store, tmp_path / "eee")
    by_model = {json.loads(p.read_text(encoding="utf-8"))["model_info"]["id"]: json.loads(p.read_text(encoding="utf-8"))
                for p in aggregates}
    for data in by_model.values():
        assert not list(schema("eval.schema.json").iter_errors(data))
    config = by_model["a"]["evaluation_results"][0]["generation_config"]
    assert config["generation_args"] == {"temperature": 0.7, "top_p": 0.9, "max_tokens": 256}
    assert config["additional_details"] == {"evalcore_generation_signature": sig, "endpoint": "local",
                                            "served_model": "qwen", "host": "localhost:8000", "seed": "7"}
    assert all("generation_config" not in r for r in by_model["org/b"]["evaluation_results"])


def test_an_aggregate_score_written_as_text_is_refused(store, tmp_path, capsys):
    aggregates, _ = exported(store, tmp_path / "eee")
    data = json.loads(aggregates[0].read_text(encoding="utf-8"))
    data["evaluation_results"][1]["score_details"]["score"] = "0.5"
    aggregates[0].write_text(json.dumps(data), encoding="utf-8")
    capsys.readouterr()
    assert cli("import", "eee", tmp_path / "eee", "--db", tmp_path / "fresh.duckdb", "--dataset", "ext") == 2
    err = capsys.readouterr().err
    assert (f"{aggregates[0]}, field 'evaluation_results[1].score_details.score': expected a JSON number, got '0.5'"
            in err), err
    con = connect(tmp_path / "fresh.duckdb")
    try:
        assert con.execute("SELECT count(*) FROM responses").fetchall() == [(0,)]
    finally:
        con.close()
