"""METEOR 1.5 (Denkowski and Lavie 2014) through the jar pycocoevalcap ships, as pycocoevalcap runs it.

One Java process per scoring run (`java -jar -Xmx2G meteor-1.5.jar - - -stdio -l en -norm`), fed
in batches: a `SCORE ||| ref1 ||| ... ||| hyp` line per response gives its statistics, one
`EVAL ||| stats ||| ...` line per batch gives each response's score (and the batch's aggregate,
read and dropped: a model's value is the mean of its responses' scores, as the signature says).
English (`-l en`): exact, stem, WordNet synonym and paraphrase matching with the English
paraphrase table shipped beside the jar. Any other language (`-l other -lower`: METEOR's
language-independent parameters, exact matching only; -norm exists for English only) on the tokens of
the track's tokenizer joined by spaces (characters for Chinese). Text is one line per segment: newlines become spaces, and "|||"
(the protocol's separator) is dropped from responses as pycocoevalcap does.
"""
from __future__ import annotations

import importlib.util
import shutil
import subprocess
import threading
from pathlib import Path

import numpy as np

from evalcore.metrics.base import Metric, Result, Signature

VERSION = "1.5"
BATCH = 200  # responses per SCORE block and EVAL line: the pipes never fill while we write
_RUNNING: dict[str, "Meteor"] = {}
_LOCK = threading.Lock()


def jar() -> Path | None:
    """meteor-1.5.jar inside the installed pycocoevalcap package (found without importing it)."""
    spec = importlib.util.find_spec("pycocoevalcap")
    if spec is None or not spec.submodule_search_locations:
        return None
    path = Path(list(spec.submodule_search_locations)[0]) / "meteor" / "meteor-1.5.jar"
    return path if path.is_file() else None


def availability(language: str = "en") -> str | None:
    """Why METEOR 1.5 cannot run here, or None when it can."""
    if shutil.which("java") is None:
        return ("needs a Java runtime (`java` on PATH; on Debian: apt-get install default-jre-headless); "
                "METEOR-exact is the exact-match variant that needs none")
    path = jar()
    if path is None:
        return "needs meteor-1.5.jar from the pycocoevalcap package (pip install pycocoevalcap)"
    if mode(language) == "en" and not (path.parent / "data" / "paraphrase-en.gz").is_file():
        return f"needs the English paraphrase table beside the jar ({path.parent / 'data' / 'paraphrase-en.gz'})"
    return None


def mode(language: str | None) -> str:
    """METEOR's -l: 'en' for English, else its language-independent 'other'."""
    return "en" if (language or "").lower().startswith("en") else "other"


def signature_part(language: str | None) -> str:
    return (f"meteor:{VERSION}|l:{mode(language)}|{'norm' if mode(language) == 'en' else 'lower'}|"
            + ("modules:exact+stem+synonym+paraphrase" if mode(language) == "en" else "modules:exact"))


def one_line(text: str) -> str:
    return " ".join(text.split())


class Meteor:
    """A running METEOR 1.5 process for one language mode."""

    def __init__(self, lang: str):
        path = jar()
        if path is None:
            raise RuntimeError(availability(lang) or "meteor-1.5.jar not found")
        self.lang = lang
        # -norm (METEOR's tokenizer and normaliser) exists for English only; other text comes tokenized
        self.proc = subprocess.Popen(["java", "-jar", "-Xmx2G", path.name, "-", "-", "-stdio", "-l", lang,
                                      "-norm" if lang == "en" else "-lower"],
                                     cwd=path.parent, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.DEVNULL)

    def _ask(self, lines: list[str], answers: int) -> list[str]:
        self.proc.stdin.write(("".join(line + "\n" for line in lines)).encode("utf-8"))
        self.proc.stdin.flush()
        out = [self.proc.stdout.readline().decode("utf-8").strip() for _ in range(answers)]
        if any(line == "" for line in out):
            raise RuntimeError("METEOR 1.5 stopped answering (is the Java runtime working?)")
        return out

    def score(self, hyps: list[str], refs: list[list[str]]) -> tuple[np.ndarray, np.ndarray]:
        """Per response: its METEOR 1.5 score and its statistics (the numbers METEOR aggregates)."""
        values, stats = np.full(len(hyps), np.nan), {}
        asked = [i for i in range(len(hyps)) if refs[i]]  # no reference: no value (unavailable, not 0)
        for start in range(0, len(asked), BATCH):
            part = asked[start:start + BATCH]
            lines = [" ||| ".join(["SCORE", *(one_line(r) for r in refs[i]),
                                   one_line(hyps[i].replace("|||", ""))]) for i in part]
            got = self._ask(lines, len(lines))
            scores = self._ask(["EVAL ||| " + " ||| ".join(got)], len(got) + 1)[:-1]
            for i, value, line in zip(part, scores, got):
                values[i] = float(value)
                stats[i] = [float(x) for x in line.split()]
        width = max((len(v) for v in stats.values()), default=1)
        table = np.full((len(hyps), width), np.nan)
        for i, row in stats.items():
            table[i, :len(row)] = row
        return values, table

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.stdin.close()
            self.proc.kill()
            self.proc.wait()


def scorer(language: str | None) -> Meteor:
    """The run's METEOR process for this language mode, started on first use (close_all ends them)."""
    lang = mode(language)
    with _LOCK:
        if lang not in _RUNNING or _RUNNING[lang].proc.poll() is not None:
            _RUNNING[lang] = Meteor(lang)
        return _RUNNING[lang]


def close_all() -> None:
    with _LOCK:
        for m in _RUNNING.values():
            m.close()
        _RUNNING.clear()


# ---------------------------------------------------------------- the metric object
ORDER = 12


class Meteor15(Metric):
    """METEOR 1.5, asked for by name (it runs in Java): not in the quick `lexical` group."""

    name, corpus, sentence = "METEOR", "mean", "meteor-1.5-segment"
    description = ("METEOR 1.5 through pycocoevalcap's jar: exact, stem, WordNet synonym and paraphrase matching for "
                   "English (-l en -norm); METEOR's language-independent exact matching on the track's tokens for "
                   "other languages (-l other); needs a Java runtime")

    def availability(self, opts):
        return availability(opts.lang)

    def signature(self, plan):
        # the jar's own matching; the track's tokenizer only where METEOR has no -norm
        lang = plan.neural.lang
        tok = "tok:meteor-norm" if mode(lang) == "en" else plan.tokenizer.signature
        return Signature(self.name, (signature_part(lang), tok, f"corpus:{self.corpus}", f"flavor:{plan.flavor.name}"))

    def compute(self, batch):
        """Stats: the value, then METEOR's own statistics."""
        plan = batch.plan
        lang = plan.neural.lang
        prep = (lambda t: t) if mode(lang) == "en" else (lambda t: " ".join(plan.tokenizer(t)))
        values, stats = scorer(lang).score([prep(h) for h in batch.hyps], [[prep(r) for r in rs] for rs in batch.refs])
        return Result(values, np.column_stack([values, stats]))

    def release(self):
        close_all()   # one METEOR process per scoring run


METRICS = [Meteor15()]
