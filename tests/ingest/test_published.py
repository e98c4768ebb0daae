import pytest

from evalcore.core.errors import ImportRefused
from evalcore.ingest.formats.published import import_published
from support import fingerprint

HEAD = "paper_table,competition,skill,dimension,metric,method,value\n"


@pytest.mark.parametrize("row, expected", [
    ("11,lic2021,knowledge,Info,F1,spearman,1.7", "field 'value': expected a correlation from -1 to 1, got 1.7"),
    ("11,lic2021,knowledge,Info,F1,cosine,0.5", "field 'method': expected one of pearson, spearman, kendall"),
    ("11,lic2021,knowledge,Info,F1,pearson,abc", "field 'value': expected a number, got 'abc'"),
])
def test_bad_published_correlations(con, tmp_path, row, expected):
    (tmp_path / "published_correlations.csv").write_text(HEAD + "11,lic2021,knowledge,Coh,F1,pearson,0.5\n" + row + "\n",
                                                         encoding="utf-8")
    before = fingerprint(con)
    with pytest.raises(ImportRefused) as err:
        import_published(con, tmp_path, dataset="paper")
    assert "published_correlations.csv, row 3" in str(err.value) and expected in str(err.value)
    assert fingerprint(con) == before


def test_human_means_outside_scale(con, tmp_path):
    (tmp_path / "human_system_scores.csv").write_text(
        "paper_table,competition,skill,model_no,model,dimension,value\n10,luge,chitchat,1,m,Info,2.5\n", encoding="utf-8")
    with pytest.raises(ImportRefused, match=r"row 2, field 'value': expected a mean on the Info scale 0\.\.2, got 2\.5"):
        import_published(con, tmp_path, dataset="paper", scales={"Info": (0, 2)})


def test_published_correlations_at_any_level_compared_like_with_like(con, tmp_path):
    """A `level` column stores turn- and dialogue-level published correlations; --compare-published
    then sets each computed correlation beside the published one of its own level only."""
    from evalcore.analysis.correlate import correlations
    from evalcore.ingest.formats.items import import_items
    from evalcore.ingest.formats.ratings import import_ratings
    from evalcore.ingest.formats.responses import import_responses
    from evalcore.scoring import score
    from support import write_jsonl

    import_items(con, write_jsonl(tmp_path / "items.jsonl", [
        {"item_id": f"i{k}", "dataset": "paper", "track": "lic2021/knowledge", "context": ["你好"],
         "references": [f"参考 {k} 号"]} for k in range(5)]))
    (tmp_path / "r.csv").write_text("item_id,model,response\n" + "".join(
        f"i{k},{m},{'参考 ' * (k % 3 + (m == 'b'))}{k}\n" for k in range(5) for m in "ab"), encoding="utf-8")
    import_responses(con, tmp_path / "r.csv", dataset="paper", track="lic2021/knowledge")
    (tmp_path / "h.csv").write_text("item_id,model,annotator,dimension,score\n" + "".join(
        f"i{k},{m},x,Info,{(k + (m == 'b')) % 3}\n" for k in range(5) for m in "ab"), encoding="utf-8")
    import_ratings(con, tmp_path / "h.csv", dataset="paper", track="lic2021/knowledge", scales={"Info": (0, 2)})
    score(con, dataset="paper", metrics="BLEU1", progress=False)
    folder = tmp_path / "pub"
    folder.mkdir()
    (folder / "published_correlations.csv").write_text(
        "paper_table,competition,skill,dimension,metric,method,value,level\n"
        "4,lic2021,knowledge,Info,BLEU1,pearson,0.31,turn\n"
        "5,lic2021,knowledge,Info,BLEU1,pearson,0.77,\n", encoding="utf-8")
    import_published(con, folder, dataset="paper")
    assert sorted(con.execute("SELECT level, value FROM published_correlations").fetchall()) == [
        ("system", 0.77), ("turn", 0.31)]
    turn = correlations(con, "paper", level="turn", methods=["pearson"], compare_published=True)
    row = turn[(turn.metric == "BLEU1") & (turn.dimension == "Info")].iloc[0]
    assert row["published"] == 0.31 and row["diff"] == pytest.approx(row["r"] - 0.31)
    system = correlations(con, "paper", level="system", methods=["pearson"], compare_published=True)
    assert system[(system.metric == "BLEU1") & (system.dimension == "Info")].iloc[0]["published"] == 0.77
    (folder / "published_correlations.csv").write_text(
        "paper_table,competition,skill,dimension,metric,method,value,level\n"
        "4,lic2021,knowledge,Info,F1,pearson,0.31,utterance\n", encoding="utf-8")
    before = fingerprint(con)
    with pytest.raises(ImportRefused, match=r"row 2, field 'level': expected one of system, dialogue, turn"):
        import_published(con, folder, dataset="paper")
    assert fingerprint(con) == before
