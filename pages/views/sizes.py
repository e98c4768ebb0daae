"""Track sizes: how many items each track of a dataset holds."""
from evalcore.pagedata import catalog
from pages.kit.runtime import data
from pages.kit.state import publish, start
from pages.kit.widgets import grid, select

con, vs = start("Track sizes")
datasets = data(catalog.datasets)
dataset = select("Dataset", datasets, vs.one("dataset", datasets, datasets[0] if datasets else None), key="sz-dataset")
if dataset:
    grid(data(catalog.track_sizes, dataset), width="stretch")
publish("sizes", {"dataset": dataset}, vs.notices)
