"""`import mtbench`: a FastChat llm_judge data folder (MT-Bench), as FastChat writes it:

  question.jsonl                  question_id, category, turns (the user's turns), optional reference (per turn)
  model_answer/<model>.jsonl      question_id, model_id, choices[0].turns (the model's answer to each turn)
  reference_answer/<name>.jsonl   optional, the same shape as an answer file: item references
  model_judgment/*_single.jsonl   optional: question_id, model, judge [judge model, prompt name], score, turn
  model_judgment/*_pair.jsonl     optional: question_id, model_1, model_2, g1_winner, g2_winner, judge, turn

What is stored, all in one transaction:
- items: one per question and turn, item_id "<question_id>-t<turn>" (81-t1, 81-t2), track "mt-bench/<category>",
  dialogue_id the question_id, context the user's turns up to and including that turn (a model's own earlier
  answers differ per model, so they are not part of the item). An item already stored is reused when its track,
  context and references are the same; otherwise the folder is refused.
- item references: the question's own reference for that turn, then each reference_answer file's answer to that
  turn (files by name), identical texts once.
- responses: a model's answer to turn k is its response to item <question_id>-t<k>. The model is named after its
  file, as FastChat's load_model_answers does (model_id inside is not used; a different one is noted).
- single judgments: an external metric per judge model, "MT-Bench:<judge model>" (e.g. MT-Bench:gpt-4), higher is
  better, scores 1..10; its signature text names the judge model and the prompt names used. FastChat writes -1
  when it could not parse the judge's answer: those are skipped and counted in the notes. A turn-2 judgment is
  made on the whole conversation (FastChat's multi-turn prompt) and scores the answer to turn 2.
- pairwise judgments: table pairwise_judgments (both games' verdicts as FastChat wrote them, 'error' included);
  evalcore.analysis.winrates tallies them the way FastChat's show_result.py does.
"""
from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path

import duckdb

from evalcore.core import language as detection
from evalcore.core.errors import ImportRefused, Problem, short
from evalcore.ingest import lookup
from evalcore.ingest.batch import Batch, ImportReport
from evalcore.ingest.checker import Checker
from evalcore.ingest.formats.dstc10 import same_item, stored_item_contents
from evalcore.ingest.formats.items import check_language, settle_languages
from evalcore.ingest.formats.scores import ExternalValue, external_batch
from evalcore.ingest.readers import Table, read_table

METRIC = "MT-Bench"           # single judgments are stored as f"{METRIC}:{judge model}"
SCALE = (1.0, 10.0)           # FastChat's single-answer grading prompts ask for a rating from 1 to 10
NO_SCORE = -1                 # what FastChat writes when it could not parse the judge's rating
WINNERS = ("model_1", "model_2", "tie", "error")
LAYOUT = ("a FastChat llm_judge folder: question.jsonl, model_answer/<model>.jsonl, optional reference_answer/ "
          "and model_judgment/")


def import_mtbench(con: duckdb.DuckDBPyConnection, folder: str | Path, *, dataset: str, language: str | None = None,
                   shown: str | None = None) -> ImportReport:
    folder = Path(folder)
    name = str(folder)
    if not folder.is_dir():
        raise ImportRefused([Problem(name, "", "", LAYOUT, "not a folder")])
    if not (folder / "question.jsonl").is_file():
        raise ImportRefused([Problem(name, "", "question.jsonl", LAYOUT, "no question.jsonl")])
    answer_files = sorted((folder / "model_answer").glob("*.jsonl"))
    if not answer_files:
        raise ImportRefused([Problem(name, "", "model_answer", LAYOUT, "no model_answer/*.jsonl")])
    check = Checker(name)
    dataset = check.ident({"--dataset": dataset}, "", "--dataset")
    check.refuse_if_any()
    languages = {dataset: lookup.dataset_language(con, dataset)}
    check_language(check, "", dataset, language, languages)
    check.refuse_if_any()

    judged = folder / "model_judgment"
    singles = sorted(judged.glob("*_single.jsonl"))
    pairs = sorted(judged.glob("*_pair.jsonl"))
    ignored = sorted(p.name for p in judged.glob("*") if p.is_file() and p not in singles and p not in pairs)
    tables, problems = {}, []
    for path in [folder / "question.jsonl", *answer_files, *sorted((folder / "reference_answer").glob("*.jsonl")),
                 *singles, *pairs]:
        try:   # read every file, so that a user sees the problems of all of them at once
            tables[path] = read_table(path, kinds=("jsonl",))
        except ImportRefused as exc:
            problems += exc.problems
    if problems:
        raise ImportRefused(problems)

    notes: list[str] = []
    questions = _questions(check, tables.pop(folder / "question.jsonl"))
    batch = Batch()
    items: dict[str, str] = {}                       # item_id -> track, for the judgments
    refs: dict[str, list[str]] = defaultdict(list)   # item_id -> references
    for qid, q in questions.items():
        for k, ref in enumerate(q["reference"]):
            if ref.strip():   # FastChat's question.jsonl gives "" for a turn without a reference
                refs[f"{qid}-t{k + 1}"].append(ref)
    for path in sorted(p for p in tables if p.parent.name == "reference_answer"):
        for qid, turns, _, where in _answers(check, tables.pop(path), questions):
            for k, text in enumerate(turns):
                if text.strip() and text not in refs[f"{qid}-t{k + 1}"]:
                    refs[f"{qid}-t{k + 1}"].append(text)

    stored_items = stored_item_contents(con, dataset)
    reused = 0
    for qid, q in questions.items():
        track = f"mt-bench/{q['category']}"
        batch.track(dataset, track)
        for k in range(len(q["turns"])):
            item_id = f"{qid}-t{k + 1}"
            items[item_id] = track
            context = q["turns"][:k + 1]
            check.file = str(folder / "question.jsonl")
            if item_id in stored_items:
                reused += same_item(check, q["where"], item_id, stored_items[item_id], track, context, refs[item_id])
                continue
            batch.add("items", dataset=dataset, item_id=item_id, track=track, dialogue_id=qid,
                      context=json.dumps(context, ensure_ascii=False), grounding=None, skill=None,
                      origin=f"question.jsonl {q['where']}")
            for i, ref in enumerate(refs[item_id]):
                batch.add("item_references", dataset=dataset, item_id=item_id, ref_index=i, text=ref)

    answered = lookup.response_keys(con, dataset, None)
    texts: dict[tuple[str, str], str] = {}           # (item_id, model) -> the response written in this batch
    models: dict[str, str] = {}                      # model -> its answer file's name
    for path in answer_files:
        table = tables.pop(path)
        check.file = table.file
        model = check.ident({"file name": path.stem}, "", "file name")
        if model is None:
            continue
        if model in models:
            check.add("", "file name", f"one answer file per model (model_answer/{models[model]} names {model!r} "
                      "too)", path.name)
            continue
        models[model] = path.name
        batch.model(model)
        ids: set[str] = set()
        for qid, turns, model_id, where in _answers(check, table, questions):
            if model_id is not None and model_id != model:
                ids.add(model_id)
            for k, text in enumerate(turns):
                item_id = f"{qid}-t{k + 1}"
                if (item_id, model) in answered:
                    check.add(where, "question_id", f"a question model {model!r} has not answered in dataset "
                              f"{dataset!r}", f"{qid!r}, item {item_id!r} already answered")
                    break
                texts[item_id, model] = text
                batch.add("responses", dataset=dataset, item_id=item_id, model=model, text=text,
                          origin=f"model_answer/{path.name} {where}")
        if ids:
            notes.append(f"model_answer/{path.name}: model_id {', '.join(sorted(ids))}; the model is named "
                         f"{model!r} after its file, as FastChat does")
    responded = answered | set(texts)

    values: dict[str, list[tuple[ExternalValue, Path]]] = defaultdict(list)   # judge model -> values
    prompts: dict[str, set[str]] = defaultdict(set)
    failed: dict[str, int] = defaultdict(int)
    for path in singles:
        table = tables.pop(path)
        check.file = table.file
        for rec, where in zip(table.records, table.places):
            item_id, judge, prompt = _judged_item(check, rec, where, questions)
            model = check.ident(rec, where, "model")
            score = check.number(rec, where, "score")
            if None in (item_id, judge, model, score):
                continue
            if (item_id, model) not in responded:
                check.add(where, "model", f"a model with a response (stored or in this import) to item {item_id!r}",
                          repr(model))
                continue
            if score == NO_SCORE:
                failed[judge] += 1
                continue
            if not SCALE[0] <= score <= SCALE[1]:
                check.add(where, "score", f"a rating {SCALE[0]:g}..{SCALE[1]:g} (or {NO_SCORE}: FastChat could not "
                          "parse one)", f"{score:g}")
                continue
            values[judge].append((ExternalValue(item_id, model, score, where), path))
            prompts[judge].add(prompt)

    stored_pairs = set(con.execute("SELECT item_id, model_1, model_2, judge, prompt FROM pairwise_judgments "
                                   "WHERE dataset = ?", [dataset]).fetchall())
    seen: dict[tuple, str] = {}
    errors = 0
    for path in pairs:
        table = tables.pop(path)
        check.file = table.file
        for rec, where in zip(table.records, table.places):
            item_id, judge, prompt = _judged_item(check, rec, where, questions)
            model_1, model_2 = check.ident(rec, where, "model_1"), check.ident(rec, where, "model_2")
            winners = [rec.get(k) for k in ("g1_winner", "g2_winner")]
            for key, winner in zip(("g1_winner", "g2_winner"), winners):
                if winner not in WINNERS:
                    check.add(where, key, "one of " + ", ".join(WINNERS), short(winner))
            if None in (item_id, judge, model_1, model_2) or not set(winners) <= set(WINNERS):
                continue
            if model_1 == model_2:
                check.add(where, "model_2", "a model other than model_1", repr(model_2))
                continue
            missing = [(k, m) for k, m in (("model_1", model_1), ("model_2", model_2)) if (item_id, m) not in responded]
            for key, model in missing:
                check.add(where, key, f"a model with a response (stored or in this import) to item {item_id!r}",
                          repr(model))
            if missing:
                continue
            key = (item_id, model_1, model_2, judge, prompt)
            if key in seen or key in stored_pairs:
                first = f"first at {seen[key]}" if key in seen else "one is stored"
                check.add(where, "judge", f"one judgment per item, model pair and judge ({first})",
                          f"{judge} {prompt} again for {model_1!r} vs {model_2!r} on {item_id!r}")
                continue
            seen[key] = f"{path.name} {where}"
            errors += "error" in winners
            batch.add("pairwise_judgments", dataset=dataset, track=items[item_id], item_id=item_id, model_1=model_1,
                      model_2=model_2, judge=judge, prompt=prompt, g1_winner=winners[0], g2_winner=winners[1],
                      origin=f"model_judgment/{path.name} {where}")
    check.refuse_if_any()   # before the metric: its checks assume the items and responses above are sound

    for judge in sorted(values):
        group = values[judge]
        files = sorted({p for _, p in group})
        # Problems name the judgment file; when a judge's values come from several, the folder and each file.
        check.file = str(files[0]) if len(files) == 1 else name
        judged_values = [v if len(files) == 1 else ExternalValue(v.item_id, v.model, v.value, f"{p.name} {v.where}")
                         for v, p in group]
        signature = (f"FastChat llm_judge single-answer grading; judge {judge}; prompts "
                     + ", ".join(sorted(prompts[judge])))
        metric_batch, metric_notes = external_batch(
            con, check, judged_values, dataset=dataset, metric=f"{METRIC}:{judge}", track=None, higher_is_better=True,
            signature=signature, source=f"import mtbench {Path(shown or folder).name}", pending_tracks=items,
            pending_texts=texts)
        for row in metric_batch.rows.get("external_metrics", []):
            row["description"] = f"MT-Bench single-answer grade 1-10 by judge {judge} (FastChat llm_judge)"
        for table_name, rows in metric_batch.rows.items():
            batch.rows[table_name].extend(rows)
        notes += metric_notes
    for judge, n in sorted(failed.items()):
        notes.append(f"{n:,} single judgment(s) by {judge} with score {NO_SCORE} (FastChat could not parse the "
                     "judge's rating) skipped")
    if errors:
        notes.append(f"{errors:,} pairwise judgment(s) with an 'error' verdict stored; win rates leave them out, "
                     "as FastChat's show_result.py does")
    if ignored:
        notes.append("model_judgment: ignored " + ", ".join(ignored) + " (neither *_single.jsonl nor *_pair.jsonl)")

    counts = {dataset: detection.count([*(t for row in batch.rows.get("items", []) for t in json.loads(row["context"])),
                                        *(row["text"] for row in batch.rows.get("item_references", []))])}
    notes += settle_languages(batch, languages, counts)   # a new dataset without --language: detected
    batch.shown = shown
    report = ImportReport(name, batch.write(con, source=folder))
    report.tracks = sorted(set(items.values()))
    report.notes.append(f"{len(questions):,} questions, {len(items):,} items"
                        + (f" ({reused:,} of them already stored, reused)" if reused else ""))
    report.notes += check.notes() + notes
    return report


def _questions(check: Checker, table: Table) -> dict[str, dict]:
    """question_id -> category, turns, reference (per turn, may be shorter) and where it was."""
    check.file = table.file
    out: dict[str, dict] = {}
    for rec, where in zip(table.records, table.places):
        qid = check.ident(rec, where, "question_id")
        category = check.ident(rec, where, "category")
        turns = _texts(check, rec, where, "turns", allow_empty=False)
        reference = _texts(check, rec, where, "reference", required=False)
        if None in (qid, category, turns, reference):
            continue
        if not turns:
            check.add(where, "turns", "at least one user turn", "an empty list")
            continue
        if len(reference) > len(turns):
            check.add(where, "reference", f"at most one reference per turn ({len(turns)})", f"{len(reference)}")
            continue
        if qid in out:
            check.add(where, "question_id", f"each question_id once (first at {out[qid]['where']})", repr(qid))
            continue
        out[qid] = {"category": category, "turns": turns, "reference": reference, "where": where}
    return out


def _answers(check: Checker, table: Table, questions: dict[str, dict]):
    """(question_id, turns, model_id, where) of an answer file's good records, one per question."""
    check.file = table.file
    seen: dict[str, str] = {}
    for rec, where in zip(table.records, table.places):
        qid = check.ident(rec, where, "question_id")
        model_id = check.ident(rec, where, "model_id", required=False)
        choices = rec.get("choices")
        if not (isinstance(choices, list) and choices and isinstance(choices[0], dict)):
            check.add(where, "choices", "a list whose first element is an object with 'turns'", short(choices))
            continue
        turns = _texts(check, {"choices[0].turns": choices[0].get("turns")}, where, "choices[0].turns")
        if qid is None or turns is None:
            continue
        if qid not in questions:
            check.add(where, "question_id", "a question_id of question.jsonl", f"{qid!r}, unknown")
            continue
        want = len(questions[qid]["turns"])
        if len(turns) != want:
            check.add(where, "choices[0].turns", f"{want} answer(s), one per turn of question {qid!r}",
                      f"{len(turns)}")
            continue
        if qid in seen:
            check.add(where, "question_id", f"one answer per question (first at {seen[qid]})", repr(qid))
            continue
        seen[qid] = where
        yield qid, turns, model_id, where


def _judged_item(check: Checker, rec: dict, where: str, questions: dict[str, dict]) -> tuple:
    """(item_id, judge model, prompt name) a judgment record is about; Nones when not known."""
    qid = check.ident(rec, where, "question_id")
    judge = rec.get("judge")
    names = None
    if not (isinstance(judge, list) and len(judge) == 2):
        check.add(where, "judge", "a list [judge model, prompt name]", short(judge))
    else:
        names = [check.ident({"judge": j}, where, "judge") for j in judge]
    turn = rec.get("turn")
    if isinstance(turn, bool) or not isinstance(turn, int):
        check.add(where, "turn", "a turn number (1, 2, ...)", short(turn))
        turn = None
    if qid is not None and qid not in questions:
        check.add(where, "question_id", "a question_id of question.jsonl", f"{qid!r}, unknown")
        qid = None
    if qid is not None and turn is not None and not 1 <= turn <= len(questions[qid]["turns"]):
        check.add(where, "turn", f"a turn of question {qid!r}: 1..{len(questions[qid]['turns'])}", str(turn))
        turn = None
    if qid is None or turn is None or names is None or None in names:
        return None, None, None
    return f"{qid}-t{turn}", names[0], names[1]


def _texts(check: Checker, rec: dict, where: str, key: str, *, required: bool = True,
           allow_empty: bool = True) -> list[str] | None:
    """A list of strings, each checked as text (length, control characters); [] when absent and not required."""
    value = check.string_list(rec, where, key, required=required)
    if value is None:
        return None
    out = [check.text({f"{key}[{i}]": v}, where, f"{key}[{i}]", allow_empty=allow_empty) for i, v in enumerate(value)]
    return None if None in out else out


def run(con, args):
    """`evalcore import` of this format: the options its catalogue entry declares, read."""
    return import_mtbench(con, args.dir, dataset=args.dataset, language=args.language)
