"""Scoring jobs run in worker processes of their own (evalcore.services.jobs): a job whose worker ended
without finishing (killed, out of memory, the machine restarted) is claimed again and resumed (values
already cached are not computed or written again). `attempts` counts the claims, so a job that keeps
killing its worker is marked failed with the reason instead of being resumed for ever."""

VERSION = 12

SQL = """
ALTER TABLE jobs ADD COLUMN attempts INTEGER DEFAULT 0;
UPDATE jobs SET attempts = CASE WHEN state = 'queued' THEN 0 ELSE 1 END;
"""
