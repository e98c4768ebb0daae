"""Every importer on a full disk (issue 46, item 6): each one's file of 50,000 rows or more (the MSDE release: its
96,760 responses) imported into a copy of one store on a small tmpfs, with two amounts of free space derived from
what a roomy run needs (test_disk.ladder): too little for the write-ahead log, and room for the log but not the
checkpoint after it. At each, what the command said must be what the store holds, opened read-only on the
still-full disk and opened again once space is freed (test_disk.attempt): "nothing of this write was stored" with
every table as before, "this write was stored" or exit 0 with every table as the roomy run left it. The first
level must say nothing was stored; the second must keep the write (stored, or imported when the import's commit
makes DuckDB no checkpoint: its log under 16 MiB, merged at the next opening with room)."""
from __future__ import annotations

import csv
import hashlib
import json
import os
import shutil
import sys
import types
from pathlib import Path
from types import SimpleNamespace as NS

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from test_disk import attempt, ladder, measure, mounted, snapshot, votes_file

from evalcore.cli import main
from evalcore.store import connect
from support import ROOT, copy_default_store, write_jsonl

pytestmark = pytest.mark.slow   # ten importers, three runs each of 50,000 rows or more: about 12 minutes

N = 50_000
MSDE = ROOT.parent / "shared" / "data" / "msde"
WORDS = "今天 天气 不错 我们 一起 去 公园 散步 吧 你 喜欢 看 电影 吗 这部 的 导演 很 有名".split()


def sentence(i: int, words: int = 12) -> str:
    return "".join(WORDS[(i * 7 + k * 3) % len(WORDS)] for k in range(words)) + f" {i}"


@pytest.fixture(scope="module")
def template(tmp_path_factory, default_store_file) -> Path:
    """The default store (28 MB) and dataset `big`: 50,000 items of big/chitchat answered by model m0."""
    where = tmp_path_factory.mktemp("full-disk")
    db = copy_default_store(default_store_file, where / "template.duckdb")
    items = where / "big-items.jsonl"
    write_jsonl(items, [{"item_id": f"b{i:05d}", "dataset": "big", "track": "big/chitchat", "context": [sentence(i)],
                         "references": [sentence(i + 1)]} for i in range(N)])
    responses = where / "big-m0.csv"
    _csv(responses, ["item_id", "response"], ([f"b{i:05d}", sentence(i + 2)] for i in range(N)))
    assert main(["import", "items", str(items), "--db", str(db)]) == 0
    assert main(["import", "responses", str(responses), "--db", str(db), "--dataset", "big", "--track",
                 "big/chitchat", "--model", "m0"]) == 0
    con = connect(db)
    con.execute("CHECKPOINT")   # one file: a copy of it is the whole store
    con.close()
    return db


def _csv(path: Path, header: list[str], rows) -> Path:
    with open(path, "w", newline="", encoding="utf-8") as fh:
        out = csv.writer(fh)
        out.writerow(header)
        out.writerows(rows)
    return path


def _demo_items(template: Path) -> list[tuple[str, str]]:
    con = connect(template, read_only=True)
    try:
        return con.execute("SELECT r.item_id, i.track FROM responses r JOIN items i USING (dataset, item_id) "
                           "WHERE r.dataset = 'demo-zh' GROUP BY ALL HAVING count(*) = 2 ORDER BY 1 LIMIT 9287").fetchall()
    finally:
        con.close()


def items_case(template: Path, where: Path) -> list[str]:
    """130,000 items: more than one of DuckDB's row groups (122,880 rows), which an insert writes into the store
    file before the commit (its log then points at them): the one importer here that reaches that path."""
    path = write_jsonl(where / "items.jsonl", [
        {"item_id": f"n{i:06d}", "dataset": "bulk", "track": "bulk/chitchat", "context": [sentence(i), sentence(i + 5)],
         "references": [sentence(i + 9)]} for i in range(130_000)])
    return ["import", "items", str(path)]


def responses_case(template: Path, where: Path) -> list[str]:
    path = _csv(where / "fresh.csv", ["item_id", "response"], ([f"b{i:05d}", sentence(i + 3)] for i in range(N)))
    return ["import", "responses", str(path), "--dataset", "big", "--track", "big/chitchat", "--model", "fresh"]


def ratings_case(template: Path, where: Path) -> list[str]:
    """111,444 ratings as in issue 46: 9,287 items of demo-zh, both models, 3 annotators, 2 dimensions."""
    rows = ([item, model, who, dim, n % 3, track] for n, (item, track) in enumerate(_demo_items(template))
            for model in ("tfidf-retrieval", "bm25-retrieval") for who in ("ann1", "ann2", "ann3")
            for dim in ("Info", "Coh"))
    path = _csv(where / "ratings.csv", ["item_id", "model", "annotator", "dimension", "score", "track"], rows)
    return ["import", "ratings", str(path), "--dataset", "demo-zh"]


def scores_case(template: Path, where: Path) -> list[str]:
    path = _csv(where / "scores.csv", ["item_id", "model", "value"],
                ([f"b{i:05d}", "m0", (i % 1000) / 1000] for i in range(N)))
    return ["import", "scores", str(path), "--dataset", "big", "--metric", "Ext"]


def votes_case(template: Path, where: Path) -> list[str]:
    return ["import", "votes", str(votes_file(template, where / "votes.csv")), "--dataset", "demo-zh"]


def dstc10_case(template: Path, where: Path) -> list[str]:
    """50,000 rated responses: 10,000 contexts, five systems each, two annotators' Overall."""
    entries = [{"dialogue_id": f"d{i // 5:05d}", "model": f"sys{i % 5}", "context": f"{sentence(i // 5)}\n{sentence(i)}",
                "response": sentence(i + 11), "reference": [sentence(i // 5 + 13)],
                "annotations": {"Overall": [1 + i % 5, 1 + (i // 5) % 5]}} for i in range(N)]
    path = where / "turns.json"
    path.write_text(json.dumps(entries, ensure_ascii=False), encoding="utf-8")
    return ["import", "dstc10", str(path), "--dataset", "dd", "--track", "dd/chitchat", "--scale", "Overall=1:5"]


def mtbench_case(template: Path, where: Path) -> list[str]:
    """A FastChat llm_judge folder: 1,000 one-turn questions, 50 models' answers (50,000), a judge's grades of them."""
    root = where / "mt_bench"
    (root / "model_answer").mkdir(parents=True)
    (root / "model_judgment").mkdir()
    questions = [{"question_id": q, "category": ("writing", "reasoning", "coding")[q % 3], "turns": [sentence(q)]}
                 for q in range(1, 1001)]
    write_jsonl(root / "question.jsonl", questions)
    models = [f"model{k:02d}" for k in range(50)]
    for m in models:
        write_jsonl(root / "model_answer" / f"{m}.jsonl", [
            {"question_id": q["question_id"], "answer_id": f"{m}-{q['question_id']}", "model_id": m,
             "choices": [{"index": 0, "turns": [sentence(q["question_id"] + len(m))]}], "tstamp": 1.0}
            for q in questions])
    write_jsonl(root / "model_judgment" / "gpt-4_single.jsonl", [
        {"question_id": q["question_id"], "model": m, "judge": ["gpt-4", "single-v1"], "user_prompt": "...",
         "judgment": f"Rating: [[{1 + q['question_id'] % 10}]]", "score": 1 + q["question_id"] % 10, "turn": 1,
         "tstamp": 1.0} for q in questions[:200] for m in models])
    return ["import", "mtbench", str(root), "--dataset", "mt"]


def msde_case(template: Path, where: Path) -> list[str]:
    if not (MSDE / "data").is_dir():
        pytest.skip(f"the MSDE release is not at {MSDE} (see /work/shared/data/README.md)")
    return ["import", "msde", str(MSDE)]


def published_case(template: Path, where: Path) -> list[str]:
    """A paper's system-level tables: 50,000 automatic scores (10 tracks, 100 models, 50 metrics) and 1,000 human."""
    root = where / "paper"
    root.mkdir()
    tracks = [("lic2021", s) for s in ("knowledge", "persona", "chitchat", "recommendation", "taskbot")] + \
             [("luge", s) for s in ("knowledge", "persona", "chitchat", "recommendation", "taskbot")]
    _csv(root / "automatic_system_scores.csv", ["paper_table", "competition", "skill", "model", "metric", "value"],
         (["3", c, s, f"sys{m:03d}", f"M{k:02d}", round((m * 31 + k * 7) % 100 / 100, 2)]
          for c, s in tracks for m in range(100) for k in range(50)))
    _csv(root / "human_system_scores.csv", ["paper_table", "competition", "skill", "model", "dimension", "value"],
         (["10", c, s, f"sys{m:03d}", "Info", round((m * 13) % 200 / 100, 2)] for c, s in tracks for m in range(100)))
    return ["import", "published", str(root), "--dataset", "pp", "--scale", "Info=0:2"]


def sessions_case(template: Path, where: Path) -> list[str]:
    """50,000 task-oriented test sessions: 50 systems, 1,000 test cases each, one reviewer."""
    rows = ([f"sys{s:02d}", f"case{c:04d}", (s + c) % 2, 1 + (s * c) % 9, "r1", (s + c) % 5 - 2, (s + c) % 3 - 1, c % 2]
            for s in range(50) for c in range(1000))
    path = _csv(where / "sessions.csv", ["system", "test_case", "completed", "turns", "reviewer", "satisfaction",
                                         "fluency", "guidance"], rows)
    return ["import", "sessions", str(path), "--dataset", "smp", "--track", "smp/taskbot"]


def lmeval_case(template: Path, where: Path) -> list[str]:
    """lm-evaluation-harness samples: 50,000 answers of model lm to the items of `big`, each with its exact_match."""
    path = write_jsonl(where / "samples_big_2026-01-01T00-00-00.000000.jsonl", [
        {"doc_id": i, "doc": {"id": f"b{i:05d}"}, "target": sentence(i + 1), "arguments": {}, "resps": [[sentence(i)]],
         "filtered_resps": [sentence(i + 4)], "filter": "none", "metrics": ["exact_match"], "exact_match": i % 2}
        for i in range(N)])
    return ["import", "lm-eval", str(path), "--dataset", "big", "--track", "big/chitchat", "--model", "lm",
            "--doc-id", "doc.id"]


def hf_case(template: Path, where: Path) -> list[str]:
    """A Parquet file of 50,000 answers of model hf to the items of `big`."""
    path = where / "answers.parquet"
    pq.write_table(pa.table({"id": [f"b{i:05d}" for i in range(N)], "output": [sentence(i + 6) for i in range(N)]}),
                   path)
    return ["import", "hf", str(path), "--dataset", "big", "--track", "big/chitchat", "--model", "hf",
            "--columns", "item_id=id,response=output"]


def labelstudio_case(template: Path, where: Path) -> list[str]:
    """A Label Studio export of 50,000 tasks, each m0's response to an item of `big` rated by one of two users."""
    tasks = [{"id": i, "data": {"item_id": f"b{i:05d}", "model": "m0"},
              "annotations": [{"completed_by": 1 + i % 2, "was_cancelled": False, "result": [
                  {"from_name": "quality", "to_name": "text", "type": "rating", "value": {"rating": 1 + i % 5}}]}]}
             for i in range(N)]
    path = where / "export.json"
    path.write_text(json.dumps(tasks, ensure_ascii=False), encoding="utf-8")
    return ["import", "label-studio", str(path), "--dataset", "big", "--track", "big/chitchat", "--item-field",
            "data.item_id", "--model-field", "data.model", "--scale", "quality=1:5"]


def argilla_case(template: Path, where: Path) -> list[str]:
    """An Argilla dataset on disk of 50,000 records, each m0's response to an item of `big` rated by one of two users."""
    folder = where / "argilla"
    (folder / ".argilla").mkdir(parents=True)
    settings = {"fields": [{"name": "response", "settings": {"type": "text"}}], "questions": [
        {"name": "quality", "settings": {"type": "rating", "options": [{"value": v} for v in range(1, 6)]}}]}
    (folder / ".argilla" / "settings.json").write_text(json.dumps(settings), encoding="utf-8")
    records = [{"id": f"r{i}", "fields": {"response": sentence(i + 2)}, "metadata": {"item_id": f"b{i:05d}", "model": "m0"},
                "responses": {"quality": [{"value": 1 + i % 5, "user_id": f"user-{i % 2}"}]}} for i in range(N)]
    (folder / "records.json").write_text(json.dumps(records), encoding="utf-8")
    return ["import", "argilla", str(folder), "--dataset", "big", "--track", "big/chitchat", "--item-field",
            "metadata.item_id", "--model-field", "metadata.model"]


def dstc11_case(template: Path, where: Path) -> list[str]:
    """50,000 rated responses in DSTC11 Track 4's shape, imported in their Chinese texts."""
    entries = [{"dialogue_id": f"d{i // 5:05d}", "model": f"sys{i % 5}", "context": "hi\nhello",
                "response": "bye", "reference": ["ok"], "context_zh": f"{sentence(i // 5)}\n{sentence(i // 5 + 1)}",
                "response_zh": sentence(i + 11), "annotations": {"Overall": [1 + i % 5, 1 + (i // 5) % 5]}}
               for i in range(N)]
    path = where / "turns_zh.json"
    path.write_text(json.dumps(entries, ensure_ascii=False), encoding="utf-8")
    return ["import", "dstc11", str(path), "--dataset", "dd11", "--track", "dd/chitchat", "--scale", "Overall=1:5"]


def eee_case(template: Path, where: Path) -> list[str]:
    """Every Eval Ever: the package's example aggregate with 50,000 instance records of a new dataset."""
    example = next((ROOT / "tests" / "ingest" / "fixtures" / "eee_schema" / "example").rglob("*.json"))
    line = json.loads(example.with_name(example.stem + "_samples.jsonl").read_text(encoding="utf-8"))
    folder = where / "eee" / example.parent.relative_to(example.parents[3])
    folder.mkdir(parents=True)
    samples = folder / (example.stem + "_samples.jsonl")
    write_jsonl(samples, [{**line, "sample_id": f"e{i:05d}", "input": {"raw": sentence(i), "reference": [sentence(i + 1)]},
                           "output": {"raw": [sentence(i + 2)]}, "evaluation": {"score": float(i % 2),
                                                                                 "is_correct": bool(i % 2)}}
                          for i in range(N)])
    aggregate = json.loads(example.read_text(encoding="utf-8"))
    aggregate["detailed_evaluation_results"].update(total_rows=N, checksum=hashlib.sha256(samples.read_bytes()).hexdigest())
    (folder / example.name).write_text(json.dumps(aggregate), encoding="utf-8")
    return ["import", "eee", str(where / "eee"), "--dataset", "eee-big"]


class _Inspect(dict):
    """A stand-in inspect_ai (not installable here; tests/ingest/test_import_inspect.py): read_eval_log returns the logs
    registered by path, in the EvalLog shape inspect documents."""

    def install(self) -> None:
        package, log, scorer = (types.ModuleType(n) for n in ("inspect_ai", "inspect_ai.log", "inspect_ai.scorer"))
        log.read_eval_log = self.__getitem__
        scorer.value_to_float = lambda: float
        sys.modules.update({"inspect_ai": package, "inspect_ai.log": log, "inspect_ai.scorer": scorer})


def inspect_case(template: Path, where: Path) -> list[str]:
    """An inspect_ai log of 50,000 samples answering the items of `big`, each scored (through the stand-in)."""
    logs = _Inspect()
    path = str(where / "run.eval")
    logs[path] = NS(eval=NS(task="big", model="insp"), samples=[
        NS(id=f"b{i:05d}", epoch=1, input=sentence(i), target="", output=NS(completion=sentence(i + 8)),
           scores={"match": NS(value=i % 2)}) for i in range(N)])
    logs.install()
    return ["import", "inspect", path, "--dataset", "big", "--track", "big/chitchat"]


CASES = {"items": items_case, "responses": responses_case, "ratings": ratings_case, "scores": scores_case,
         "votes": votes_case, "dstc10": dstc10_case, "mtbench": mtbench_case, "msde": msde_case,
         "published": published_case, "sessions": sessions_case, "lm-eval": lmeval_case, "hf": hf_case,
         "label-studio": labelstudio_case, "argilla": argilla_case, "dstc11": dstc11_case, "eee": eee_case,
         "inspect": inspect_case}


def test_every_import_kind_is_covered():
    """A new importer (`evalcore import KIND`) needs its case here."""
    from evalcore.cli import build_parser

    kinds = next(a for a in build_parser()._subparsers._group_actions[0].choices["import"]._actions
                 if a.dest == "kind").choices
    assert set(kinds) == set(CASES)


@pytest.mark.parametrize("kind", list(CASES))
def test_each_importer_on_a_full_disk_says_what_the_store_holds(kind, template, tmp_path, monkeypatch, capsys):
    if shutil.which("mount") is None or os.geteuid() != 0:
        pytest.skip("a small file system (tmpfs) needs mount(8) as root")
    argv = CASES[kind](template, tmp_path)
    before = snapshot(template)
    needs = measure(template, argv, tmp_path, monkeypatch, capsys)
    rows = sum(needs["after"][t][0] - before.get(t, (0,))[0] for t in needs["after"])
    assert rows >= N or kind == "sessions", (kind, rows)   # sessions: 50,000 rows read, each system's scores stored
    levels = ladder(needs)
    del levels["imported"]   # room for everything: the roomy run (measure) and test_disk's votes show it
    size = template.stat().st_size + 2 * levels["stored"] + (16 << 20)
    with mounted("-t", "tmpfs", "-o", f"size={size}", "tmpfs", where=tmp_path / "small") as small:
        got = {want: attempt(template, argv, small, free, before, needs["after"], capsys)
               for want, free in levels.items()}
    print(f"{kind}: {rows:,} rows; needs {needs['blocks']:,} B of blocks, {needs['log']:,} B of log, "
          f"{needs['merge']:,} B merged; free {levels} -> {got}")
    assert got["nothing"] == "nothing", (kind, got, needs)
    assert got["stored"] in ("stored", "imported"), (kind, got, needs)
    if kind == "items":   # 130,000 rows of one table: row groups written to the store file before the commit
        assert needs["blocks"] > 1 << 20, needs
    shutil.rmtree(tmp_path / "small", ignore_errors=True)
