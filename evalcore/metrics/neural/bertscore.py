"""BERTScore (Zhang et al. 2020) with bert-score's model loading and scoring rules, batched for speed.

Same numbers as `bert_score.score` on the same model and layer (checked in tests and bench/neural.py):
- texts are stripped and encoded with special tokens, truncated to the model's maximum length;
- token embeddings of layer L (the model cut after L layers), L2-normalised;
- P = idf-weighted mean over candidate tokens of the best cosine with a reference token (special
  tokens take part in the max but weigh 0), R the same the other way, F = 2PR / (P + R);
- an empty candidate or reference scores P = R = F = 0; several references: each of P, R, F is
  the max over references; idf (optional) = log((N + 1) / (df + 1)) over N reference documents;
- rescaling (optional): (x - b) / (1 - b) with bert-score's published baseline b for the layer.
Faster because every distinct text is embedded once, texts are batched by their real token length
(bert-score sorts by the number of spaces, which leaves Chinese batches padded to the longest text),
and tokenisation is one batched call.
"""
from __future__ import annotations

import math
import os
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

TOKEN_BUDGET = 8192      # padded tokens per forward batch
MAX_BATCH = 256


def pick_device(device: str | None = None) -> str:
    import torch

    if device:
        return device
    return "cuda" if torch.cuda.is_available() else "cpu"


@dataclass
class Backbone:
    model: object
    tokenizer: object
    name: str          # for signatures: hub name, or directory name plus a digest of its config
    layer: int
    device: str

    @classmethod
    def load(cls, model: str, layer: int, name: str, device: str | None = None) -> "Backbone":
        from bert_score.utils import get_model, get_tokenizer

        dev = pick_device(device)
        tok = get_tokenizer(model, use_fast=True)
        net = get_model(model, layer).to(dev)
        return cls(net, tok, name, layer, dev)

    def encode_ids(self, texts: list[str]) -> list[list[int]]:
        """Token ids with special tokens, as bert-score's sent_encode gives them."""
        tok = self.tokenizer
        stripped = [t.strip() for t in texts]
        out = tok(stripped, add_special_tokens=True, truncation=True, max_length=tok.model_max_length)["input_ids"]
        return out  # an empty text gives the special tokens alone, as in bert-score

    def special_ids(self) -> set[int]:
        tok = self.tokenizer
        return {i for i in (tok.cls_token_id, tok.sep_token_id) if i is not None}

    def embed(self, ids: list[list[int]], on_batch=None) -> list[np.ndarray]:
        """Per text: (len, d) L2-normalised token vectors of the chosen layer."""
        import torch

        order = np.argsort([len(x) for x in ids], kind="stable")[::-1]
        out: list[np.ndarray | None] = [None] * len(ids)
        pad = self.tokenizer.pad_token_id or 0
        start = 0
        with torch.inference_mode():
            while start < len(order):
                longest = len(ids[order[start]])
                size = max(1, min(MAX_BATCH, TOKEN_BUDGET // max(longest, 1)))
                batch = order[start:start + size]
                x = torch.full((len(batch), longest), pad, dtype=torch.long)
                mask = torch.zeros((len(batch), longest), dtype=torch.long)
                for row, i in enumerate(batch):
                    x[row, :len(ids[i])] = torch.tensor(ids[i])
                    mask[row, :len(ids[i])] = 1
                hidden = self.model(x.to(self.device), attention_mask=mask.to(self.device))[0]
                hidden = hidden / hidden.norm(dim=-1, keepdim=True)
                hidden = hidden.float().cpu().numpy()
                for row, i in enumerate(batch):
                    out[i] = hidden[row, :len(ids[i])]
                start += len(batch)
                if on_batch:
                    on_batch(len(batch))
        return out


def idf_weights(backbone: Backbone, documents: list[str]) -> tuple[dict[int, float], float]:
    """bert-score's idf: log((N + 1) / (df + 1)); unseen pieces log(N + 1); special tokens 0."""
    df = Counter()
    for ids in backbone.encode_ids(documents):
        df.update(set(ids))
    n = len(documents)
    weights = {i: math.log((n + 1) / (c + 1)) for i, c in df.items()}
    for s in backbone.special_ids():
        weights[s] = 0.0
    return weights, math.log(n + 1)


def baseline(path: str | Path, layer: int) -> np.ndarray:
    """(P, R, F) baseline of a bert-score rescale file (rows by layer, first column LAYER)."""
    row = pd.read_csv(path).iloc[layer].to_numpy()
    return np.asarray(row[1:], dtype=float)


def shipped_baseline(model: str, lang: str) -> Path | None:
    """bert-score's own baseline file for a model name (or a directory named like one)."""
    import bert_score

    name = Path(model.rstrip("/")).name if os.path.isdir(model) else model
    path = Path(bert_score.__file__).parent / "rescale_baseline" / lang / f"{name}.tsv"
    return path if path.is_file() else None


def score_pairs(backbone: Backbone, hyps: list[str], refs: list[list[str]], *, idf: tuple[dict, float] | None = None,
                rescale: np.ndarray | None = None, on_batch=None) -> np.ndarray:
    """(len(hyps), 3) P, R, F; NaN rows for responses without references."""
    texts = list(dict.fromkeys([*hyps, *(r for rs in refs for r in rs)]))
    index = {t: i for i, t in enumerate(texts)}
    ids = backbone.encode_ids(texts)
    emb = backbone.embed(ids, on_batch=on_batch)
    special = backbone.special_ids()
    weights = []
    for seq in ids:
        if idf is None:
            w = np.array([0.0 if t in special else 1.0 for t in seq])
        else:
            table, unseen = idf
            w = np.array([table.get(t, unseen) for t in seq])
        total = w.sum()
        weights.append(w / total if total > 0 else w)
    empty = [len(seq) <= 2 and not t.strip() for seq, t in zip(ids, texts)]
    out = np.full((len(hyps), 3), np.nan)
    for i, (h, rs) in enumerate(zip(hyps, refs)):
        if not rs:
            continue
        hi = index[h]
        best = np.full(3, -np.inf)
        for r in rs:
            ri = index[r]
            if empty[hi] or empty[ri]:
                prf = np.zeros(3)
            else:
                sim = emb[hi] @ emb[ri].T
                p = float(sim.max(axis=1) @ weights[hi])
                r_ = float(sim.max(axis=0) @ weights[ri])
                f = 2 * p * r_ / (p + r_) if (p + r_) != 0 else 0.0
                prf = np.array([p, r_, 0.0 if math.isnan(f) else f])
            best = np.maximum(best, prf)
        out[i] = best
    if rescale is not None:
        out = (out - rescale) / (1 - rescale)
    return out
