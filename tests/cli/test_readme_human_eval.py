"""The "Run a human evaluation" commands of docs/analysis/human-evaluation.md run as
written on the default store (`evalcore init`): they
named a dataset (`msde`) that store does not hold (issue 46, item 4)."""
import re
import shlex

from evalcore.cli import main
from support import ROOT, copy_default_store


def readme_commands(name: str) -> list[list[str]]:
    """The `python -m evalcore ...` lines of docs/analysis/human-evaluation.md's bash block marked `<!-- example: NAME -->`,
    as argument
    lists (a line ending in a backslash goes on on the next)."""
    text = (ROOT / "docs" / "analysis" / "human-evaluation.md").read_text(encoding="utf-8")
    match = re.search(rf"<!-- example: {name} -->\n\s*```bash\n(.*?)```", text, re.S)
    assert match, f"docs/analysis/human-evaluation.md has no bash example marked {name!r}"
    joined = re.sub(r"\\\n\s*", " ", match.group(1))
    commands = [shlex.split(line.strip()) for line in joined.splitlines() if line.strip()]
    assert all(c[:3] == ["python", "-m", "evalcore"] for c in commands), commands
    return [c[3:] for c in commands]


def test_the_human_evaluation_commands_run_on_the_default_store(tmp_path, monkeypatch, capsys, default_store_file):
    db = copy_default_store(default_store_file, tmp_path / "evalcore.duckdb")   # as `evalcore init` builds it
    monkeypatch.setenv("EVALCORE_DB", str(db))
    commands = readme_commands("human-evaluation")
    assert [c[:2] for c in commands] == [["task", "create"], ["task", "create"], ["task", "list"]]
    ids = []
    for args in commands:
        assert main(args) == 0, (args, capsys.readouterr().err)
        out = capsys.readouterr()
        if args[1] == "create":
            ids.append(int(out.out.strip()))
            assert f"task {ids[-1]}: " in out.err and "K = 2" in out.err
    listing = out.out
    # the embedded demo task and the two new ones: 20 absolute units of kdconv/knowledge, 15 side-by-side pairs
    assert ids == [2, 3]
    assert "KdConv, Info and Coh" in listing and "pairwise" in listing and "absolute" in listing
    from evalcore.store import connect
    from evalcore.store import tasks as stored

    con = connect(db)
    try:
        units = stored.units(con, 2)
        assert len(units) == 20 and set(units["track"]) == {"kdconv/knowledge"}
        assert len(stored.units(con, 3)) == 15
    finally:
        con.close()
