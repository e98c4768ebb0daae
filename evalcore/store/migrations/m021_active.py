"""Active rating tasks (issue 63): a task may sample its units with probabilities that favour where a predictor (a
judge, or a metric on the dimension's scale) is uncertain, and an estimate of a model's mean then weighs each rated
unit by one over its probability (evalcore.analysis.ppi.finite_mean). `tasks.judge`: the predictor that steered an
active task (NULL for the other samplings). `task_units.probability`: the unit's inclusion probability within its
stratum (the track and the rated model), stored for the samplings that know it exactly (stratified and active
absolute tasks of single responses); NULL where it is not known (a task made before this migration, a pairwise or
dialogue-level task, disagreement sampling, which is not random). The statements are idempotent: a store migrated
again from an older version (a test that rewinds schema_version) meets them a second time."""
VERSION = 21

SQL = """
ALTER TABLE tasks ADD COLUMN IF NOT EXISTS judge VARCHAR;
ALTER TABLE task_units ADD COLUMN IF NOT EXISTS probability DOUBLE;
"""
