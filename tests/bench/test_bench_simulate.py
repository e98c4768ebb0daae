"""bench/simulate.py runs: a tiny run of simulated conversations through `evalcore chat simulate` stores every
conversation whole with no request sent twice, and a run SIGKILLed once and resumed stores them whole too; its
endpoint bench/sim_endpoint.py plays the user by counting its own turns (the figures themselves are the benchmark's,
in docs/development/benchmarks.md, not a test's)."""
from __future__ import annotations

import json
import subprocess
import sys

from bench.sim_endpoint import system_turn, user_turn
from support import ROOT, copy_default_store


def bench(tmp_path, store, *extra: str) -> tuple[dict, str]:
    out = tmp_path / "sim.json"
    done = subprocess.run([sys.executable, str(ROOT / "bench" / "simulate.py"), "--store", str(store),
                           "--out", str(out), *extra], capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert done.returncode == 0, done.stdout + done.stderr
    return json.loads(out.read_text(encoding="utf-8")), done.stdout


def test_a_tiny_simulation_benchmark_stores_every_conversation_whole(tmp_path, default_store_file):
    store = copy_default_store(default_store_file, tmp_path / "init.duckdb")
    s, stdout = bench(tmp_path, store, "--scenarios", "3", "--per-scenario", "2", "--rounds", "2", "--delay", "0.01")
    assert s["conversations"] == 6 and s["whole"] == 6 and s["not_whole"] == 0 and s["key_repeats"] == 0
    assert s["states"] == {"rated": 6}
    # 6 conversations x (2 user messages + 2 replies) stored; each also asked for "[END]" and its questionnaire
    assert s["messages_stored"] == 6 * 4
    assert s["requests_by_kind"] == {"sys": 12, "user": 12, "end": 6, "rating": 6, "other": 0}
    assert s["requests"] == s["requests_needed"] == 6 * 6 and s["requests_sent_again"] == 0
    assert s["ideal_s"] == round(36 * 0.01 / 32, 2) and 0 < s["share_of_ideal"] <= 1
    assert s["client_cpu_ms_per_message"] > 0 and s["rss"]["rss_mb_max"] > 0
    # started again on the finished task it sends nothing
    assert s["idle_run"]["returncode"] == 0 and s["idle_run"]["requests_sent"] == 0
    assert "6 of 6 conversations whole" in stdout


def test_a_simulation_killed_once_and_resumed_is_whole(tmp_path, default_store_file):
    store = copy_default_store(default_store_file, tmp_path / "init.duckdb")
    s, _ = bench(tmp_path, store, "--scenarios", "4", "--per-scenario", "2", "--rounds", "2", "--delay", "0.05",
                 "--kills", "1")
    assert [r["returncode"] for r in s["runs"]][-1] == 0 and len(s["runs"]) == 2
    assert s["runs"][0]["killed_at_requests"] >= 8 * 6 // 2   # killed at half the requests a whole run needs
    assert s["whole"] == s["conversations"] == 8 and s["key_repeats"] == 0 and s["messages_stored"] == 8 * 4
    # what the killed run had not stored (in flight, or answered and not yet written) is asked again, nothing else
    assert s["requests_needed"] == 8 * 4 + 2 * 8 and s["requests"] >= s["requests_needed"]
    assert 0 <= s["runs"][0]["unstored_at_kill"] <= s["runs"][0]["killed_at_requests"]


def test_the_endpoint_plays_the_user_by_its_own_turns():
    system = {"role": "system", "content": "你在扮演一个用户"}
    assert user_turn([system, {"role": "user", "content": "（对话开始）"}], 2) == ("user", "第1轮：请再多讲一点。")
    one = [system, {"role": "user", "content": "（对话开始）"}, {"role": "assistant", "content": "第1轮：..."},
           {"role": "user", "content": "第1轮的回答"}]
    assert user_turn(one, 2) == ("user", "第2轮：请再多讲一点。")
    two = one + [{"role": "assistant", "content": "第2轮：..."}, {"role": "user", "content": "第2轮的回答"}]
    assert user_turn(two, 2) == ("end", "[END]")
    # the questionnaire: every dimension at its lowest, as its own lines give it
    ask = two[:-1] + [{"role": "user", "content": '第2轮的回答\n\n只输出一个 JSON 对象：\n"Info": 0..2 (信息)\n'
                                                  '"Coh": 1..5\n另加 "goal"'}]
    kind, text = user_turn(ask, 2)
    assert kind == "rating" and json.loads(text) == {"Info": 0, "Coh": 1, "goal": True}
    assert system_turn([system, {"role": "user", "content": "a"}, {"role": "assistant", "content": "b"},
                        {"role": "user", "content": "c"}]).startswith("第2轮")
