"""BLEURT from a user's checkpoint directory: a one-output sequence classifier over (reference, candidate).

No package ships a BLEURT checkpoint, so there is no default. The PyTorch ports of BLEURT
(e.g. BERT-based checkpoints converted for transformers) load with AutoModelForSequenceClassification;
the score is the single logit. Several references: the max.
"""
from __future__ import annotations

from functools import lru_cache

import numpy as np

from evalcore.metrics.neural.bertscore import pick_device

BATCH = 64


@lru_cache(maxsize=1)
def _load(checkpoint: str, device: str | None):
    """(tokenizer, model, device), loaded once for all batches of a scoring run."""
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    dev = pick_device(device)
    tok = AutoTokenizer.from_pretrained(checkpoint)
    model = AutoModelForSequenceClassification.from_pretrained(checkpoint).to(dev).eval()
    if model.config.num_labels != 1:
        raise ValueError(f"{checkpoint}: a BLEURT checkpoint has one output, this one has {model.config.num_labels}")
    return tok, model, dev


def bleurt_scores(checkpoint: str, hyps: list[str], refs: list[list[str]], device: str | None = None) -> np.ndarray:
    import torch

    tok, model, dev = _load(checkpoint, device)
    rows = [(i, r, h) for i, (h, rs) in enumerate(zip(hyps, refs)) for r in rs]
    order = sorted(range(len(rows)), key=lambda k: len(rows[k][1]) + len(rows[k][2]))
    out = np.full(len(hyps), -np.inf)
    with torch.inference_mode():
        for start in range(0, len(order), BATCH):
            batch = [rows[k] for k in order[start:start + BATCH]]
            enc = tok([r for _, r, _ in batch], [h for _, _, h in batch], padding=True, truncation=True,
                      max_length=min(tok.model_max_length, 512), return_tensors="pt").to(dev)
            logits = model(**enc).logits[:, 0].float().cpu().numpy()
            for (i, _, _), v in zip(batch, logits):
                out[i] = max(out[i], float(v))
    out[np.isinf(out)] = np.nan
    return out
