"""External metrics: values computed elsewhere and imported with `evalcore import scores` (also the
judgments an MT-Bench folder carries). Each store registers its own (table external_metrics); the
registry makes one object per name for that store only (registry.of(con))."""
from __future__ import annotations

from evalcore.metrics.base import Metric, Signature


class External(Metric):
    family, corpus, sentence = "external", "mean", "imported"
    needs_references, per_item, tokenized = False, True, False

    def __init__(self, name: str, higher_is_better: bool = True, description: str | None = None):
        self.name, self.higher_is_better = name, higher_is_better
        self.description = description or "external metric: values imported with `import scores`"

    def availability(self, opts):
        return "an external metric: its values are imported (`import scores`), not computed here"

    def signature(self, plan=None, text: str | None = None) -> Signature:
        """What produced the numbers, as the user describes it (the file's sha256 is in the history)."""
        return Signature(self.name, ("external", f"sig:{' '.join((text or 'unsigned').split())}"))

    def compute(self, batch):
        raise RuntimeError(self.availability(None))


METRICS: list = []   # none built in: they come with the store
