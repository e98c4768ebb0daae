"""The learned family: ABLSTM (seed 004), a discriminator trained on a store's own dialogues (ablstm.py:
the model; train.py: `evalcore learned train`; metric.py: the metric the registry lists)."""
