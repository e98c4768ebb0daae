"""A folder as FastChat's llm_judge writes it (mtbench_folder: questions, answers, a reference, single and pairwise
judgments of three models), with the numbers the tests expect of it."""
from __future__ import annotations

from support import write_jsonl

# ---------------------------------------------------------------------------------------------- MT-Bench
QUESTIONS = [
    {"question_id": 81, "category": "writing", "turns": ["Write a travel blog post.", "Rewrite it with A."]},
    {"question_id": 101, "category": "reasoning", "turns": ["You overtake the second person.", "And the last?"],
     "reference": ["You are in second place.", "That cannot happen."]},
    {"question_id": 130, "category": "coding", "turns": ["Write a sort."], "reference": [""]},
]


MODELS = ["alpaca", "vicuna", "llama"]


# Single-answer grades by gpt-4 per (item, model); -1 is FastChat's "could not parse"; llama's 130 is not judged.
SCORES = {("81-t1", "alpaca"): 8, ("81-t2", "alpaca"): 6, ("101-t1", "alpaca"): 3, ("101-t2", "alpaca"): -1,
          ("130-t1", "alpaca"): 5,
          ("81-t1", "vicuna"): 9, ("81-t2", "vicuna"): 7, ("101-t1", "vicuna"): 4, ("101-t2", "vicuna"): 2,
          ("130-t1", "vicuna"): 10,
          ("81-t1", "llama"): 5, ("81-t2", "llama"): 4, ("101-t1", "llama"): 1, ("101-t2", "llama"): 2}


# (item, model_1, model_2, g1_winner, g2_winner)
GAMES = [("81-t1", "alpaca", "vicuna", "model_2", "model_2"),   # vicuna wins
         ("81-t1", "alpaca", "llama", "model_1", "model_1"),    # alpaca wins
         ("81-t1", "vicuna", "llama", "model_1", "model_2"),    # inconsistent: a tie
         ("101-t1", "alpaca", "vicuna", "tie", "tie"),          # tie
         ("101-t1", "vicuna", "llama", "model_1", "error"),     # left out
         ("130-t1", "vicuna", "llama", "model_1", "model_1"),   # vicuna wins
         ("81-t2", "alpaca", "vicuna", "tie", "model_1")]       # first verdict tie (and inconsistent): a tie


def prompt(kind: str, item: str) -> str:
    base = "single" if kind == "single" else "pair"
    name = f"{base}-math-v1" if item.startswith("101") else f"{base}-v1" if kind == "single" else "pair-v2"
    return name + ("-multi-turn" if item.endswith("t2") else "")


def mtbench_folder(root):
    """A folder as FastChat's llm_judge writes it (data/mt_bench/...)."""
    root.mkdir()
    write_jsonl(root / "question.jsonl", QUESTIONS)
    (root / "model_answer").mkdir()
    for m in MODELS:
        write_jsonl(root / "model_answer" / f"{m}.jsonl", [
            {"question_id": q["question_id"], "answer_id": f"{m}{q['question_id']}", "model_id": m,
             "choices": [{"index": 0, "turns": [f"{m} answers {q['question_id']} turn {k + 1}"
                                                for k in range(len(q["turns"]))]}], "tstamp": 1.0}
            for q in QUESTIONS])
    (root / "reference_answer").mkdir()
    write_jsonl(root / "reference_answer" / "gpt-4.jsonl", [
        {"question_id": 101, "model_id": "gpt-4", "choices": [{"index": 0, "turns": [
            "You are in second place.", "You would be second to last."]}]}])
    (root / "model_judgment").mkdir()
    write_jsonl(root / "model_judgment" / "gpt-4_single.jsonl", [
        {"question_id": int(item.split("-")[0]), "model": m, "judge": ["gpt-4", prompt("single", item)],
         "user_prompt": "...", "judgment": f"Rating: [[{s}]]", "score": s, "turn": int(item[-1]), "tstamp": 1.0}
        for (item, m), s in SCORES.items()])
    write_jsonl(root / "model_judgment" / "gpt-4_pair.jsonl", [
        {"question_id": int(item.split("-")[0]), "model_1": m1, "model_2": m2, "g1_winner": g1, "g2_winner": g2,
         "judge": ["gpt-4", prompt("pair", item)], "g1_user_prompt": "...", "g1_judgment": "...",
         "g2_user_prompt": "...", "g2_judgment": "...", "turn": int(item[-1]), "tstamp": 1.0}
        for item, m1, m2, g1, g2 in GAMES])
    return root
