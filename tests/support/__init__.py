"""What the tests share beyond fixtures: where the project and ../shared/data are, a small toy dataset, stores at
an old schema version, a fingerprint of a whole store, tiny models and edited records. Fixtures stay in
tests/conftest.py; the helpers of one kind of test are the modules beside this one (browser, apptest,
streamlit_session, judge_server, ...)."""
from __future__ import annotations

import json
import math
import shutil
import socket
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from evalcore.store import DATA_TABLES

ROOT = Path(__file__).resolve().parents[2]
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


def copy_default_store(source: Path, dest: Path) -> Path:
    """A private copy of the session's default store at `dest` (its folder made)."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(source, dest)
    return dest


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


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on now (for a server a test starts)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def fastchat_mle(df: pd.DataFrame, SCALE=400, BASE=10, INIT=1000) -> pd.Series:
    """FastChat's compute_mle_elo (fastchat/serve/monitor/elo_analysis.py), as written there, with the
    winner column built from our votes; sklearn's LogisticRegression without penalty or intercept."""
    sklearn = pytest.importorskip("sklearn.linear_model")
    df = df.assign(winner=np.where(df["score"] == 1, "model_a", np.where(df["score"] == 0, "model_b", "tie")))
    # one change to FastChat's code: each pivot is reindexed to every model (fill 0), so a pair seen in one
    # orientation only is not dropped as NaN (in an arena's battles both orientations occur)
    every = sorted(set(df["model_a"]) | set(df["model_b"]))
    pt = lambda d: pd.pivot_table(d, index="model_a", columns="model_b", aggfunc="size", fill_value=0).reindex(  # noqa: E731
        index=every, columns=every, fill_value=0)
    a_win = pt(df[df["winner"] == "model_a"])
    ties = df[df["winner"] == "tie"]
    tie = pt(ties) if len(ties) else pd.DataFrame(0, index=every, columns=every)
    tie = tie + tie.T
    b_win = pt(df[df["winner"] == "model_b"])
    win = a_win * 2 + b_win.T * 2 + tie
    models = pd.Series(np.arange(len(win.index)), index=win.index)
    p = len(models)
    X, Y, w, row = np.zeros([p * (p - 1) * 2, p]), np.zeros(p * (p - 1) * 2), [], 0
    for ma in win.index:
        for mb in win.columns:
            if ma == mb or math.isnan(win.loc[ma, mb]) or math.isnan(win.loc[mb, ma]):
                continue
            X[row, models[ma]], X[row, models[mb]], Y[row] = math.log(BASE), -math.log(BASE), 1.0
            w.append(win.loc[ma, mb])
            X[row + 1, models[ma]], X[row + 1, models[mb]], Y[row + 1] = math.log(BASE), -math.log(BASE), 0.0
            w.append(win.loc[mb, ma])
            row += 2
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")   # sklearn 1.9 deprecates penalty=None in favour of C=inf: the same fit
        lr = sklearn.LogisticRegression(fit_intercept=False, penalty=None, tol=1e-10, max_iter=100_000)
        lr.fit(X[:row], Y[:row], sample_weight=w)
    return pd.Series(SCALE * lr.coef_[0] + INIT, index=models.index)


def tables_holding(con, needles: list[str], skip: tuple[str, ...] = ()) -> list[str]:
    """The store's tables (but `skip`) where some text column holds one of `needles`: one query per column, in
    DuckDB (reading every table into pandas took seconds on the default store)."""
    import re

    pattern = "|".join(re.escape(n) for n in needles)
    found = []
    columns = con.execute("SELECT table_name, column_name FROM duckdb_columns() WHERE data_type IN ('VARCHAR', 'JSON') "
                          "AND NOT internal ORDER BY table_name, column_name").fetchall()
    for table, column in columns:
        if table in skip or table in found:
            continue
        if con.execute(f'SELECT count(*) FROM "{table}" WHERE regexp_matches("{column}", ?)', [pattern]).fetchall()[0][0]:
            found.append(table)
    return found
