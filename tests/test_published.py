import pytest

from conftest import fingerprint
from evalcore.errors import ImportRefused
from evalcore.ingest.published import import_published

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
