"""A store revision counter, bumped by every write, so caches (the dashboard's) know when to refresh."""

VERSION = 3

SQL = """
CREATE TABLE revision (n BIGINT NOT NULL);
INSERT INTO revision VALUES (0);
"""
