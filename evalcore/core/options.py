"""Choices by name of the lower layers, as plain values that import nothing, so the CLI offers them in its parser
and help without importing jieba, numpy or DuckDB: the tokenizers (core.tokenize builds them under these names),
a rating task's modes and samplings, and the range of its seed (store.tasks)."""
TOKENIZER_NAMES = ("char", "space", "jieba", "en")

TASK_MODES = ("absolute", "pairwise")
TASK_SAMPLINGS = ("stratified", "disagreement", "active")   # how a task picks its units (evalcore.services.tasks)
TASK_LEVELS = ("response", "dialogue")   # what a unit is: one response, or a model's whole side of a dialogue
TASK_MAX_SEED = 2**31 - 1                          # a task's seed is stored as a 32-bit INTEGER

# A registered chat endpoint's defaults (evalcore endpoint add): sampling as chat models are commonly served,
# and the variable its key is read from at call time (never the key itself).
GENERATION_KEY_ENV = "EVALCORE_API_KEY"
GENERATION_TEMPERATURE = 0.7
GENERATION_TOP_P = 0.9
GENERATION_MAX_TOKENS = 256
GENERATION_TIMEOUT = 120.0
GENERATION_CONCURRENCY = 8

# Crowd studies (evalcore.store.crowd): the platforms a rating task opens to, the gold units' kinds, the pass rule's
# defaults (evalcore.store.crowd.RULE is this)
CROWD_PLATFORMS = ("prolific", "mturk", "generic")
CROWD_GOLD_KINDS = ("nonsense", "copies-knowledge", "custom")
CROWD_RULE = {"gold_min": 0.75, "comprehension": True, "too_fast_max": 0.5, "straight_lining": False, "identity": True}
