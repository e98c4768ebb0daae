"""Shared fixtures: fresh stores, a small toy dataset, and a fingerprint of a whole store."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from evalcore.store import DATA_TABLES, connect

ROOT = Path(__file__).resolve().parent.parent
SHARED_DATA = ROOT.parent / "shared" / "data"


def shared(*parts: str) -> Path:
    """A path in ../shared/data, skipping the test when that folder is absent (a plain clone)."""
    path = SHARED_DATA.joinpath(*parts)
    if not path.exists():
        pytest.skip(f"{path} is absent: real-data tests need ../shared/data beside the project")
    return path


def read_cpc_pairs(per_model: int) -> dict[str, tuple[list[str], list[list[str]]]]:
    """Real CPC pairs from ../shared/data/msde: per model (baichuan, chatglm, llama, qianwen), its first
    `per_model` responses and their one reference each."""
    import openpyxl

    folder = shared("msde", "data", "Lic 2021_CPC")
    refs = [json.loads(line)["response"] for line in (folder / "Lic 2021_CPC.txt").read_text("utf-8").splitlines()]
    out = {}
    for model in ("baichuan", "chatglm", "llama", "qianwen"):
        wb = openpyxl.load_workbook(folder / f"{model}.xlsx", read_only=True)
        rows = list(wb.worksheets[0].iter_rows(values_only=True))[1:per_model + 1]
        out[model] = ([str(r[1] or "") for r in rows], [[r] for r in refs[:per_model]])
    return out


def store_at_version(path, version: int):
    """A store at schema `version`, as an evalcore of that version left it (migrations 1..version applied),
    open for the test to fill as it stood then; opening it with connect() migrates it to this version."""
    import duckdb

    from evalcore.store.migrations import all_migrations

    old = duckdb.connect(str(path))
    old.execute("CREATE TABLE schema_version (version INTEGER PRIMARY KEY, name VARCHAR, applied_at TIMESTAMP, "
                "evalcore VARCHAR)")
    for m in all_migrations()[:version]:
        old.execute(m.sql)
        if m.run is not None:
            m.run(old)
        old.execute("INSERT INTO schema_version VALUES (?, ?, current_timestamp, 'old')", [m.version, m.name])
    return old


def fingerprint(con) -> dict[str, list[tuple]]:
    """Every row of every table, sorted: equal fingerprints mean an identical store."""
    out = {}
    for table in DATA_TABLES:
        rows = con.execute(f"SELECT * FROM {table}").fetchall()
        out[table] = sorted(rows, key=repr)
    return out


@pytest.fixture(scope="session")
def default_store_file(tmp_path_factory) -> Path:
    """The embedded default store as `evalcore init` builds it (init_store), built once per test
    session: tests take a copy (copy_default_store) instead of building their own (~20 s each)."""
    from evalcore.services.defaults import init_store

    path = tmp_path_factory.mktemp("default-store") / "default.duckdb"
    c = connect(path)
    try:
        init_store(c)
        c.execute("CHECKPOINT")   # everything in the one file: a copy of it is the whole store
    finally:
        c.close()
    return path


def copy_default_store(source: Path, dest: Path) -> Path:
    """A private copy of the session's default store at `dest` (its folder made)."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(source, dest)
    return dest


@pytest.fixture
def con(tmp_path):
    c = connect(tmp_path / "store.duckdb")
    yield c
    c.close()


TOY_ITEMS = [
    {"item_id": "t1", "dataset": "toy", "track": "toy/chitchat", "dialogue_id": "d1",
     "context": ["你好", "你好呀"], "references": ["今天天气不错"], "skill": "chitchat"},
    {"item_id": "t2", "dataset": "toy", "track": "toy/chitchat", "dialogue_id": "d1",
     "context": ["你好"], "references": [], "grounding": {"persona": ["我喜欢猫"]}},
    {"item_id": "k1", "dataset": "toy", "track": "toy/knowledge", "context": ["看过《我是山姆》吗？"],
     "references": ["看过", "没看过"], "grounding": {"knowledge": [["我是山姆", "导演", "杰茜·尼尔森"]]}},
]


def tiny_bert(path: Path, text: str, classifier: bool = False) -> Path:
    """A tiny BertModel (or one-output classifier, BLEURT's shape) with a character vocabulary of `text`, saved in
    `path`: bert-score loads it offline in a hundredth of a second (../shared/MODELS.md, "Tests")."""
    import torch
    from transformers import BertConfig, BertForSequenceClassification, BertModel, BertTokenizerFast

    chars = sorted(set(text + "他们她它是的了不在有这个"))
    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *chars]
    path.mkdir(parents=True, exist_ok=True)
    (path / "vocab.txt").write_text("\n".join(vocab) + "\n", encoding="utf-8")
    tok = BertTokenizerFast(vocab={t: i for i, t in enumerate(vocab)}, tokenize_chinese_chars=True)
    tok.model_max_length = 64
    tok.save_pretrained(str(path))
    torch.manual_seed(0)
    config = BertConfig(vocab_size=len(vocab), hidden_size=32, num_hidden_layers=3, num_attention_heads=4,
                        intermediate_size=64, max_position_embeddings=64, num_labels=1)
    model = (BertForSequenceClassification if classifier else BertModel)(config).eval()
    model.save_pretrained(str(path))
    return path


def edit_record_value(record: Path, out: Path, metric: str, item_id: str | None = None,
                      model: str | None = None, delta: float = 0.25) -> tuple[str, str, float]:
    """A copy of evaluation record `record` at `out` with one per-response value of `metric` raised by `delta`
    (the given item's and model's, else the first with a value); returns (item_id, model, the true value)."""
    import io
    import zipfile

    import pandas as pd

    with zipfile.ZipFile(record) as zin, zipfile.ZipFile(out, "w") as zout:
        for info in zin.infolist():
            data = zin.read(info.filename)
            if info.filename == "tables/metric_values.parquet":
                values = pd.read_parquet(io.BytesIO(data))
                chosen = (values["metric"] == metric) & values["value"].notna()
                if item_id is not None:
                    chosen &= (values["item_id"] == item_id) & (values["model"] == model)
                row = values.index[chosen][0]
                found = (values.at[row, "item_id"], values.at[row, "model"], float(values.at[row, "value"]))
                values.at[row, "value"] = found[2] + delta
                buffer = io.BytesIO()
                values.to_parquet(buffer, index=False)
                data = buffer.getvalue()
            zout.writestr(info, data)
    return found


def write_jsonl(path: Path, rows: list) -> Path:
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    return path


@pytest.fixture
def toy(con, tmp_path):
    """A store with three toy items and two models' responses."""
    from evalcore.ingest.items import import_items
    from evalcore.ingest.responses import import_responses

    import_items(con, write_jsonl(tmp_path / "items.jsonl", TOY_ITEMS))
    (tmp_path / "resp.csv").write_text("item_id,model,response\nt1,m1,天气很好\nt2,m1,你好\nt1,m2,嗯\n", encoding="utf-8")
    import_responses(con, tmp_path / "resp.csv", dataset="toy", track="toy/chitchat")
    return con


@pytest.hookimpl(tryfirst=True)
def pytest_cmdline_main(config):
    """The slow set runs in this one process, not in pyproject's xdist workers: its real browsers, servers,
    SIGKILLed commands and timed waits must not compete for the cores with other tests."""
    expr = config.option.markexpr or ""
    if "slow" in expr and "not slow" not in expr and getattr(config.option, "numprocesses", None):
        config.option.numprocesses = 0
        config.option.dist = "no"


def pytest_configure(config):
    config.addinivalue_line("markers", "slow: long training, the real converted models, a real browser, SIGKILLed "
                            "commands, a clean-clone install; left out of plain `python -m pytest` (pyproject's addopts), "
                            "run by `python -m pytest -m slow`, which CI runs as its second step")
