"""The analysis layer's choices by name: correlation methods and levels, metric-value origins, p-value
adjustments, ensemble hold-outs and levels, and the turns an unfinished task-oriented session counts. Plain
values that import nothing, so the CLI builds its choices and help from them at start-up (without scipy) and
importers check files against the same names."""
METHODS = ("pearson", "spearman", "kendall")
LEVELS = ("system", "dialogue", "turn")
ORIGINS = ("computed", "published")
ADJUSTMENTS = ("holm", "none")
HOLDOUTS = ("track", "competition")
ENSEMBLE_LEVELS = ("system", "turn")
MAX_TURNS = 34.29   # turns counted for a task-oriented session that did not finish (taskoriented)
AGREEMENT_STATISTICS = ("chance", "corr_pairwise", "corr_loo", "corr_item_mean")   # chance: kappas and alpha
AGREEMENT_RATERS = ("ids", "slots")
OUTLIER_RULES = ("none", "fed")
JUDGE_AUDIT_PARTS = ("agreement", "headline", "pairwise", "length-controlled", "drift", "uncertainty")


def said(names, last: str = "or") -> str:
    """Names as a sentence: ('system', 'dialogue', 'turn') -> 'system, dialogue or turn'."""
    names = list(names)
    return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} {last} {names[-1]}"

# How a per-response metric gives one value per dialogue (evalcore.analysis.correlate, level 'dialogue'): named
# wherever a dialogue-level figure is shown, and appended to the metric's signature there.
DIALOGUE_AGGREGATE = "dialogue:mean-of-turns"
DIALOGUE_VALUE = ("a dialogue's metric value is the mean of its model turns' values (signature + "
                  f"'|{DIALOGUE_AGGREGATE}')")

PLAN_QUESTIONS = ("difference", "ranking", "correlation", "agreement")   # `evalcore plan --question` (analysis.planning)
