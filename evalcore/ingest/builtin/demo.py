"""Build the `demo-zh` dataset from KdConv test dialogues and the LCCC toy set (see data/README.md)."""
from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

import duckdb

from evalcore.analysis.retrieval import Retriever
from evalcore.core.errors import ImportRefused, Problem
from evalcore.core.tokenize import get_tokenizer
from evalcore.ingest import lookup
from evalcore.ingest.batch import Batch, ImportReport

DATASET = "demo-zh"
KDCONV_DOMAINS = ("film", "music", "travel")
BASELINES = {
    "tfidf-retrieval": ("tfidf", "TF-IDF cosine retrieval (seed 002): last context turn vs. candidate utterances, "
                                 "char tokens, DF from the pool"),
    "bm25-retrieval": ("bm25", "Okapi BM25 retrieval (seed 002, k1=1.2, b=0.75): last context turn vs. candidate "
                               "utterances, char tokens, DF from the pool"),
}


@dataclass
class Dialogue:
    dialogue_id: str
    track: str
    split: str
    turns: list[str]
    knowledge: list[list[list[str]]]  # per turn: [name, attribute, value] triples


def load_kdconv(folder: Path) -> list[Dialogue]:
    dialogues = []
    for domain in KDCONV_DOMAINS:
        path = folder / domain / "test.json"
        if not path.is_file():
            raise ImportRefused([Problem(str(path), "", "", "the KdConv test split", "no such file")])
        for n, d in enumerate(json.loads(path.read_text(encoding="utf-8"))):
            turns = [m["message"] for m in d["messages"]]
            knowledge = [[[a["name"], a["attrname"], a["attrvalue"]] for a in m.get("attrs", [])] for m in d["messages"]]
            dialogues.append(Dialogue(f"kdconv-{domain}-{n:03d}", "kdconv/knowledge", "test", turns, knowledge))
    return dialogues


def load_lccc(path: Path) -> list[Dialogue]:
    """The LCCC toy set's dialogues with each turn as it was written (untokenized): the file is LCCC's release,
    space-tokenised, and a text is stored, sent to models and shown to annotators as written in its language;
    tokenising it is a metric's business (its tokenizer)."""
    if not path.is_file():
        raise ImportRefused([Problem(str(path), "", "", "the LCCC toy set", "no such file")])
    data = json.loads(path.read_text(encoding="utf-8"))
    splits = {split: data[split] for split in ("train", "valid", "test")}
    char_level = all(len(token) <= 1 for dialogues in splits.values() for turns in dialogues for turn in turns
                     for token in turn.split(" "))
    return [Dialogue(f"lccc-{split}-{n:04d}", "lccc/chitchat", split, [untokenized(t, char_level) for t in turns],
                     [[] for _ in turns])
            for split, dialogues in splits.items() for n, turns in enumerate(dialogues)]


# a space beside one of these (CJK ideographs, kana, hangul, CJK and full-width punctuation) is a tokeniser's:
# Chinese and Japanese are written without spaces between words
_CJK = re.compile(r"[\u3000-\u303f\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff\uff00-\uffef]")


def untokenized(text: str, char_level: bool) -> str:
    """`text` without the spaces a tokeniser put between its tokens. `char_level`: the source split every character
    (the LCCC toy set does: "1 0 个 聊 天", "W h a t ?"), so every space is the tokeniser's and runs of letters and
    digits join again ("10个聊天", "What?"); the spaces its source had between Latin words were not kept by the
    release and cannot be told apart. Otherwise (a word-tokenised source) only a space beside a CJK character goes,
    and spaces between Latin words stay."""
    tokens = [t for t in text.split(" ") if t]
    if char_level:
        return "".join(tokens)
    out = tokens[0] if tokens else ""
    for token in tokens[1:]:
        out += token if _CJK.match(out[-1]) or _CJK.match(token[0]) else " " + token
    return out


def build_demo(con: duckdb.DuckDBPyConnection, folder: str | Path) -> ImportReport:
    folder = Path(folder)
    if lookup.tracks_of(con, DATASET):
        raise ImportRefused([Problem(str(folder), "", "--db", f"a store without dataset {DATASET!r}", "it is already there")])
    kdconv = load_kdconv(folder / "kdconv")
    lccc = load_lccc(folder / "lccc" / "toy_data.json")
    batch = Batch()
    batch.dataset(DATASET, language="zh", licence="KdConv: Apache-2.0; LCCC toy: MIT",
                  source="github.com/thu-coai/KdConv (test); github.com/thu-coai/CDial-GPT (toy_data.json)",
                  description="Real Chinese dialogues with two retrieval baselines as systems")
    batch.track(DATASET, "kdconv/knowledge", corpus="KdConv")
    batch.track(DATASET, "lccc/chitchat", corpus="LCCC")
    for model, (_, description) in BASELINES.items():
        batch.model(model, description)
    for d in kdconv + lccc:
        knowledge = [t for turn in d.knowledge for t in turn]
        grounding = {"knowledge": _unique(knowledge)} if knowledge else None
        batch.add("dialogues", dataset=DATASET, dialogue_id=d.dialogue_id, track=d.track, split=d.split,
                  grounding=json.dumps(grounding, ensure_ascii=False) if grounding else None)
        for i, text in enumerate(d.turns):
            batch.add("turns", dataset=DATASET, dialogue_id=d.dialogue_id, turn_index=i, speaker="AB"[i % 2],
                      text=text,
                      grounding=json.dumps({"knowledge": d.knowledge[i]}, ensure_ascii=False) if d.knowledge[i] else None)
    tok = get_tokenizer("char")
    # KdConv: the pool is every test utterance, minus the item's own dialogue.
    pool = [(d.dialogue_id, t) for d in kdconv for t in d.turns]
    _answer(batch, [d for d in kdconv], pool, exclude_own=True, tokenize=tok)
    # LCCC: the pool is the train split; items come from the test split.
    pool = [(d.dialogue_id, t) for d in lccc if d.split == "train" for t in d.turns]
    _answer(batch, [d for d in lccc if d.split == "test"], pool, exclude_own=False, tokenize=tok)
    report = ImportReport(str(folder), batch.write(con, source=str(folder)))
    return report


def _answer(batch: Batch, dialogues: list[Dialogue], pool: list[tuple[str, str]], *, exclude_own: bool, tokenize) -> None:
    queries, owners = [], []
    for d in dialogues:
        for t in range(1, len(d.turns)):
            item_id = f"{d.dialogue_id}-t{t:02d}"
            grounding = {"knowledge": d.knowledge[t]} if d.knowledge[t] else None
            batch.add("items", dataset=DATASET, item_id=item_id, track=d.track, dialogue_id=d.dialogue_id,
                      turn_index=t, context=json.dumps(d.turns[:t], ensure_ascii=False),
                      grounding=json.dumps(grounding, ensure_ascii=False) if grounding else None,
                      skill=d.track.split("/")[1], origin=f"{d.dialogue_id} turn {t}")
            batch.add("item_references", dataset=DATASET, item_id=item_id, ref_index=0, text=d.turns[t])
            queries.append((item_id, d.turns[t - 1]))
            owners.append(d.dialogue_id)
    retriever = Retriever([text for _, text in pool], tokenize, groups=[g for g, _ in pool])
    for model, (ranker, _) in BASELINES.items():
        best = retriever.best([q for _, q in queries], ranker, exclude_groups=owners if exclude_own else None)
        for (item_id, _), j in zip(queries, best):
            batch.add("responses", dataset=DATASET, item_id=item_id, model=model, text=pool[j][1],
                      origin=f"{ranker} retrieval from {pool[j][0]}")


def _unique(triples: list[list[str]]) -> list[list[str]]:
    seen, out = set(), []
    for t in triples:
        if tuple(t) not in seen:
            seen.add(tuple(t))
            out.append(t)
    return out
