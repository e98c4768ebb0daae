"""A small rated store for Metric trust: six knowledge items, three models, and the ratings a test chooses (toy_store;
FIVE, five ratings that give a verdict at the item level). Shared by the trust tests and the browser test of views."""
from __future__ import annotations

from evalcore.store import connect
from support import write_jsonl

KNOWLEDGE = ["我 喜欢 看 电影", "这 部 电影 很 好看", "导演 是 谁", "他 拍 过 很多 电影", "我们 一起 去 看 吧", "主演 很 有名"]
RESPONSES = {  # model -> one response per knowledge item (varied, so no metric is constant)
    "m1": ["我 也 喜欢 电影", "是 的 很 好看", "不 知道", "很多 电影 都 是 他 拍 的", "好 啊", "是 很 有名"],
    "m2": ["电影 好", "还行", "导演 是 张 三", "他 拍 过", "一起 去 吧 我们", "主演"],
    "m3": ["嗯", "好看 好看 好看", "导演 是 谁 呢", "拍 过 很多", "不 去", "有名 的 主演 很 有名"],
}


def toy_store(tmp_path, rated: list[tuple[int, str, float]], chitchat: bool = True):
    """toy: knowledge items k0..k5 and one chit-chat item, three models, lexical scores; `rated`: (knowledge item,
    model, Info) ratings by one annotator, plus one chit-chat rating when `chitchat`."""
    from evalcore.ingest.formats.items import import_items
    from evalcore.ingest.formats.ratings import import_ratings
    from evalcore.ingest.formats.responses import import_responses
    from evalcore.scoring import score

    db = tmp_path / "toy.duckdb"
    con = connect(db)
    items = [{"item_id": f"k{i}", "dataset": "toy", "track": "toy/knowledge", "skill": "knowledge",
              "context": ["你好"], "references": [text]} for i, text in enumerate(KNOWLEDGE)]
    items.append({"item_id": "c0", "dataset": "toy", "track": "toy/chitchat", "skill": "chitchat",
                  "context": ["在 吗"], "references": ["在 的"]})
    import_items(con, write_jsonl(tmp_path / "items.jsonl", items))
    for track, rows in (("toy/knowledge", [(f"k{i}", m, t) for m, ts in RESPONSES.items() for i, t in enumerate(ts)]),
                        ("toy/chitchat", [("c0", m, f"在 {m}") for m in RESPONSES])):
        path = tmp_path / f"{track.split('/')[1]}.csv"
        path.write_text("item_id,model,response\n" + "".join(f"{i},{m},{t}\n" for i, m, t in rows), encoding="utf-8")
        import_responses(con, path, dataset="toy", track=track)
    score(con, metrics="lexical", dataset="toy", progress=False)
    for track, rows in (("toy/knowledge", [(f"k{i}", m, s) for i, m, s in rated]),
                        ("toy/chitchat", [("c0", "m1", 1.0)] if chitchat else [])):
        if rows:
            path = tmp_path / f"rated-{track.split('/')[1]}.csv"
            path.write_text("item_id,model,annotator,dimension,score\n" + "".join(
                f"{i},{m},ann,Info,{s}\n" for i, m, s in rows), encoding="utf-8")
            import_ratings(con, path, dataset="toy", track=track, scales={"Info": (0, 2)})
    return con, db


# five knowledge responses of the three models (n = 5 at turn level, 3 models at system level)
FIVE = [(0, "m1", 2), (1, "m2", 0), (2, "m3", 1), (3, "m1", 2), (4, "m2", 1)]
