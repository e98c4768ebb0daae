"""Yeh et al. 2021, Tables 4 and 5, recomputed from the raw USR and GRADE data through the generic
importers (bench/yeh2021.py): turn-level BLEU-4, ROUGE-L and METEOR to the printed digit, except
ROUGE-L where a text holds a double space, which the test traces to pycocoevalcap's own splitting."""
import shutil

import numpy as np
import pytest
from scipy import stats

from bench import yeh2021
from evalcore.metrics import meteor15
from support import shared

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(shutil.which("java") is None or meteor15.jar() is None,
                                 reason="METEOR 1.5 needs a Java runtime (apt-get install default-jre-headless)")]

# Turn-level cells where pycocoevalcap's ROUGE-L (nlg-eval, which Yeh et al. ran) counts the empty
# strings that split(" ") makes of a double space as words; ours splits on any whitespace.
DOUBLE_SPACE = {("grade-dailydialog/chitchat", "ROUGE"), ("grade-empatheticdialogues/chitchat", "ROUGE")}


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    data = shared()
    work = tmp_path_factory.mktemp("yeh")
    db = work / "yeh.duckdb"
    yeh2021.build(db, work, data, "space")
    return db


def test_turn_level_equals_the_published_tables(store):
    cells = yeh2021.overall(yeh2021.correlations(store, "turn", "space"))
    assert len(cells) == 5 * 3 * 2
    for (track, metric, method), r in cells.items():
        assert r["n"] == {"usr-topicalchat/knowledge": 300, "usr-personachat/persona": 240,
                          "grade-convai2/persona": 600}.get(track, 300)
        if (track, metric) in DOUBLE_SPACE:
            continue
        assert round(r["r"], 3) == r["published"], (track, metric, method, r["r"], r["published"])


def test_the_rouge_differences_come_from_double_spaces():
    """pycocoevalcap's Rouge on the texts as GRADE ships them gives the published values; the same
    code on whitespace-collapsed texts gives ours (DailyDialog .155/.148, Empathetic .021/-.024)."""
    from pycocoevalcap.rouge.rouge import Rouge

    data = shared()
    expected = {"dailydialog": ((0.154, 0.147), (0.155, 0.148)), "empatheticdialogues": ((0.029, -0.013), (0.021, -0.024))}
    for folder, (published, ours) in expected.items():
        raw, collapsed, human = [], [], []
        for _, refs, hyps, scores in yeh2021.grade_texts(data, folder).values():
            human += [np.mean(tens) for tens in scores]
            for h, ref in zip(hyps, refs):
                raw.append(Rouge().calc_score([h.strip()], [ref.strip()]))
                collapsed.append(Rouge().calc_score([" ".join(h.split())], [" ".join(ref.split())]))
        assert sum(a != b for a, b in zip(raw, collapsed)) > 0
        for values, want in ((raw, published), (collapsed, ours)):
            got = (round(stats.pearsonr(values, human).statistic, 3), round(stats.spearmanr(values, human).statistic, 3))
            assert got == want


def test_system_level_is_the_mean_of_sentence_values(store):
    """Yeh et al. aggregate a system as the mean of its sentence values: with it every system-level
    cell with at least three systems is the published one; corpus BLEU-4 gives GRADE ConvAI2's -0.201.
    Two systems (GRADE DailyDialog, Empathetic) make any correlation +-1: no value, with the reason."""
    cells = yeh2021.overall(yeh2021.correlations(store, "system", "space", "sentence-mean"))
    for (track, metric, method), r in cells.items():
        if r["n"] == 2:
            assert r["r"] is None and r["note"] == "n = 2 < 3" and abs(r["published"]) == 1
        else:
            assert round(r["r"], 3) == r["published"], (track, metric, method)
    corpus = yeh2021.overall(yeh2021.correlations(store, "system", "space"))
    assert round(corpus[("grade-convai2/persona", "BLEU4", "pearson")]["r"], 3) == -0.201
