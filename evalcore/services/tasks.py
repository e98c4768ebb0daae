"""Human evaluation tasks end to end: what a new task asks (its dimensions, scales and questions), which units it
samples (stratified, or where the metrics disagree most), the live results (progress, agreement, the units
annotators disagree on), and the export. The stored side (answers, claims, states) is evalcore.store.tasks.

Sampling, seeded:
- stratified: every chosen track first gets MIN_PER_TRACK units (Metric trust's verdict on a skill needs four
  rated responses of a track; a track with fewer candidates gives what it has), the rest are spread in
  proportion to the tracks' sizes; within a track the units go over its models (absolute) or model pairs
  (pairwise) in turn. Where the units asked for do not reach four per track, the tracks take one each in
  turn, the largest first;
- disagreement: within each track's share, the units whose automatic metrics disagree most: for a response,
  the spread (standard deviation) of its percentile ranks under each metric; for a pair, how evenly the
  metrics split between its two responses. It needs computed metric values on the tracks;
- active (absolute tasks of single responses): each track's share spread over its models as stratified spreads
  it, then within each model every candidate drawn on its own with a probability that favours where a predictor
  (`judge`: a judge or a metric) is uncertain (services.active), so the number of units varies around n.

Each unit keeps its inclusion probability within its stratum (its track and model: the population a model's
mean on a track is estimated over) where the sampling knows it exactly, so an estimate can weigh people's
ratings by one over it (analysis.ppi.finite_mean): stratified absolute tasks of responses (the round robin
takes a simple random sample of a fixed size within each model of a track) and active ones. It stays NULL for
pairwise and dialogue-level tasks (the estimator reads absolute ratings of responses only) and for
disagreement sampling (not random: the estimator refuses it).
"""
from __future__ import annotations

import itertools
import json

import duckdb
import numpy as np
import pandas as pd

from evalcore.analysis.agreement import agreement, agreement_of, vote_agreement
from evalcore.analysis.ties import snapped
from evalcore.analysis.trust import VERDICT_N
from evalcore.core import names
from evalcore.core.i18n import EN, ZH
from evalcore.core.text import bad_character
from evalcore.metrics.judge.prompts import RUBRICS
from evalcore.scoring import response_scores
from evalcore.services import active
from evalcore.store import tasks as stored
from evalcore.store.tasks import SAMPLINGS, Dimension
from evalcore.store.transactions import bump_revision, transaction

QUESTIONS = {"Info": "Which response is more informative?", "Coh": "Which response is more coherent?",
             "Know": "Which response uses its knowledge more correctly?",
             "Rec": "Which response recommends more successfully?"}
# ACUTE-Eval (Li et al. 2019) asks about two whole conversations, one question per quality, in its own words
# (Table 2's optimised questions); MSDE's dimensions asked the same way.
ACUTE = {"Engagingness": "Who would you prefer to talk to for a long conversation?",
         "Interestingness": "If you had to say one of these speakers is interesting and one is boring, who would you "
                            "say is more interesting?",
         "Humanness": "Which speaker sounds more human?",
         "Knowledgeable": "If you had to say that one speaker is more knowledgeable and one is more ignorant, who is "
                          "more knowledgeable?",
         "Info": "Which speaker brings up more knowledge: the topics and their attributes?",
         "Coh": "Which speaker is more coherent: relevant to the conversation, fluent and never contradicting itself?",
         "Know": "If you had to say that one speaker is more knowledgeable and one is more ignorant, who is more "
                 "knowledgeable?",
         "Rec": "Whose recommendation would the user in this conversation rather take?"}
OTHER = "Which response is better on {name}?"   # a dimension with no question of its own
# The same questions in Chinese, for a task made in zh-CN: translated by the project's developers with a language
# model and checked by translating them back into English in a separate pass (docs/guide/languages.md shows the
# source, the Chinese and the back-translation); no native-speaking annotator has reviewed them yet.
QUESTIONS_ZH = {"Info": "哪条回复的信息更丰富？", "Coh": "哪条回复更连贯？", "Know": "哪条回复使用的知识更准确？",
                "Rec": "哪条回复的推荐更成功？"}
ACUTE_ZH = {"Engagingness": "如果要进行一场很长的对话，你更愿意和谁聊？",
            "Interestingness": "如果必须说这两位说话者中一位有趣、一位无聊，你会说谁更有趣？",
            "Humanness": "哪位说话者听起来更像真人？",
            "Knowledgeable": "如果必须说一位说话者知识更渊博、一位更无知，谁的知识更渊博？",
            "Info": "哪位说话者提到的知识（话题及其属性）更多？",
            "Coh": "哪位说话者更连贯：与对话相关、表达流畅，且从不自相矛盾？",
            "Know": "如果必须说一位说话者知识更渊博、一位更无知，谁的知识更渊博？",
            "Rec": "这段对话中的用户更愿意接受谁的推荐？"}
OTHER_ZH = "哪条回复在 {name} 上更好？"
# what a task asks per dimension, by its level and language
ASKED = {"response": {EN: QUESTIONS, ZH: QUESTIONS_ZH}, "dialogue": {EN: ACUTE, ZH: ACUTE_ZH}}
ASKED_OTHER = {EN: OTHER, ZH: OTHER_ZH}
MSDE_SCALE = (0.0, 2.0)   # MSDE's dimensions: its rubric's three levels fit this scale only


def task_language(con: duckdb.DuckDBPyConnection, dataset: str) -> str:
    """The language a new task on `dataset` is made in unless it is told another: its dataset's (datasets.language
    zh... -> zh-CN, en... -> en; any other language, or none, -> en)."""
    rows = con.execute("SELECT language FROM datasets WHERE dataset = ?", [dataset]).fetchall()
    return ZH if rows and str(rows[0][0] or "").lower().startswith("zh") else EN


def language_of(con: duckdb.DuckDBPyConnection, dataset: str, lang: str | None) -> str:
    """A new task's language: `lang` when given (one of evalcore.core.i18n.LANGS, else ValueError), else its
    dataset's."""
    if lang is None:
        return task_language(con, dataset)
    stored.check_lang(lang)
    return lang


def dimension_texts(con: duckdb.DuckDBPyConnection, dataset: str, lang: str) -> dict[str, str]:
    """A lab's own definitions of the dataset's dimensions in `lang` (`evalcore dimension describe`)."""
    return dict(con.execute("SELECT dimension, description FROM dimension_texts WHERE dataset = ? AND lang = ?",
                            [dataset, lang]).fetchall())


def known_dimensions(con: duckdb.DuckDBPyConnection, dataset: str) -> list[str]:
    """The dimensions a task on the dataset can rate and a definition can be given for: the store's and MSDE's."""
    stored_dims = [d for (d,) in con.execute("SELECT dimension FROM dimensions WHERE dataset = ?", [dataset]).fetchall()]
    return sorted(set(stored_dims) | set(RUBRICS["en"]))


def describe_dimension(con: duckdb.DuckDBPyConnection, *, dataset: str, dimension: str, lang: str, text: str) -> bool:
    """Store a lab's own definition of a dimension in one language (replacing the one it had in that language):
    a new task in `lang` that rates it shows this text in place of the stored description (or MSDE's rubric). Tasks
    made before keep the definitions they were made with. True when a definition in that language was replaced.
    Refused, with nothing stored, for an unknown dataset, dimension or language, or a text that is empty or holds a
    control character."""
    names.require("dataset", dataset, [d for (d,) in con.execute("SELECT dataset FROM datasets ORDER BY 1").fetchall()])
    known = known_dimensions(con, dataset)
    if dimension not in known:
        names.require("dimension", dimension, known)
    stored.check_lang(lang)
    text = (text or "").strip()
    if not text:
        raise ValueError("a definition needs its text: give what people rating the dimension should read")
    bad = bad_character(text)
    if bad:
        raise ValueError(f"a dimension's definition may not hold a {bad}")
    if len(text) > stored.MAX_GUIDELINES:
        raise ValueError(f"a dimension's definition has at most {stored.MAX_GUIDELINES:,} characters, got {len(text):,}")
    with transaction(con):
        had = con.execute("SELECT count(*) FROM dimension_texts WHERE dataset = ? AND dimension = ? AND lang = ?",
                          [dataset, dimension, lang]).fetchall()[0][0]
        bump_revision(con)
        con.execute("INSERT OR REPLACE INTO dimension_texts VALUES (?, ?, ?, ?)", [dataset, dimension, lang, text])
    return bool(had)


def rubric_text(rubric: dict) -> str:
    """An MSDE rubric as a dimension's description: its name, definition and one line per score."""
    return (rubric["name"] + ": " + rubric["definition"] + " "
            + " ".join(f"{i}: {level}" for i, level in enumerate(rubric["levels"])))


def dimension_specs(con: duckdb.DuckDBPyConnection, dataset: str, wanted: list[str],
                    questions: dict[str, str] | None = None, *, lang: str | None = None,
                    level: str = "response") -> list[Dimension]:
    """The dimensions a task rates, with their scales, descriptions and questions, in the task's language `lang`
    (default: the dataset's, task_language): a lab's own definition in that language where it gave one (`evalcore
    dimension describe`); else for MSDE's Info, Coh, Know and Rec on its 0-2 scale the paper's definitions and score
    levels (RUBRICS: the paper's own Chinese, or their English); else the store's description. A side-by-side
    task's question per dimension from `questions` when given, else the level's in that language (ACUTE-Eval's for
    whole dialogues, where its own qualities may be asked too)."""
    lang = language_of(con, dataset, lang)
    rows = {d: (lo, hi, desc) for d, lo, hi, desc in con.execute(
        "SELECT dimension, scale_min, scale_max, description FROM dimensions WHERE dataset = ?", [dataset]).fetchall()}
    rubrics = RUBRICS["zh" if lang == ZH else "en"]
    own = dimension_texts(con, dataset, lang)
    asked = questions if questions is not None else ASKED["dialogue" if level == "dialogue" else "response"][lang]
    other = ASKED_OTHER[lang]
    out = []
    for name in wanted:
        if name not in rows and name not in rubrics and name not in asked:
            names.require("dimension", name, sorted(set(rows) | set(rubrics) | (set(asked) - set(QUESTIONS)
                                                                                 - set(QUESTIONS_ZH))))
        lo, hi, desc = rows.get(name, (0.0, 2.0, None))
        if name in rubrics:
            lo, hi = MSDE_SCALE if lo is None else (lo, hi)
            if (lo, hi) == MSDE_SCALE or not desc:   # MSDE's dimension (a lab's own 'Info' on 1-5 keeps its text)
                desc = rubric_text(rubrics[name])
        desc = own.get(name) or desc
        if lo is None or hi is None:
            raise ValueError(f"dimension {name!r} has no scale in {dataset}: import ratings with --scale first")
        out.append(Dimension(name, float(lo), float(hi), desc or "", asked.get(name, other.format(name=name))))
    return out


def candidates(con: duckdb.DuckDBPyConnection, dataset: str, mode: str, tracks: list[str] | None,
               models: list[str] | None, level: str = "response") -> pd.DataFrame:
    """Every unit the task could hold: (item_id, track, model_a, model_b), at dialogue level with dialogue_a and
    dialogue_b."""
    if level == "dialogue":
        return dialogue_candidates(con, dataset, mode, tracks, models)
    frame = con.execute("""
        SELECT r.item_id, i.track, r.model FROM responses r JOIN items i USING (dataset, item_id)
        WHERE r.dataset = ? ORDER BY i.track, r.item_id, r.model""", [dataset]).df()
    frame = _chosen(frame, tracks, models)
    if mode == "absolute":
        return frame.rename(columns={"model": "model_a"}).assign(model_b=None)
    rows = [(item, track, a, b) for (item, track), group in frame.groupby(["item_id", "track"], sort=True)
            for a, b in itertools.combinations(sorted(group["model"]), 2)]
    return pd.DataFrame(rows, columns=["item_id", "track", "model_a", "model_b"])


def _chosen(frame: pd.DataFrame, tracks: list[str] | None, models: list[str] | None) -> pd.DataFrame:
    for what, chosen, column in (("track", tracks, "track"), ("model", models, "model")):
        if chosen:
            for name in chosen:
                if name not in set(frame[column]):
                    names.require(what, name, sorted(set(frame[column])))
            frame = frame[frame[column].isin(chosen)]
    return frame


def dialogue_candidates(con: duckdb.DuckDBPyConnection, dataset: str, mode: str, tracks: list[str] | None,
                        models: list[str] | None) -> pd.DataFrame:
    """Whole dialogues as units: a dialogue whose every model turn one model answered (a conversation held with it,
    such as a chat task's) is that model's. Absolute: one unit per dialogue. Pairwise (ACUTE-Eval): two dialogues of
    different models on the same scenario (the same grounding), item_id 'dialogue_a|dialogue_b'."""
    frame = con.execute("""
        SELECT i.dialogue_id, any_value(i.track) AS track, any_value(r.model) AS model,
               any_value(d.grounding) AS grounding
        FROM items i JOIN responses r USING (dataset, item_id)
        LEFT JOIN dialogues d ON d.dataset = i.dataset AND d.dialogue_id = i.dialogue_id
        WHERE i.dataset = ? AND i.dialogue_id IS NOT NULL
        GROUP BY i.dialogue_id HAVING count(DISTINCT r.model) = 1
        ORDER BY 2, 1""", [dataset]).df()
    if frame.empty:
        raise ValueError(f"no whole dialogues in {dataset}: a dialogue unit is a conversation one model held (every "
                         "model turn of the dialogue answered by that model), such as a chat task's")
    frame = _chosen(frame, tracks, models)
    if mode == "absolute":
        return pd.DataFrame({"item_id": frame["dialogue_id"], "track": frame["track"], "model_a": frame["model"],
                             "model_b": None, "dialogue_a": frame["dialogue_id"], "dialogue_b": None})
    rows = []
    for (track, _), group in frame.groupby(["track", frame["grounding"].fillna("")], sort=True):
        for a, b in itertools.combinations(group.sort_values(["model", "dialogue_id"]).itertuples(index=False), 2):
            if a.model != b.model:
                rows.append((f"{a.dialogue_id}|{b.dialogue_id}", track, a.model, b.model, a.dialogue_id, b.dialogue_id))
    return pd.DataFrame(rows, columns=["item_id", "track", "model_a", "model_b", "dialogue_a", "dialogue_b"])


MIN_PER_TRACK = VERDICT_N   # units a track gets before the rest: the fewest a trust verdict can use (Fisher z: n - 3)


def shares(sizes: pd.Series, n: int, floor: int = MIN_PER_TRACK) -> dict[str, int]:
    """n spread over groups (capped at their sizes): first `floor` each (or what a group has), then the rest
    in proportion to what each group has left (largest remainders). When n does not reach the floors, the
    groups take one each in turn, the largest first."""
    sizes = sizes.astype(int)
    n = min(n, int(sizes.sum()))
    base = np.minimum(sizes, floor)
    if n <= int(base.sum()):
        order = sizes.sort_values(ascending=False, kind="stable").index
        out = dict.fromkeys(sizes.index, 0)
        while n > 0:
            for k in order:
                if n > 0 and out[k] < base[k]:
                    out[k] += 1
                    n -= 1
        return out
    room = sizes - base
    exact = (n - int(base.sum())) * room / int(room.sum())
    extra = np.floor(exact).astype(int)
    left = n - int(base.sum()) - int(extra.sum())
    for k in (exact - extra).sort_values(ascending=False, kind="stable").index[:left]:
        extra[k] += 1
    return (base + extra).to_dict()


def _round_robin(group: pd.DataFrame, key: list[str], k: int, rng: np.random.Generator) -> pd.DataFrame:
    """k rows of the group, taking one row per key value in turn (a shuffled order within each)."""
    pools = [g.sample(frac=1, random_state=int(rng.integers(2**31))) for _, g in group.groupby(key, sort=True)]
    picked, i = [], 0
    while len(picked) < k and any(i < len(p) for p in pools):
        picked += [p.iloc[i] for p in pools if i < len(p)][: k - len(picked)]
        i += 1
    return pd.DataFrame(picked)


def disagreement(con: duckdb.DuckDBPyConnection, dataset: str, units: pd.DataFrame) -> pd.Series:
    """Per candidate unit (its index), how much the metrics disagree about it (NaN: no values)."""
    out = pd.Series(np.nan, index=units.index)
    for track, group in units.groupby("track"):
        values = response_scores(con, dataset, track)
        if values.empty:
            continue
        wide = values.pivot_table(index=["item_id", "model"], columns="metric", values="value")
        ranks = snapped(wide).rank(pct=True)   # values equal up to float noise share a rank (analysis.ties)
        if units["model_b"].isna().all():
            spread = ranks.std(axis=1)
            keys = list(zip(group["item_id"], group["model_a"]))
            out[group.index] = [spread.get(k, np.nan) for k in keys]
        else:
            for idx, row in group.iterrows():
                a, b = (row["item_id"], row["model_a"]), (row["item_id"], row["model_b"])
                if a in wide.index and b in wide.index:
                    diff = np.sign(wide.loc[a] - wide.loc[b]).dropna()
                    out[idx] = 1 - abs(diff.mean()) if len(diff) else np.nan
    return out


def check_sampling(mode: str, sampling: str, level: str, judge: str | None) -> None:
    """ValueError naming what does not go together, before anything is read or sampled."""
    if sampling not in SAMPLINGS:
        raise ValueError(f"unknown sampling {sampling!r}; known: {', '.join(SAMPLINGS)}")
    if level == "dialogue" and sampling == "disagreement":
        raise ValueError("--sampling disagreement measures the metrics' disagreement on single responses: sample "
                         "whole dialogues with --sampling stratified")
    if sampling != "active" and judge:
        raise ValueError(f"--judge chooses the units of --sampling active only (this task samples {sampling}): "
                         "add --sampling active, or leave --judge out")
    if sampling == "active":
        if not judge:
            raise ValueError("--sampling active needs --judge: the judge or metric whose uncertainty about each "
                             "response decides how likely it is to be rated")
        if mode != "absolute" or level != "response":
            raise ValueError("--sampling active offers single responses rated on their own (--mode absolute, "
                             "--level response): the weighted estimate it serves reads absolute ratings of "
                             "responses only; sample pairs or whole dialogues with --sampling stratified")


def sample(con: duckdb.DuckDBPyConnection, dataset: str, mode: str, n: int, *, tracks: list[str] | None = None,
           models: list[str] | None = None, seed: int = 0, sampling: str = "stratified",
           level: str = "response", judge: str | None = None) -> pd.DataFrame:
    """The task's units (item_id, track, model_a, model_b, dialogue_a, dialogue_b, probability) in a seeded
    order; active sampling draws about n of them (the module's docstring)."""
    check_sampling(mode, sampling, level, judge)
    pool = candidates(con, dataset, mode, tracks, models, level).reset_index(drop=True)
    if pool.empty:
        raise ValueError(f"nothing to rate in {dataset}: " + ("no item has two models' responses"
                                                                if mode == "pairwise" else "no responses"))
    rng = np.random.default_rng(seed)
    if sampling == "disagreement":
        pool["spread"] = disagreement(con, dataset, pool)
        if pool["spread"].isna().all():
            raise ValueError("no metric values on these tracks to measure disagreement: score them first "
                             "(`evalcore score`), or sample --sampling stratified")
    key = ["model_a"] if mode == "absolute" else ["model_a", "model_b"]
    per_track = shares(pool.groupby("track").size(), n)
    if sampling == "active":
        units = active.draw(pool, active.plan(con, dataset, pool, per_track, judge), rng)
        if units.empty:
            raise ValueError(f"the draw gave no unit (each candidate is drawn on its own; {n} were asked for): "
                             "ask for more units, or another --seed")
    else:
        picked = []
        for track, k in per_track.items():
            group = pool[pool["track"] == track]
            if sampling == "disagreement":
                picked.append(group.sort_values("spread", ascending=False, na_position="last", kind="stable").head(k))
            else:
                picked.append(_round_robin(group, key, k, rng))
        units = pd.concat(picked, ignore_index=True)
        if sampling == "stratified" and mode == "absolute" and level == "response":
            # the round robin gives each model of a track a number of units fixed by the candidates' counts
            # alone, drawn at random among its candidates: taken / candidates is each one's exact probability
            stratum = ["track", "model_a"]
            size = pool.groupby(stratum).size().rename("candidates")
            units = units.join(units.groupby(stratum).size().rename("taken"), on=stratum).join(size, on=stratum)
            units["probability"] = units["taken"] / units["candidates"]
    units = units.reindex(columns=["item_id", "track", "model_a", "model_b", "dialogue_a", "dialogue_b", "probability"])
    return units.sample(frac=1, random_state=int(rng.integers(2**31))).reset_index(drop=True)


def create_task(con: duckdb.DuckDBPyConnection, *, dataset: str, mode: str, dimensions: list[str], items: int,
                per_item: int, tracks: list[str] | None = None, models: list[str] | None = None, seed: int = 0,
                name: str | None = None, sampling: str = "stratified", ties: bool = True, guidelines: str = "",
                created_by: str | None = None, level: str = "response", judge: str | None = None,
                lang: str | None = None) -> int:
    """Sample the units and store the task; its id. At dialogue level a unit is a whole dialogue (absolute) or two
    whole dialogues on one scenario (pairwise: ACUTE-Eval, with its questions). `judge`: the predictor of
    --sampling active (a judge's name or signature, or a metric's name). `lang`: the task's language, zh-CN or en
    (default: its dataset's, task_language): its people see its pages, definitions and questions in it."""
    names.require("dataset", dataset, [d for (d,) in con.execute("SELECT dataset FROM datasets ORDER BY 1").fetchall()])
    if not dimensions:
        raise ValueError("a task rates at least one dimension")
    if level not in stored.LEVELS:
        raise ValueError(f"unknown level {level!r}; known: {', '.join(stored.LEVELS)}")
    name = (name or "").strip() or f"{dataset} {mode}{' dialogues' if level == 'dialogue' else ''} {','.join(dimensions)}"
    stored.check_settings(name=name, guidelines=guidelines, seed=seed)
    check_sampling(mode, sampling, level, judge)
    lang = language_of(con, dataset, lang)
    specs = dimension_specs(con, dataset, dimensions, lang=lang, level=level)
    units = sample(con, dataset, mode, items, tracks=tracks, models=models, seed=seed, sampling=sampling, level=level,
                   judge=judge)
    return stored.create(con, name=name, dataset=dataset, mode=mode, dimensions=specs, per_item=per_item, units=units,
                         ties=ties, guidelines=guidelines, seed=seed, sampling=sampling, created_by=created_by,
                         level=level, judge=judge if sampling == "active" else None, lang=lang)


def coverage(con: duckdb.DuckDBPyConnection, task_id: int) -> list[str]:
    """What a task's units cannot give, said at its creation: a track of the dataset with no unit (its skill's
    trust cannot come from this task), a track with fewer than MIN_PER_TRACK units (no verdict there), and,
    for an absolute task, a track whose units come from fewer than three models (no system-level correlation,
    Metric trust's first level)."""
    task = stored.get(con, task_id)
    got = stored.units(con, task_id).groupby("track").agg(units=("unit", "size"), models=("model_a", "nunique"))
    skills = dict(con.execute("SELECT track, skill FROM tracks WHERE dataset = ? ORDER BY track",
                              [task.dataset]).fetchall())
    rated = set(con.execute("SELECT DISTINCT i.track FROM responses r JOIN items i USING (dataset, item_id) "
                            "WHERE r.dataset = ?", [task.dataset]).fetchall())
    out = []
    for track, skill in skills.items():
        what = f"{track}" + (f" ({skill})" if skill else "")
        if track not in got.index:
            if (track,) in rated:
                out.append(f"{what} has no unit in this task: its human scores (and the trust of its metrics) "
                           "cannot come from it.")
            continue
        units, models = int(got.loc[track, "units"]), int(got.loc[track, "models"])
        if units < MIN_PER_TRACK:
            out.append(f"{what} gets {units} unit{'s' if units != 1 else ''}: Metric trust's verdict on it needs at "
                       f"least {MIN_PER_TRACK} rated responses (ask for more units).")
        elif task.mode == "absolute" and models < 3:
            out.append(f"{what}: its {units} units come from {models} model{'s' if models != 1 else ''}, so only "
                       "turn-level correlations can use them (system level needs 3 models' responses).")
    return out


EXPORT_COLUMNS = ["task_id", "unit", "item_id", "dialogue_id", "track", "model", "model_a", "model_b", "winner",
                  "annotator", "dimension", "score", "given_at", "seconds", "comment"]


def export(con: duckdb.DuckDBPyConnection, task_id: int) -> pd.DataFrame:
    """Every answer that counts (the latest rating or vote per unit, annotator and dimension) with the unit's
    item and models, and every flag's comment. Absolute rows fill model and score (`import ratings` reads
    them; a dialogue-level task's rows name the dialogue in dialogue_id); pairwise rows fill model_a, model_b and
    winner a|b|tie (`import votes` reads them)."""
    task = stored.get(con, task_id)
    frame = stored.latest(con, task_id).assign(task_id=task_id, comment=None)
    if task.mode == "absolute":
        frame = frame.assign(model=frame["model_a"], score=frame["value"], model_a=None, model_b=None, winner=None)
        if task.level == "dialogue":   # a whole dialogue's rating: `import ratings` reads it by dialogue_id
            frame = frame.assign(dialogue_id=frame["item_id"], item_id=None)
    else:
        frame = frame.assign(model=None, score=None,
                             winner=frame["value"].map({1.0: "a", 0.0: "b", 0.5: "tie"}))
    flags = con.execute("""
        SELECT a.unit, u.item_id, u.track, a.annotator, a.comment, a.given_at FROM task_answers a
        JOIN task_units u USING (task_id, unit) WHERE a.task_id = ? AND a.kind = 'flag' ORDER BY a.answer_id
    """, [task_id]).df().assign(task_id=task_id)
    return pd.concat([frame, flags], ignore_index=True).reindex(columns=EXPORT_COLUMNS)


def results(con: duckdb.DuckDBPyConnection, task_id: int, *, bootstrap: int = 200, seed: int = 0) -> dict:
    """The live view of a task: progress per annotator, agreement per dimension (the Human evaluation
    page's statistics over this task's ratings or votes; for votes also the share of agreeing pairs), and
    the units most disagreed on."""
    task = stored.get(con, task_id)
    n_units = len(stored.units(con, task_id))
    progress = stored.progress(con, task)
    needed = n_units * task.per_item
    finished = int(progress["done"].sum() - progress["skipped"].sum()) if len(progress) else 0
    out = {"task": task, "units": n_units, "needed": needed, "finished": finished, "progress": progress}
    latest = stored.latest(con, task_id)
    if task.mode == "absolute":
        out["agreement"] = agreement(con, task.dataset, bootstrap=bootstrap, seed=seed, origin=task.origin)
        spread = latest.groupby(["unit", "item_id", "track", "model_a", "dimension"])["value"].agg(["std", "count"])
        spread = spread[spread["count"] >= 2].sort_values("std", ascending=False).reset_index()
        out["disputed"] = spread.rename(columns={"model_a": "model", "std": "spread", "count": "annotators"}).head(20)
    else:
        votes = latest.groupby(["unit", "item_id", "track", "dimension"])["value"].agg(["nunique", "count"])
        # a vote is a category (model_a, tie, model_b) of the unit's fixed pair: the rates people agree at,
        # then the kappas and alphas over the three categories
        frame = latest.rename(columns={"value": "score"})[["track", "dimension", "unit", "annotator", "score"]]
        out["agreement"] = pd.concat([vote_agreement(frame, bootstrap=bootstrap, seed=seed),
                                      agreement_of(frame, bootstrap=bootstrap, seed=seed)], ignore_index=True)
        out["disputed"] = votes[(votes["count"] >= 2) & (votes["nunique"] > 1)].reset_index().rename(
            columns={"nunique": "different_answers", "count": "annotators"}).head(20)
    return out


def describe(task: stored.Task) -> dict:
    """A task as plain values (for `task show` and the export's header)."""
    return {"task_id": task.task_id, "name": task.name, "dataset": task.dataset, "mode": task.mode, "level": task.level,
            "state": task.state, "per_item": task.per_item, "ties": task.ties, "seed": task.seed,
            "sampling": task.sampling, "judge": task.judge, "lang": task.lang, "access_code": task.access_code,
            "guidelines": task.guidelines,
            "dimensions": json.loads(json.dumps([d.__dict__ for d in task.dimensions], ensure_ascii=False)),
            "created_by": task.created_by, "created_at": str(task.created_at)}
