"""AB-LSTM-bi-MLP (seed 004): a reference-free discriminator of real vs. re-paired (context, response).

Model, as the seed describes it:
- sentence model: token vectors -> BiLSTM -> self-attention (u_i = tanh(W H_i + b),
  a = softmax(u_i . u_w), v = sum_i a_i H_i), one encoder each for question q and response r;
- matching: bilinear features q^T M r and r^T N q ("bi"; "uni" keeps q^T M r only);
- [q, q^T M r, r^T N q, r] -> MLP with one ReLU hidden layer -> softmax over {re-paired, real};
- cross-entropy, Adam, dropout, L2 (weight decay), early stopping on validation accuracy.
The score of a response is P(real | last context turn, response).

Token vectors: the multilingual USE token table (512-d, de-quantised, frozen) over its SentencePiece
pieces, the same vectors as EV/VE/GM. Why: the store's dialogues are a few thousand pairs, too few
to learn Chinese word vectors from scratch; the pretrained table covers Chinese and English, needs
no vocabulary of our own, and keeps the trainable model small enough for a CPU.

Data: every consecutive (turn, next turn) pair of the selected dialogues is a positive; for each,
one negative pairs the same turn with a response drawn (seeded) from another dialogue. Split by
dialogue (80/10/10, seeded), so no dialogue is in two parts.
"""
from __future__ import annotations

import hashlib
import json
import os
import time
from dataclasses import asdict, dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np
from tqdm import tqdm

from evalcore.metrics.base import Signature
from evalcore.metrics.neural import embedding as E

MAX_TOKENS = 48
VERSION = "1"
ABLATIONS = {
    "AB-LSTM-bi-MLP": dict(attention=True, match="bi"),
    "Bi-LSTM-bi-MLP": dict(attention=False, match="bi"),    # no attention: mean of BiLSTM states
    "AB-LSTM-uni-MLP": dict(attention=True, match="uni"),
    "AB-LSTM-MLP": dict(attention=True, match="none"),
}


@dataclass
class Config:
    hidden: int = 96           # per LSTM direction (the seed: 300; smaller trains in minutes on a CPU)
    mlp: int = 256             # the seed: 1024
    dropout: float = 0.5
    l2: float = 1e-5           # Adam weight decay (the seed's L2 parameter: 0.001)
    lr: float = 1e-3           # the seed: 1e-4, with more epochs than a CPU budget allows
    batch: int = 128
    epochs: int = 4
    patience: int = 3
    seed: int = 13
    attention: bool = True
    match: str = "bi"          # bi | uni | none


def _torch():
    import torch
    return torch


def build_model(config: Config, dim: int):
    torch = _torch()
    nn = torch.nn

    class Encoder(nn.Module):
        def __init__(self):
            super().__init__()
            self.lstm = nn.LSTM(dim, config.hidden, batch_first=True, bidirectional=True)
            self.proj = nn.Linear(2 * config.hidden, 2 * config.hidden)
            self.context = nn.Parameter(torch.randn(2 * config.hidden) * 0.05)

        def forward(self, x, mask):
            h, _ = self.lstm(x)
            if config.attention:
                u = torch.tanh(self.proj(h))
                logits = (u @ self.context).masked_fill(~mask, float("-inf"))
                a = torch.softmax(logits, dim=1)
                a = torch.nan_to_num(a)                      # an empty text: all weights 0
                return (a.unsqueeze(-1) * h).sum(1)
            m = mask.unsqueeze(-1).float()
            return (h * m).sum(1) / m.sum(1).clamp(min=1)

    class ABLSTM(nn.Module):
        def __init__(self):
            super().__init__()
            self.q_enc, self.r_enc = Encoder(), Encoder()
            d = 2 * config.hidden
            self.M = nn.Parameter(torch.randn(d, d) * 0.01)
            self.N = nn.Parameter(torch.randn(d, d) * 0.01)
            n_match = {"bi": 2, "uni": 1, "none": 0}[config.match]
            self.drop = nn.Dropout(config.dropout)
            self.mlp = nn.Sequential(nn.Linear(2 * d + n_match, config.mlp), nn.ReLU(), nn.Dropout(config.dropout),
                                     nn.Linear(config.mlp, 2))

        def forward(self, qx, qm, rx, rm):
            q, r = self.q_enc(qx, qm), self.r_enc(rx, rm)
            parts = [q]
            if config.match in ("bi", "uni"):
                parts.append(((q @ self.M) * r).sum(1, keepdim=True))
            if config.match == "bi":
                parts.append(((r @ self.N) * q).sum(1, keepdim=True))
            parts.append(r)
            return self.mlp(self.drop(torch.cat(parts, dim=1)))

    return ABLSTM()


# ---------------------------------------------------------------- data
class Vectors:
    """USE token ids per text, and their vectors, for batches."""

    def __init__(self):
        self.E = E
        self.dim = 512

    def ids(self, texts: list[str]) -> list[np.ndarray]:
        flat, lens = self.E.token_ids(texts)
        out, start = [], 0
        for n in lens:
            out.append(flat[start:start + min(n, MAX_TOKENS)])
            start += n
        return out

    def batch(self, seqs: list[np.ndarray]):
        torch = _torch()
        lens = np.fromiter(map(len, seqs), dtype=np.int64, count=len(seqs))
        width = max(1, int(lens.max(initial=0)))
        mask = np.arange(width) < lens[:, None]
        x = np.zeros((len(seqs), width, self.dim), np.float32)
        if lens.sum():
            # row-major order of the mask is the order of the concatenated sequences
            x[mask] = self.E.token_vectors(np.concatenate(seqs))
        return torch.from_numpy(x), torch.from_numpy(mask)


MIN_DIALOGUES = 2   # per part: a negative is a response from another dialogue of the same part
MIN_PAIRS = 1       # per part: train learns from it, valid stops early on it, test reports on it
TRIES = 64          # rejection draws for a negative before drawing among the other dialogues directly


def pairs_from_store(con, dataset: str, tracks: list[str] | None, seed: int) -> dict[str, list]:
    """Positives from consecutive turns, as many negatives re-paired across dialogues; split by dialogue.
    Refuses (ValueError, with the counts) a split too small to train on, before drawing any negative."""
    dialogues = _dialogues(con, dataset, tracks)
    rng = np.random.default_rng(seed)
    ids = sorted(dialogues)
    rng.shuffle(ids)
    train_end, valid_end = _cuts(len(ids))
    parts = {"train": ids[:train_end], "valid": ids[train_end:valid_end], "test": ids[valid_end:]}
    _check_sizes(dataset, tracks, parts, dialogues)
    out = {}
    for name, members in parts.items():
        pos = [(turns[i], turns[i + 1], d) for d in members for turns in [dialogues[d]] for i in range(len(turns) - 1)]
        pool = [(t, d) for d in members for t in dialogues[d]]
        neg = [(q, negative_sample(pool, d, rng)) for q, _, d in pos]
        qs = [q for q, _, _ in pos] + [q for q, _ in neg]
        rs = [r for _, r, _ in pos] + [r for _, r in neg]
        ys = [1] * len(pos) + [0] * len(neg)
        out[name] = [qs, rs, np.array(ys)]
    out["dialogues"] = {k: len(v) for k, v in parts.items()}
    return out


def _dialogues(con, dataset: str, tracks: list[str] | None) -> dict[str, list[str]]:
    """Each stored dialogue's turn texts, in turn order."""
    rows = con.execute("""
        SELECT t.dialogue_id, t.turn_index, t.text FROM turns t JOIN dialogues d USING (dataset, dialogue_id)
        WHERE t.dataset = ? AND (? IS NULL OR list_contains(?, d.track)) ORDER BY 1, 2
    """, [dataset, None if not tracks else 1, tracks or []]).fetchall()
    dialogues: dict[str, list[str]] = {}
    for did, _, text in rows:
        dialogues.setdefault(did, []).append(text)
    return dialogues


def _cuts(n: int) -> tuple[int, int]:
    """Where train ends and valid ends in n shuffled dialogues (80/10/10)."""
    return int(0.8 * n), int(0.9 * n)


def fewest_dialogues() -> int:
    """The fewest dialogues whose 80/10/10 split gives every part MIN_DIALOGUES."""
    def enough(n: int) -> bool:
        train_end, valid_end = _cuts(n)
        return min(train_end, valid_end - train_end, n - valid_end) >= MIN_DIALOGUES

    return next(n for n in range(1, 1_000) if enough(n))


def _check_sizes(dataset: str, tracks: list[str] | None, parts: dict[str, list[str]],
                 dialogues: dict[str, list[str]]) -> None:
    """Refuse, with every part's counts, a split where some part cannot give negatives or pairs."""
    counts = {name: (len(members), sum(len(dialogues[d]) - 1 for d in members)) for name, members in parts.items()}
    small = [name for name, (n, pairs) in counts.items() if n < MIN_DIALOGUES or pairs < MIN_PAIRS]
    if not small:
        return
    scope = f"tracks {', '.join(tracks)}" if tracks else "all tracks"
    found = ", ".join(f"{name} {n} dialogue(s) with {pairs} pair(s)" for name, (n, pairs) in counts.items())
    raise ValueError(
        f"too little data to train ABLSTM on dataset {dataset!r} ({scope}): {len(dialogues)} stored dialogue(s), "
        f"split 80/10/10 into {found}; each of train, valid and test needs at least {MIN_DIALOGUES} dialogues "
        f"(a negative is a response from another dialogue of the same part) and at least {MIN_PAIRS} pair of "
        f"consecutive turns, so at least {fewest_dialogues()} dialogues of two or more turns are needed "
        f"(too small: {', '.join(small)})")


def negative_sample(pool: list[tuple[str, str]], own: str, rng) -> str:
    """A response drawn uniformly from the pool's turns of dialogues other than `own`; never loops forever."""
    for _ in range(TRIES):
        text, other = pool[rng.integers(len(pool))]
        if other != own:
            return text
    # `own` holds most of the pool: draw among the others directly instead of retrying
    others = [text for text, other in pool if other != own]
    if not others:
        raise ValueError(f"no dialogue other than {own!r} to draw a negative response from")
    return others[rng.integers(len(others))]


def _figures(y: np.ndarray, pred: np.ndarray) -> dict[str, float]:
    tp = int(((pred == 1) & (y == 1)).sum())
    fp = int(((pred == 1) & (y == 0)).sum())
    fn = int(((pred == 0) & (y == 1)).sum())
    precision = tp / (tp + fp) if tp + fp else 0.0
    recall = tp / (tp + fn) if tp + fn else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return {"accuracy": float((pred == y).mean()), "precision": precision, "recall": recall, "f1": f1, "n": int(len(y))}


def _predict(model, vec: Vectors, q_ids, r_ids, batch: int = 512) -> np.ndarray:
    torch = _torch()
    model.eval()
    out = []
    with torch.inference_mode():
        for s in range(0, len(q_ids), batch):
            qx, qm = vec.batch(q_ids[s:s + batch])
            rx, rm = vec.batch(r_ids[s:s + batch])
            out.append(torch.softmax(model(qx, qm, rx, rm), dim=1)[:, 1].numpy())
    return np.concatenate(out) if out else np.zeros(0)


def train(data: dict, config: Config, progress: bool = True) -> tuple[object, dict]:
    """Train on data['train'], stop early on data['valid'], report on data['test']."""
    torch = _torch()

    torch.manual_seed(config.seed)
    rng = np.random.default_rng(config.seed)
    vec = Vectors()
    ids = {k: (vec.ids(data[k][0]), vec.ids(data[k][1]), data[k][2]) for k in ("train", "valid", "test")}
    model = build_model(config, vec.dim)
    opt = torch.optim.Adam(model.parameters(), lr=config.lr, weight_decay=config.l2)
    loss_fn = torch.nn.CrossEntropyLoss()
    best, best_state, waited, history = -1.0, None, 0, []
    q_tr, r_tr, y_tr = ids["train"]
    steps = (len(y_tr) + config.batch - 1) // config.batch
    bar = tqdm(total=config.epochs * steps, desc="training ABLSTM", unit="batch", disable=not progress)
    start = time.perf_counter()
    for epoch in range(config.epochs):
        model.train()
        order = rng.permutation(len(y_tr))
        for s in range(0, len(order), config.batch):
            idx = order[s:s + config.batch]
            qx, qm = vec.batch([q_tr[i] for i in idx])
            rx, rm = vec.batch([r_tr[i] for i in idx])
            loss = loss_fn(model(qx, qm, rx, rm), torch.from_numpy(y_tr[idx]).long())
            opt.zero_grad()
            loss.backward()
            opt.step()
            bar.update(1)
        q_va, r_va, y_va = ids["valid"]
        acc = float(((_predict(model, vec, q_va, r_va) >= 0.5) == y_va).mean())
        history.append({"epoch": epoch + 1, "valid_accuracy": acc})
        if acc > best:
            best, waited = acc, 0
            best_state = {k: v.detach().clone() for k, v in model.state_dict().items()}
        else:
            waited += 1
            if waited >= config.patience:
                break
    bar.close()
    model.load_state_dict(best_state)
    q_te, r_te, y_te = ids["test"]
    figures = _figures(y_te, (_predict(model, vec, q_te, r_te) >= 0.5).astype(int))
    figures.update(valid_accuracy=best, epochs=len(history), seconds=round(time.perf_counter() - start, 1))
    return model, {"test": figures, "history": history,
                   "pairs": {k: int(len(data[k][2])) for k in ("train", "valid", "test")}}


# ---------------------------------------------------------------- saving, loading, scoring
def save(model, config: Config, info: dict, out: str | Path) -> str:
    torch = _torch()
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    torch.save(model.state_dict(), out / "model.pt")
    (out / "config.json").write_text(json.dumps(asdict(config), indent=1), encoding="utf-8")
    (out / "info.json").write_text(json.dumps(info, indent=1, ensure_ascii=False), encoding="utf-8")
    return str(signature(out))


def signature(path: str | Path) -> Signature:
    """Model digest, training data and held-out accuracy: what the ABLSTM column's numbers come from."""
    path = Path(path)
    info = json.loads((path / "info.json").read_text(encoding="utf-8"))
    digest = hashlib.md5((path / "model.pt").read_bytes()).hexdigest()[:10]
    return Signature("ABLSTM", (
        f"model:{digest}", f"trained:{info['dataset']}({','.join(info['tracks']) or 'all'})",
        f"test-acc:{info['test']['accuracy']:.3f}", "vectors:use-multilingual-v3-token-table", "context:last-turn",
        f"v:learned-{VERSION}"))


def load(path: str | Path):
    torch = _torch()
    path = Path(path)
    config = Config(**json.loads((path / "config.json").read_text(encoding="utf-8")))
    model = build_model(config, 512)
    model.load_state_dict(torch.load(path / "model.pt", map_location="cpu", weights_only=True))
    return model.eval()


@lru_cache(maxsize=2)
def _loaded(path: str, stamp: float):
    return load(path)


def score(path: str | Path, contexts: list[str], responses: list[str]) -> np.ndarray:
    """P(real) of each (last context turn, response). The model is loaded once per file version
    (a scoring run calls this once per batch)."""
    vec = Vectors()
    model = _loaded(str(path), os.path.getmtime(Path(path) / "model.pt"))
    return _predict(model, vec, vec.ids(contexts), vec.ids(responses))
