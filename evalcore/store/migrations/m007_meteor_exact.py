"""The exact-match METEOR that evalcore computed before METEOR 1.5 came is `METEOR-exact` now: its stored
values, system scores and signatures are renamed (kept, not dropped). `METEOR` computed from here on is
METEOR 1.5; published METEOR columns (a source's own tables) keep their name."""

VERSION = 7

SQL = """
UPDATE metric_scores SET signature = 'METEOR-exact' || substr(signature, 7) WHERE signature LIKE 'METEOR|%';
UPDATE metric_signatures SET signature = 'METEOR-exact' || substr(signature, 7), metric = 'METEOR-exact'
    WHERE signature LIKE 'METEOR|%';
UPDATE system_scores SET name = 'METEOR-exact', signature = 'METEOR-exact' || substr(signature, 7)
    WHERE origin = 'computed' AND name = 'METEOR' AND signature LIKE 'METEOR|%';
UPDATE archived_scores SET name = 'METEOR-exact', signature = 'METEOR-exact' || substr(signature, 7)
    WHERE origin = 'computed' AND name = 'METEOR' AND signature LIKE 'METEOR|%';
"""
