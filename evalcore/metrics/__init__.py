"""The metrics layer: what a metric is (base.py), every metric by name (registry.py), and the families.
A family that is one module is a module here (lexical, chrf, meteor15, external); a family with models
and helpers is a folder whose metric.py defines its metrics beside them (neural, learned, judge)."""
