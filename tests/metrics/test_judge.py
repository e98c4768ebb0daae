"""LLM judge metrics end to end against a local OpenAI-compatible server (tests/support/judge_server.py): values
and signatures stored, a second run asks nothing, failures kept with their reason and never a number."""
import pytest

from evalcore.cli import main
from evalcore.store import connect
from support import write_jsonl
from support.judge_server import JudgeServer

ITEMS = [{"item_id": f"i{k}", "dataset": "jd", "track": "jd/chitchat", "context": ["你好", f"问题{k}"],
          "references": [f"回答{k}"]} for k in range(6)]
# markers the server answers by (see judge_server.py): SCORE=n -> [[n]], MALFORMED -> no rating, WIN in
# assistant B's answer -> [[B]] (else always [[A]]), FLAKY -> a 500 once, then an answer
GOOD = ["SCORE=2 好的", "SCORE=1 嗯", "WIN SCORE=2 对", "MALFORMED 啊", "SCORE=0 哦", "FLAKY SCORE=1 行"]
BASE = ["SCORE=1 a", "SCORE=1 b", "SCORE=1 c", "SCORE=1 d", "SCORE=1 e", "SCORE=1 f"]
METRICS = "Judge-Coh,Judge-MTBench,Judge-Pairwise"


def judge_args(srv, db):
    return ["score", "--db", db, "--metrics", METRICS, "--judge-base-url", srv.url, "--judge-model", "tiny-judge",
            "--judge-baseline", "base", "--judge-retries", "2", "--judge-concurrency", "4"]


@pytest.fixture
def db(tmp_path):
    db = str(tmp_path / "s.duckdb")
    assert main(["import", "items", str(write_jsonl(tmp_path / "i.jsonl", ITEMS)), "--db", db]) == 0
    rows = [f"i{k},{m},{t}" for k in range(6) for m, t in (("good", GOOD[k]), ("base", BASE[k]))]
    (tmp_path / "r.csv").write_text("item_id,model,response\n" + "\n".join(rows) + "\n", encoding="utf-8")
    assert main(["import", "responses", str(tmp_path / "r.csv"), "--db", db, "--dataset", "jd",
                 "--track", "jd/chitchat"]) == 0
    return db


def system(db, name):
    con = connect(db)
    try:
        return dict(con.execute("SELECT model, value FROM system_scores WHERE name = ? AND NOT ends_with(signature, "
                                "'sentence-mean')", [name]).fetchall()), \
            con.execute("SELECT DISTINCT signature FROM system_scores WHERE name = ?", [name]).fetchall()
    finally:
        con.close()


def reasons(db, name):
    con = connect(db)
    try:
        return sorted(r for (r,) in con.execute(
            "SELECT m.reason FROM metric_scores m JOIN metric_signatures s USING (signature) WHERE s.metric = ? "
            "AND m.value IS NULL", [name]).fetchall())
    finally:
        con.close()


def test_judge_values_signatures_cache_and_reasons(db, capsys):
    with JudgeServer() as srv:
        assert main(judge_args(srv, db)) == 0
        first = srv.requests
        out = capsys.readouterr()
        assert srv.bodies[0]["model"] == "tiny-judge" and srv.bodies[0]["temperature"] == 0.0
        # G-Eval Coh on 0-2: good 2, 1, 2, (malformed), 0, 1 -> mean of the five read
        values, sigs = system(db, "Judge-Coh")
        assert values["good"] == pytest.approx((2 + 1 + 2 + 0 + 1) / 5)
        assert values["base"] == pytest.approx(1.0)
        sig = [s for (s,) in sigs if not s.endswith("sentence-mean")][0]
        assert sig.startswith("Judge-Coh|judge:tiny-judge@127.0.0.1:") and "|t:0.0|" in sig
        assert "|prompt:geval-zh-" in sig and "|parse:fastchat-[[n]]|" in sig
        # MT-Bench 1-10: SCORE=0 is outside the scale: no value, the reason says so
        values, _ = system(db, "Judge-MTBench")
        assert values["good"] == pytest.approx((2 + 1 + 2 + 1) / 4)
        assert [r.split(":")[0] for r in reasons(db, "Judge-MTBench")] == ["unparseable", "unparseable"]
        assert any("outside 1-10" in r for r in reasons(db, "Judge-MTBench"))
        # pairwise vs base, both orders; the server always says [[A]] unless B's answer holds WIN:
        # i0, i1, i5: won first, lost swapped = 0.5; i2 (WIN): won both = 1; i3 malformed: no value
        values, sigs = system(db, "Judge-Pairwise")
        assert values == {"good": pytest.approx((0.5 + 0.5 + 1.0 + 0.5 + 0.5) / 5)}   # i4: SCORE=0 is no verdict marker
        assert any("|baseline:base|orders:both|" in s for (s,) in sigs)
        # position bias: 5 pairs, 4 changed with the order; verdicts A: 2+2+1+2+2 = 9 of 10
        assert "the verdict changed with the order in 80%, the first position was chosen in 90%" in out.out
        assert "Judge-Coh: 1 of 12 judgments gave no value" in out.out
        # the second run asks nothing: every judgment (and every unparseable answer) is cached
        assert main(judge_args(srv, db)) == 0
        assert srv.requests == first
        assert "0 new response scores" in capsys.readouterr().out


def test_failed_requests_are_kept_with_the_reason_and_asked_again(db, tmp_path, capsys):
    (tmp_path / "down.csv").write_text("item_id,model,response\ni0,down,FAIL500 嗨\ni1,down,SCORE=2 好\n",
                                       encoding="utf-8")
    assert main(["import", "responses", str(tmp_path / "down.csv"), "--db", db, "--dataset", "jd",
                 "--track", "jd/chitchat"]) == 0
    with JudgeServer() as srv:
        assert main(judge_args(srv, db)) == 0
        values, _ = system(db, "Judge-Coh")
        assert values["down"] == pytest.approx(2.0)   # the failed one is no number, not a 0
        why = [r for r in reasons(db, "Judge-Coh") if r.startswith("request failed")]
        assert len(why) == 1 and "HTTP 500 after 2 attempts" in why[0]
        before = srv.requests
        assert main(judge_args(srv, db)) == 0
        # only the failed requests are made again: Coh 1 and MT-Bench 1 conversation, pairwise 2 orders,
        # each tried twice
        assert srv.requests - before == (1 + 1 + 2) * 2
    capsys.readouterr()


def test_without_an_endpoint_judges_are_unavailable_with_the_reason(db, capsys):
    assert main(["score", "--db", db, "--metrics", "judge"]) == 0
    out = capsys.readouterr().out
    assert "Judge-Coh unavailable: no judge endpoint: give --judge-base-url and --judge-model" in out
    con = connect(db)
    assert con.execute("SELECT count(*) FROM system_scores WHERE name LIKE 'Judge-%'").fetchall()[0][0] == 0
    con.close()
    assert main(["score", "--db", db, "--metrics", "Judge-Coh"]) == 1   # asked for by name: a failure


def test_python_api_judges_without_a_store():
    import evalcore
    from evalcore.metrics.judge import Endpoint

    with JudgeServer() as srv:
        result = evalcore.score(["SCORE=2 很好", "MALFORMED 嗯"], [["好"], ["嗯"]], metrics=["Judge-Info"],
                                contexts=[["推荐一部电影"], ["你好"]], judge=Endpoint(srv.url, "tiny-judge"))
    assert result.corpus["Judge-Info"] == 2.0
    assert result.sentence["Judge-Info"].isna().tolist() == [False, True]
    assert result.reasons["Judge-Info"][0] is None and result.reasons["Judge-Info"][1].startswith("unparseable")
    assert result.signatures["Judge-Info"].startswith("Judge-Info|judge:tiny-judge@")
