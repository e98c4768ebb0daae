"""The Judge audit page's data: which datasets an LLM judge scored, the audit's tables and headlines, and
the human ceiling a judge is measured against (evalcore.analysis.judge_audit)."""
from __future__ import annotations

import duckdb
import pandas as pd

from evalcore.analysis import judge_agreement, judge_audit, judge_values
from evalcore.analysis.options import DIALOGUE_AGGREGATE
from evalcore.core.i18n import N_, _
from evalcore.pagedata import catalog
from evalcore.pagedata.scope import dataset_scoped, per_dataset


# evalcore.analysis.judge_agreement.headline's verdicts, shown in the viewer's language (the table keeps them in English
# for the CLI and a download)
VERDICTS = (N_("no ceiling: fewer than two annotators per target"),
            N_("agrees with people as well as people agree with each other"), N_("below the human ceiling"),
            N_("not distinguishable from the human ceiling"))


@dataset_scoped
def judged_part(con: duckdb.DuckDBPyConnection, dataset: str) -> bool:
    """Did an LLM judge score the dataset (its system scores), or does it hold imported pairwise judgments?"""
    judges = judge_values.judge_names(con)
    return bool(con.execute("""
        SELECT EXISTS (SELECT 1 FROM system_scores WHERE dataset = ? AND origin = 'computed' AND list_contains(?, name))
            OR EXISTS (SELECT 1 FROM pairwise_judgments WHERE dataset = ? AND source = 'judge')""",
        [dataset, judges, dataset]).fetchall()[0][0])


def merge_judged(parts: dict[str, bool]) -> list[str]:
    return sorted(d for d, judged in parts.items() if judged)


@per_dataset(judged_part, merge_judged)
def judged_datasets(con: duckdb.DuckDBPyConnection) -> list[str]:
    """Datasets an LLM judge scored (its system scores) or with imported pairwise judgments, in name order."""
    return merge_judged({d: judged_part(con, d) for d in catalog.datasets(con)})


@dataset_scoped
def judge_audit_part(con: duckdb.DuckDBPyConnection, dataset: str, part: str, bootstrap: int = 200) -> pd.DataFrame:
    """One table of the judge audit, as `evalcore judge-audit --part` gives it (fewer resamples: a page)."""
    return judge_audit.audit_part(con, dataset, part, bootstrap=bootstrap, seed=0)


@dataset_scoped
def judge_headlines(con: duckdb.DuckDBPyConnection, dataset: str, dimension: str, level: str = "turn") -> pd.DataFrame:
    """For Metric trust's hover: per judge metric and skill, its audit headline against `dimension` (the judge's
    own dimension where it has one) under the signature its column holds now, at Metric trust's level (dialogue:
    the audit on ratings of whole dialogues; system: the turn-level one). Columns metric, skill, audit."""
    out = pd.DataFrame(columns=["metric", "skill", "audit"])
    if dataset not in judged_datasets(con):
        return out
    head = judge_agreement.headline(judge_agreement.agreement(con, dataset, bootstrap=0))
    current = {s for (s,) in con.execute("SELECT DISTINCT signature FROM system_scores WHERE dataset = ? AND "
                                         "origin = 'computed'", [dataset]).fetchall()}
    wanted = "dialogue" if level == "dialogue" else "turn"
    suffix = f"|{DIALOGUE_AGGREGATE}" if wanted == "dialogue" else ""
    head = head[(head["level"] == wanted) & head["signature"].isin({s + suffix for s in current})]
    own = head["judge"].str.removeprefix("Judge-") == head["dimension"]
    head = head[own | (head["dimension"] == dimension)]
    if head.empty:
        return out

    def said(r) -> str:
        loo, ceiling, mean = r["judge (leave-one-out)"], r["human ceiling (leave-one-out)"], r["judge vs people's mean"]
        what = (_("audit on {dimension} (whole dialogues) ({asked})") if wanted == "dialogue"
                else _("audit on {dimension} ({asked})")).format(dimension=r["dimension"], asked=r["asked"])
        if pd.isna(ceiling):
            return (_("{what}: r = {r} with the one rating per dialogue; no ceiling") if wanted == "dialogue"
                    else _("{what}: r = {r} with the one rating per response; no ceiling")).format(
                what=what, r=f"{mean:.2f}")
        return _("{what}: leave-one-out r = {loo} vs the human ceiling {ceiling}: {verdict}").format(
            what=what, loo=f"{loo:.2f}", ceiling=f"{ceiling:.2f}", verdict=_(r["verdict"]))

    head = head.assign(audit=head.apply(said, axis=1))
    rows = head.groupby(["judge", "skill"])["audit"].agg("; ".join).reset_index()
    return rows.rename(columns={"judge": "metric"})[["metric", "skill", "audit"]]


def judge_headline(agreement_table: pd.DataFrame) -> pd.DataFrame:
    """The headline from the agreement table a page already has (not computed twice), its verdicts in the viewer's
    language."""
    head = judge_agreement.headline(agreement_table)
    return head.assign(verdict=head["verdict"].map(_)) if len(head) else head


@dataset_scoped
def human_ceiling(con: duckdb.DuckDBPyConnection, dataset: str) -> pd.DataFrame:
    return judge_agreement.ceiling(con, dataset)


@dataset_scoped
def nothing_to_audit(con: duckdb.DuckDBPyConnection, dataset: str, part: str) -> str:
    return judge_audit.nothing_to_audit(con, dataset, part)
