"""`score --judge-base-url` with a key pasted into the URL (issue 61, B8): the judge is unavailable, in registration's
sentence (core.urls.problem through chat.availability), and no output repeats the key."""
from __future__ import annotations

import pytest

from evalcore.cli import main

KEY = "sk-canary-3f9a1c77e2"


@pytest.mark.parametrize("url", [f"http://user:{KEY}@127.0.0.1:1/v1", f"http://127.0.0.1:1/v1?api_key={KEY}",
                                 f"http://127.0.0.1:99999/v1/{KEY}"])
def test_a_key_in_the_judge_base_url_is_never_printed(toy, url, capsys):
    db = toy.execute("SELECT path FROM duckdb_databases() WHERE database_name = current_database()").fetchall()[0][0]
    toy.close()
    assert main(["score", "--db", db, "--dataset", "toy", "--metrics", "Judge-Coh", "--judge-base-url", url,
                 "--judge-model", "m"]) == 1
    said = capsys.readouterr()
    assert "Judge-Coh unavailable: judge base URL" in said.out + said.err
    assert KEY not in said.out + said.err
