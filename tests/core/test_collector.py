"""evalcore.core.collector: a page server freezes its heap after its first runs, and only then."""
import subprocess
import sys

from support import ROOT


def test_the_heap_is_frozen_after_each_of_the_first_runs_only():
    code = ("import gc\nfrom evalcore.core import collector as c\n"
            "assert gc.get_freeze_count() == 0\n"
            "c.after_run()\nfirst = gc.get_freeze_count()\n"
            "for _ in range(c.FREEZE_RUNS - 1): c.after_run()\n"
            "frozen = gc.get_freeze_count()\n"
            "kept = [[i] for i in range(10_000)]   # made after the first runs: left to the collector\n"
            "c.after_run()\n"
            "print(first > 0, gc.get_freeze_count() == frozen)")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["True", "True"]
