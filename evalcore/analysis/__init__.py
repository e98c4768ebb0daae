"""Analysis: the statistics over stored values (correlations with people and their tests, trust
verdicts, ensembles, annotator agreement, leaderboards and their rank intervals, rankings, win rates,
the task-oriented measures). Reads the store and the metric registry; never writes scores."""
