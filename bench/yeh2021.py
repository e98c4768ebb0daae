"""Yeh et al. 2021 ("A Comprehensive Assessment of Dialog Evaluation Metrics"), Tables 4 and 5,
recomputed from the raw USR and GRADE data in ../shared/data through the generic importers.

    python bench/yeh2021.py [--shared ../shared/data] [--keep DIR] [--tokenizer space]

Converts USR-TopicalChat, USR-PersonaChat and GRADE ConvAI2 / DailyDialog / EmpatheticDialogues
into the files a user would write (items JSONL, one responses CSV, one ratings CSV per track), then
runs the CLI as a user would: `import items`, `import responses`, `import ratings`, `import
published` (bench/yeh2021_published: the two tables' BLEU-4, METEOR and ROUGE-L rows, typed in
from the paper), `score --metrics BLEU4,ROUGE,METEOR` (corpus and sentence-mean system values) and
`correlate --compare-published` at turn and system level. Prints a markdown table, ours next to the
published value.

How the data become a store (dataset `yeh2021`, language `en`):
- USR: one item per dialogue, its context the dialogue's turns, its reference the human reply
  ("Original Ground Truth", which is also imported as a model, as USR ships it; correlations leave
  it out with --exclude-models); annotators a1-a3, USR's six dimensions.
- GRADE: one item per line of a model's human_ctx.txt (models that share a context file share the
  items), its reference the line of human_ref.txt; the ten scores of human_judgement.json (sorted by
  ID, they follow the lines; their mean is human_score.txt) as annotators r1-r10 of dimension
  Coherence. GRADE does not say who gave which score: r1 is the first score of each response, not
  one person.
"""
from __future__ import annotations

import argparse
import csv
import hashlib
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PUBLISHED = Path(__file__).resolve().parent / "yeh2021_published"
DATASET = "yeh2021"
HUMAN = "Original Ground Truth"
USR = {"usr-topicalchat/knowledge": "tc_usr_data.json", "usr-personachat/persona": "pc_usr_data.json"}
USR_SCALES = {"Understandable": (0, 1), "Natural": (1, 3), "Maintains Context": (1, 3), "Engaging": (1, 3),
              "Uses Knowledge": (0, 1), "Overall": (1, 5)}
GRADE = {"grade-convai2/persona": "convai2", "grade-dailydialog/chitchat": "dailydialog",
         "grade-empatheticdialogues/chitchat": "empatheticdialogues"}
GRADE_LABEL = {"dailydialog": "dailydialog_EVAL"}  # human_judgement.json's name where it differs from the folder
METRICS = ("BLEU4", "ROUGE", "METEOR")
SHOWN = {"BLEU4": "BLEU-4", "ROUGE": "ROUGE-L", "METEOR": "METEOR"}


def convert(shared: Path, out: Path) -> dict[str, Path]:
    """Write items.jsonl, responses.csv and ratings-<track>.csv under `out`; returns the ratings files."""
    items, responses, ratings = [], [], {}
    for track, name in USR.items():
        rows = []
        for n, dialogue in enumerate(json.loads((shared / "usr" / name).read_text(encoding="utf-8"))):
            item_id = f"{track.split('/')[0]}-{n:03d}"
            truth = [r["response"].strip() for r in dialogue["responses"] if r["model"] == HUMAN]
            grounding = ({"knowledge": [dialogue["fact"].strip()]} if "topical" in track else
                         {"persona": [p.strip() for p in dialogue["fact"].split("your persona:") if p.strip()]})
            items.append({"item_id": item_id, "dataset": DATASET, "language": "en", "track": track,
                          "context": [t for t in dialogue["context"].split("\n") if t.strip()],
                          "references": truth, "grounding": grounding})
            for r in dialogue["responses"]:
                responses.append({"track": track, "item_id": item_id, "model": r["model"], "response": r["response"].strip()})
                for dim in USR_SCALES:
                    for a, score in enumerate(r[dim], 1):
                        rows.append({"item_id": item_id, "model": r["model"], "annotator": f"a{a}", "dimension": dim,
                                     "score": score})
        ratings[track] = rows
    for track, folder in GRADE.items():
        rows, shared_items = [], {}
        for model, (ctx, refs, hyps, scores) in grade_texts(shared, folder).items():
            key = hashlib.sha256(("\n".join(ctx) + "\0" + "\n".join(refs)).encode()).hexdigest()
            if key not in shared_items:  # the first model (by name) with this context file names its items
                shared_items[key] = model
                for i, (c, ref) in enumerate(zip(ctx, refs)):
                    items.append({"item_id": f"{folder}-{model}-{i:03d}", "dataset": DATASET, "language": "en",
                                  "track": track, "context": c.split("|||"), "references": [ref]})
            owner = shared_items[key]
            for i, (hyp, tens) in enumerate(zip(hyps, scores)):
                item_id = f"{folder}-{owner}-{i:03d}"
                responses.append({"track": track, "item_id": item_id, "model": model, "response": hyp})
                rows += [{"item_id": item_id, "model": model, "annotator": f"r{a}", "dimension": "Coherence",
                          "score": s} for a, s in enumerate(tens, 1)]
        ratings[track] = rows
    out.mkdir(parents=True, exist_ok=True)
    (out / "items.jsonl").write_text("".join(json.dumps(i, ensure_ascii=False) + "\n" for i in items), encoding="utf-8")
    _write_csv(out / "responses.csv", responses)
    files = {}
    for track, rows in ratings.items():
        files[track] = out / f"ratings-{track.replace('/', '_')}.csv"
        _write_csv(files[track], rows)
    return files


def grade_texts(shared: Path, folder: str) -> dict[str, tuple[list[str], list[str], list[str], list[list[int]]]]:
    """GRADE's data for one dialogue corpus: model -> (contexts, references, responses, the ten scores of
    each response), lines in file order (human_judgement.json sorted by ID follows them)."""
    base = shared / "grade" / "evaluation"
    label = GRADE_LABEL.get(folder, folder)
    scores: dict[str, list[list[int]]] = {}
    for j in sorted(json.loads((base / "human_score" / "human_judgement.json").read_text(encoding="utf-8")),
                    key=lambda j: j["ID"]):
        if j["Dataset"] == label:
            scores.setdefault(j["DialogModel"], []).append(json.loads(j["HumanScores"]))
    out = {}
    for model_dir in sorted(p for p in (base / "eval_data" / folder).iterdir() if p.is_dir()):
        model = model_dir.name
        texts = [_lines(model_dir / f"human_{kind}.txt") for kind in ("ctx", "ref", "hyp")]
        assert all(len(t) == len(scores[model]) == 150 for t in texts), (folder, model)
        out[model] = (*texts, scores[model])
    return out


def _lines(path: Path) -> list[str]:
    return path.read_text(encoding="utf-8").rstrip("\n").split("\n")


def _write_csv(path: Path, rows: list[dict]) -> None:
    with path.open("w", encoding="utf-8", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)


def cli(*args: str) -> str:
    proc = subprocess.run([sys.executable, "-m", "evalcore", *args], cwd=ROOT, capture_output=True, text=True)
    if proc.returncode != 0:
        raise SystemExit(f"evalcore {' '.join(args)} failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}")
    return proc.stdout


def build(db: Path, work: Path, shared: Path, tokenizer: str) -> None:
    ratings = convert(shared, work)
    cli("import", "items", str(work / "items.jsonl"), "--db", str(db))
    cli("import", "responses", str(work / "responses.csv"), "--db", str(db), "--dataset", DATASET)
    for track, path in ratings.items():
        scales = USR_SCALES if track in USR else {"Coherence": (1, 5)}
        cli("import", "ratings", str(path), "--db", str(db), "--dataset", DATASET, "--track", track,
            *[x for d, (lo, hi) in scales.items() for x in ("--scale", f"{d}={lo}:{hi}")])
    cli("import", "published", str(PUBLISHED), "--db", str(db), "--dataset", DATASET)
    for aggregate in ("corpus", "sentence-mean"):
        cli("score", "--db", str(db), "--dataset", DATASET, "--metrics", ",".join(METRICS), "--tokenizer", tokenizer,
            "--system-aggregate", aggregate)


def correlations(db: Path, level: str, tokenizer: str, aggregate: str = "corpus") -> list[dict]:
    out = cli("correlate", "--db", str(db), "--dataset", DATASET, "--level", level, "--method", "pearson,spearman",
              "--tokenizer", tokenizer, "--exclude-models", HUMAN, "--compare-published",
              "--system-aggregate", aggregate, "--format", "json")
    return json.loads(out)


def overall(rows: list[dict]) -> dict[tuple[str, str, str], dict]:
    """The rows the tables print: (track, metric, method) -> row, for each track's overall score."""
    return {(r["track"], r["metric"], r["method"]): r for r in rows
            if r["metric"] in METRICS and r["dimension"] in ("Overall", "Coherence")}


def table(rows: list[dict], level: str) -> str:
    """Markdown: per track and metric, Pearson and Spearman, ours / published, and n."""
    cells = overall(rows)
    order = list(USR) + list(GRADE)
    lines = [f"| data ({level}) | metric | n | Pearson ours | published | Spearman ours | published |",
             "|---|---|---|---|---|---|---|"]
    for track, metric in sorted({k[:2] for k in cells}, key=lambda k: (order.index(k[0]), METRICS.index(k[1]))):
        p, s = cells[(track, metric, "pearson")], cells[(track, metric, "spearman")]
        lines.append(f"| {track.split('/')[0]} | {SHOWN[metric]} | {p['n']} | {_num(p['r'])} | {_num(p['published'])} | "
                     f"{_num(s['r'])} | {_num(s['published'])} |")
    return "\n".join(lines)


def _num(x) -> str:
    return "" if x is None else f"{x:.3f}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--shared", default=str(ROOT.parent / "shared" / "data"))
    ap.add_argument("--keep", help="keep the converted files and the store in this folder")
    ap.add_argument("--tokenizer", default="space",
                    help="BLEU-4 and ROUGE-L tokens: 'space', as pycocoevalcap (nlg-eval) splits the texts")
    args = ap.parse_args()
    work = Path(args.keep or tempfile.mkdtemp(prefix="evalcore-yeh-"))
    db = work / "yeh2021.duckdb"
    if not db.exists():
        started = time.perf_counter()
        build(db, work, Path(args.shared), args.tokenizer)
        print(f"built {db} in {time.perf_counter() - started:.1f} s", file=sys.stderr)
    print(table(correlations(db, "turn", args.tokenizer), "turn"))
    print()
    print(table(correlations(db, "system", args.tokenizer, "sentence-mean"), "system (sentence-mean)"))
    print()
    print(table(correlations(db, "system", args.tokenizer), "system (corpus)"))

if __name__ == "__main__":
    main()
