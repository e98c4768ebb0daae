"""Every `evalcore` command, declared in the order --help lists them: its name path, help, options, handler
("module:function") and what it does with the store (commands.Command). Only light modules are imported here
(the choices come from the layers' options modules), so building the parser loads no layer."""
from __future__ import annotations

import argparse
import functools

from evalcore.analysis.humans import AGGREGATES
from evalcore.analysis.options import (
    PLAN_QUESTIONS,
    ADJUSTMENTS,
    AGREEMENT_RATERS,
    AGREEMENT_STATISTICS,
    ENSEMBLE_LEVELS,
    HOLDOUTS,
    JUDGE_AUDIT_PARTS,
    LEVELS,
    METHODS,
    ORIGINS,
    OUTLIER_RULES,
    said,
)
from evalcore.cli.commands import (
    CREATES,
    READS,
    WRITES,
    Command,
    db,
    flavor,
    models,
    on_dataset,
    output,
    task_seed,
    written_text,
)
from evalcore.core import names, urls
from evalcore.core.i18n import LANGS
from evalcore.core.options import CROWD_GOLD_KINDS, CROWD_PLATFORMS, CROWD_RULE
from evalcore.core.options import (
    GENERATION_CONCURRENCY,
    GENERATION_KEY_ENV,
    GENERATION_MAX_TOKENS,
    GENERATION_TEMPERATURE,
    GENERATION_TIMEOUT,
    GENERATION_TOP_P,
    TASK_LEVELS,
    TASK_MAX_SEED,
    TASK_MODES,
    TASK_SAMPLINGS,
)
from evalcore.ingest.formats import FORMATS, Format
from evalcore.metrics.options import SYSTEM_AGGREGATES, add_judge_arguments, add_neural_arguments, add_ray_arguments

COMMANDS: list[Command] = []


def command(path: str, help: str, handler: str, store: str | None = None, scores: bool = False):
    """Declare the command whose options the decorated function adds."""
    def declare(arguments):
        COMMANDS.append(Command(path, help, arguments, f"evalcore.cli.{handler}", store, scores))
        return arguments
    return declare


def group(path: str, help: str, dest: str) -> None:
    """Declare a command of sub-commands (`dest` names the one chosen)."""
    COMMANDS.append(Command(path, help, subcommands=dest))


def aggregate(p: argparse.ArgumentParser) -> None:
    p.add_argument("--aggregate", default="mean", choices=AGGREGATES, help="how annotators' scores combine")


def system_aggregate(p: argparse.ArgumentParser, verb: str) -> None:
    p.add_argument("--system-aggregate", default=SYSTEM_AGGREGATES[0], choices=SYSTEM_AGGREGATES,
                   help=f"system scores {verb}: each metric's corpus value, or the mean of its sentence values")


@command("init", "build the store from the embedded default data (data/)", "imports:init", CREATES)
def init(p):
    db(p)


@command("app", "serve the dashboard on a store (Streamlit), from any directory", "serve:app")
def app(p):
    db(p)
    p.add_argument("--port", type=int, help="port (default: Streamlit's, 8501)")
    p.add_argument("--address", help="address to listen on (default: 127.0.0.1, this machine only; 0.0.0.0 for "
                   "every interface, e.g. a lab server, with EVALCORE_UPLOAD_PASSWORD set when uploads should need a password)")
    p.add_argument("--processes", type=names.count(1), default=1,
                   help="page-serving processes, on ports PORT, PORT+1, ... (default 1): more than one uses more than "
                        "one core (README, \"More than one page-serving process\")")
    p.add_argument("--lang", choices=["en", "zh-CN"],
                   help="the pages' language for a browser set to neither (default: English); each person's browser "
                        "language comes first, and the switch on every page after it (docs/guide/dashboard.md)")


group("import", "import a file; a bad file is refused whole", "kind")


def import_arguments(fmt: Format, p: argparse.ArgumentParser) -> None:
    """An import format's parser: the path it reads, --db, --dataset (for most), then the format's own options."""
    p.add_argument(fmt.path)
    db(p)
    if fmt.dataset:
        p.add_argument("--dataset", required=True)
    fmt.options(p)


for fmt in FORMATS:   # one command per catalogued format, all run by one handler
    COMMANDS.append(Command(f"import {fmt.kind}", fmt.help, functools.partial(import_arguments, fmt),
                            "evalcore.cli.imports:run_format", CREATES))


@command("intent", "intent classification: macro P, R and F1 = 2PR/(P+R) (no store needed)", "analysis:intent")
def intent(p):
    p.add_argument("--gold", required=True, help="CSV/TSV/JSONL with columns id, label")
    p.add_argument("--pred", required=True, help="CSV/TSV/JSONL with columns id, label")
    output(p)


group("endpoint", "chat endpoints a model answers at (OpenAI-compatible: vLLM, SGLang, Ollama, llama.cpp, TGI)",
      "action")


@command("endpoint add", "register an endpoint (no key is stored: only the variable it is read from)",
         "endpoints:add", WRITES)
def endpoint_add(p):
    p.add_argument("name")
    db(p)
    # refused at once (exit 2) when it holds a user name/password or a query, never repeating it
    p.add_argument("--base-url", required=True, metavar="URL", type=urls.base_url,
                   help="the server's OpenAI API root, e.g. "
                   "http://127.0.0.1:8000/v1 (vLLM), http://127.0.0.1:11434/v1 (Ollama), http://127.0.0.1:8080/v1 "
                   "(llama.cpp)")
    p.add_argument("--model", required=True, metavar="SERVED_NAME", help="the model name the server serves")
    p.add_argument("--api-key-env", default=GENERATION_KEY_ENV, metavar="VAR",
                   help="the environment variable (or .streamlit/secrets.toml entry) holding the key, read at each "
                        "call (default %(default)s; a server without a key needs none)")
    p.add_argument("--temperature", type=float, default=GENERATION_TEMPERATURE)
    p.add_argument("--top-p", type=float, default=GENERATION_TOP_P)
    p.add_argument("--max-tokens", type=names.count(1), default=GENERATION_MAX_TOKENS)
    p.add_argument("--seed", type=int, help="sent with every request (servers that honour it sample reproducibly)")
    p.add_argument("--timeout", type=float, default=GENERATION_TIMEOUT, metavar="SEC",
                   help="seconds without a byte of the answer before a retry; a request takes three times this in all at most "
                        "(default %(default)s)")
    p.add_argument("--concurrency", type=names.count(1), default=GENERATION_CONCURRENCY,
                   help="requests in flight at most (default %(default)s)")
    p.add_argument("--template", metavar="NAME_OR_FILE", help="the generation template for this endpoint (default: "
                   "each track's skill and language: `evalcore endpoint templates`)")
    p.add_argument("--replace", action="store_true", help="replace the endpoint registered under this name")


@command("endpoint list", "every registered endpoint (never a key)", "endpoints:listing", READS)
def endpoint_list(p):
    db(p)
    output(p)


def endpoint_name(p):
    p.add_argument("name")
    db(p)


command("endpoint show", "an endpoint's settings, and whether its key variable is set now (never the key)",
        "endpoints:show", READS)(endpoint_name)
command("endpoint remove", "unregister an endpoint (what it generated stays)", "endpoints:remove", WRITES)(endpoint_name)
command("endpoint test", "one short request: latency, the served models, whether streaming works", "endpoints:test",
        READS)(endpoint_name)


@command("endpoint templates", "the shipped generation templates (per skill and language), or one's text",
         "endpoints:templates")
def endpoint_templates(p):
    p.add_argument("template", nargs="?", metavar="NAME_OR_FILE", help="print this template's text and hash")


@command("generate", "send a dataset's items to an endpoint and store the replies as a model's responses (resumable), "
         "then score them", "endpoints:generate", WRITES, scores=True)
def generate(p):
    db(p)
    p.add_argument("--dataset", required=True)
    p.add_argument("--tracks", "--track", metavar="TRACKS", help="comma-separated (default: every track)")
    p.add_argument("--endpoint", required=True, metavar="NAME", help="a registered endpoint (`evalcore endpoint list`)")
    p.add_argument("--model", required=True, metavar="MODEL_NAME", help="the name the replies are stored under")
    p.add_argument("--items", type=names.count(1), metavar="N", help="a seeded sample of N items (default: every item)")
    p.add_argument("--seed", type=int, default=0, help="the sample's seed (default 0)")
    p.add_argument("--template", metavar="NAME_OR_FILE", help="one template for every track (default: the endpoint's, "
                   "else each track's skill and language)")
    p.add_argument("--no-score", action="store_true", help="store the replies only (score later with `evalcore score`)")
    p.add_argument("--no-progress", action="store_true", help="no progress bar on standard error")


@command("score", "compute metrics for stored responses (only what is missing)", "score:score", CREATES, scores=True)
def score(p):
    db(p)
    p.add_argument("--dataset")
    p.add_argument("--track")
    p.add_argument("--metrics", default="lexical",
                   help="comma-separated names, or a group: 'lexical' (default), 'neural', 'judge'")
    flavor(p)
    system_aggregate(p, "written")
    add_neural_arguments(p)   # each family's options, as metrics.options defines them
    add_ray_arguments(p)
    add_judge_arguments(p)


@command("leaderboard", "one row per model and origin, a column per metric and human dimension", "analysis:leaderboard",
         READS)
def leaderboard(p):
    on_dataset(p)
    flavor(p)
    p.add_argument("--signatures", action="store_true", help="also print each computed column's signature")
    p.add_argument("--rank-by", metavar="COLUMN", help="rank each track's models by this column (a metric or a "
                   "human dimension), with a 95%% bootstrap interval of the rank; default, as on the dashboard's "
                   "Leaderboard page: the skill's official rule where it has one, else F1, else the track's first "
                   "column")
    p.add_argument("--partial", action="store_true", help="also rank submissions that answer only part of a track")
    p.add_argument("--bootstrap", type=names.count(0), default=1000, help="resamples of the rank interval (default 1000)")
    p.add_argument("--seed", type=int, default=0, help="seed of the rank bootstrap (default 0)")
    output(p)


@command("estimate", "each system's mean on a human dimension from a predictor (a judge or a metric) calibrated by "
         "a random sample of people's ratings (PPI++), with 95%% intervals, paired differences and rank intervals",
         "estimate:estimate", READS)
def estimate(p):
    on_dataset(p)
    p.add_argument("--dimension", required=True, help="the human dimension to estimate")
    p.add_argument("--predictor", required=True, metavar="NAME", help="a judge or stored metric with a value on every "
                   "response, on the dimension's scale")
    p.add_argument("--assume-random", action="store_true", help="treat imported ratings as a uniform random sample "
                   "of each model's responses (every figure says so); without it only a rating task's ratings count")
    p.add_argument("--task", type=int, metavar="N", help="only this rating task's ratings (where the store holds other "
                   "ratings of the dimension too)")
    output(p)


@command("plan", "how many units and raters a question needs for power 0.8, or what a budget (or a task's ratings) "
         "settles; from the store's ratings (a pilot) or stated assumptions", "estimate:plan")
def plan(p):
    db(p)
    p.add_argument("--question", required=True, choices=PLAN_QUESTIONS)
    p.add_argument("--dataset", help="take the spread from this dataset's ratings (a pilot)")
    p.add_argument("--dimension", help="the human dimension (with --dataset)")
    p.add_argument("--track")
    p.add_argument("--models", help="comma-separated: the systems compared (default: every rated one)")
    p.add_argument("--task", type=int, metavar="N", help="plan from a rating task's ratings, and say what they settle")
    p.add_argument("--effect", type=float, help="difference: the difference worth detecting; ranking: the smallest "
                   "gap to resolve (default: the pilot's smallest adjacent gap)")
    p.add_argument("--sd", type=float, help="assumed standard deviation of a response's rating (no pilot)")
    p.add_argument("--rater-sd", type=float, default=0.0, help="assumed standard deviation between raters of one "
                   "response (no pilot)")
    p.add_argument("--raters", type=names.count(1), default=1, help="people per unit, K (default 1)")
    p.add_argument("--budget", type=names.count(2), help="units per system (or rated units): the power and interval "
                   "they reach")
    p.add_argument("--predictor", metavar="NAME", help="also plan with this judge or metric calibrated by people "
                   "(its correlation with people in the pilot)")
    p.add_argument("--r", type=float, help="correlation: the correlation expected with people")
    p.add_argument("--p", type=float, help="agreement: the agreement rate expected")
    p.add_argument("--half-width", type=float, help="agreement: how closely to know it")
    output(p)


@command("correlate", "metric-human correlations per track (system, dialogue or turn level)", "analysis:correlate", READS)
def correlate(p):
    on_dataset(p)
    p.add_argument("--level", default=LEVELS[0], help=said(LEVELS))
    p.add_argument("--origin", default=ORIGINS[0], help=f"{ORIGINS[0]}, or {ORIGINS[1]} (system level)")
    p.add_argument("--method", default=",".join(METHODS), help="comma-separated: " + ", ".join(METHODS))
    p.add_argument("--bootstrap", type=names.count(0), default=0, help="percentile bootstrap CI with N resamples")
    p.add_argument("--seed", type=int, help="seed of the bootstrap (required with --bootstrap)")
    aggregate(p)
    flavor(p)
    p.add_argument("--compare-published", action="store_true", help="add the published value and the difference")
    models(p)
    system_aggregate(p, "read")
    output(p)


@command("template", "the responses file to fill in: every item with its context and reference", "imports:template", READS)
def template(p):
    on_dataset(p)
    p.add_argument("--format", choices=["csv", "jsonl", "xlsx"], default="csv")
    p.add_argument("--out", help="write here (xlsx needs it); default: standard output")


@command("trust", "which metric to trust for which skill: correlations per track, pooled per skill", "trust:trust", READS)
def trust(p):
    on_dataset(p, track=False)
    p.add_argument("--level", choices=LEVELS,
                   help="default: the first with data, as the dashboard picks (published system tables, computed "
                   "system scores, then turn and dialogue level)")
    p.add_argument("--method", default="spearman", choices=["spearman", *(m for m in METHODS if m != "spearman")])
    p.add_argument("--dimension", default="mean", help="a human dimension, or mean (of each track's dimensions)")
    p.add_argument("--origin", choices=ORIGINS,
                   help="metric values: computed, or a paper's published tables (system level); default: the first "
                   "with data at the level")
    p.add_argument("--alpha", type=float, default=0.05, help="significance level of the verdicts (default 0.05)")
    p.add_argument("--adjust", default=ADJUSTMENTS[0], choices=ADJUSTMENTS,
                   help="p values adjusted for the number of metrics compared per skill (default holm)")
    aggregate(p)
    flavor(p)
    models(p)
    system_aggregate(p, "read")
    output(p)


@command("agreement", "inter-annotator agreement per track and dimension, with bootstrap CIs", "analysis:agreement", READS)
def agreement(p):
    on_dataset(p)
    p.add_argument("--statistic", nargs="+", choices=AGREEMENT_STATISTICS, default=["chance"],
                   help="chance: Cohen's and Fleiss' kappa, Krippendorff's alpha (default); correlations as dialogue "
                   "papers report them: corr_pairwise (per pair of annotators, mean over pairs: USR), corr_loo (each "
                   "annotator against the others' mean: the human ceiling), corr_item_mean (each annotation against its "
                   "target's mean, itself included, pooled: FED)")
    p.add_argument("--method", nargs="+", choices=METHODS, default=["spearman", "pearson", "kendall"],
                   help="the correlations' methods (default: all three)")
    p.add_argument("--annotators", choices=AGREEMENT_RATERS, default="ids",
                   help="ids: the stored annotators (people; default); slots: the k-th rating stored for each target "
                   "(a file's columns as released, e.g. USR's three lists)")
    p.add_argument("--exclude-outliers", choices=OUTLIER_RULES, default="none",
                   help="fed: FED's rule (per target, the annotation farthest from its mean is removed; yes/no "
                   "questions left as they are); the count removed is in every row's note (default none)")
    p.add_argument("--bootstrap", type=names.count(0), default=1000, help="resamples of rated targets for the CIs (0: none)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--bias", action="store_true", help="per-annotator means and bias instead")
    output(p)


@command("judge-audit", "every LLM judge against the lab's people: agreement beside the human ceiling, position "
         "consistency, length preference, length-controlled win rates, drift", "analysis:judge_audit", READS)
def judge_audit(p):
    on_dataset(p, track=False)
    p.add_argument("--judge", metavar="SIGNATURE", help="one judge only: its signature or its name (e.g. Judge-Coh)")
    p.add_argument("--part", choices=JUDGE_AUDIT_PARTS, default="agreement",
                   help="which table (default %(default)s; headline: one line per judge and dimension)")
    p.add_argument("--across", choices=("samples", "judges"), default="samples",
                   help="uncertainty: over the --judge-sample runs of one judge, or over every signature of a judge name")
    p.add_argument("--bootstrap", type=names.count(0), default=1000, help="resamples for the CIs (0: none)")
    p.add_argument("--seed", type=int, default=0)
    output(p)


@command("ensemble", "MME-CRS metric ensembling, evaluated on held-out tracks or competitions", "analysis:ensemble", READS)
def ensemble(p):
    on_dataset(p, track=False)
    p.add_argument("--level", default=ENSEMBLE_LEVELS[0], choices=ENSEMBLE_LEVELS)
    p.add_argument("--holdout", default="competition", choices=HOLDOUTS)
    p.add_argument("--origin", default="auto", choices=["auto", *ORIGINS],
                   help="metric values: auto = published at system level when nothing is computed")
    p.add_argument("--method", default="spearman", help="correlation behind the weights: " + ", ".join(METHODS))
    p.add_argument("--power", type=float, default=2.0, help="p in w = max(r, 0)^p / sum")
    aggregate(p)
    p.add_argument("--weights", action="store_true", help="print the weights instead of the held-out results")
    models(p)
    output(p)


@command("ranking", "response ranking: P@1, MAP, MRR of a ranker against graded human scores", "analysis:ranking", READS)
def ranking(p):
    on_dataset(p)
    p.add_argument("--dimension", default="Overall", help="the human dimension that grades candidates")
    p.add_argument("--rankers", help="comma-separated: tfidf, bm25 and/or metric names (default: all available)")
    p.add_argument("--thresholds", default="3,4,5", help="a candidate is positive when its score >= threshold")
    aggregate(p)
    flavor(p)
    models(p)
    output(p)


group("learned", "learned reference-free metrics (ABLSTM, seed 004)", "action")


@command("learned train", "train AB-LSTM-bi-MLP on the store's dialogues; registers metric ABLSTM", "score:learned",
         CREATES)
def learned_train(p):
    on_dataset(p, track=False)
    p.add_argument("--tracks", help="comma-separated tracks (default: all of the dataset's dialogues)")
    p.add_argument("--out", required=True, help="directory for the trained model")
    p.add_argument("--epochs", type=names.count(1), default=4, help="at most this many (early stopping on validation accuracy)")
    p.add_argument("--seed", type=int, default=13)
    p.add_argument("--ablations", action="store_true",
                   help="also train the seed's ablations (no attention; one-directional match; no match) on the same split")
    output(p)


@command("winrate", "pairwise judgments (MT-Bench *_pair.jsonl): wins, losses, ties and win rates per judge and model, "
         "as FastChat's show_result.py computes them", "analysis:winrate", READS)
def winrate(p):
    on_dataset(p)
    p.add_argument("--judge", help="only this judge model's verdicts")
    output(p)


group("chat", "live conversations with blind endpoints on a track's scenarios, rated as whole dialogues: create, "
      "list, show, review, close, reopen, delete, export", "action")


@command("chat create", "draw scenarios from a track's dialogues for people to talk through with endpoints; prints the "
         "task id", "chats:create", WRITES)
def chat_create(p):
    on_dataset(p)
    p.add_argument("--endpoints", required=True, metavar="A,B,...", help="registered endpoints (`evalcore endpoint "
                   "list`); people are never told which one answers")
    p.add_argument("--scenarios", type=names.count(1), default=10, metavar="N",
                   help="scenarios drawn from the track's stored dialogues (default 10)")
    p.add_argument("--seed", type=task_seed, default=0, help=f"the draw's seed, 0 to {TASK_MAX_SEED} (default 0)")
    p.add_argument("--per-scenario", type=names.count(1), default=1, metavar="K",
                   help="conversations per scenario and endpoint, each by a different person (default 1)")
    p.add_argument("--max-rounds", type=names.count(1), default=10,
                   help="rounds at most (a round: the person's message and the reply; MSDE: 10)")
    p.add_argument("--dimensions", help="comma-separated (default: Info,Coh, with Know for knowledge tracks and Rec "
                                        "for recommendation ones, as MSDE rated them)")
    p.add_argument("--flags", help="comma-separated flags a person may set on a reply (default: contradiction, wrong "
                                   "knowledge, repetition, off topic; '' for none)")
    p.add_argument("--guidelines", metavar="FILE", help="a UTF-8 text file shown to the people chatting")
    p.add_argument("--name", type=written_text("name"))
    p.add_argument("--target", metavar="DATASET", help="the dataset accepted conversations become (default "
                                                       "chat-<id>-<dataset>)")
    p.add_argument("--no-review", action="store_true", help="count a conversation once it is rated (default: a "
                                                            "reviewer accepts it first, as MSDE's experts did)")
    p.add_argument("--simulators", metavar="S1,S2", help="registered simulators (`evalcore simulator list`) that also "
                   "hold K conversations per scenario and endpoint, run by `evalcore chat simulate TASK`")
    p.add_argument("--no-people", action="store_true", help="only the simulators hold conversations (with --simulators)")
    p.add_argument("--lang", choices=LANGS, help="the task's language: its people's pages, dimension definitions "
                   "and flags, whatever their browser says (default: the dataset's: zh-CN for Chinese, else en)")
    crowd_settings(p, required=False)


@command("chat list", "every chat task with its conversations' states", "chats:listing", READS)
def chat_list(p):
    db(p)
    output(p)


def chat_id(p):
    p.add_argument("task_id", type=int)
    db(p)


@command("chat show", "a chat task's settings, signatures and results per endpoint", "chats:show", READS)
def chat_show(p):
    chat_id(p)
    p.add_argument("--all", action="store_true", help="count every rated conversation, not only accepted ones")


command("chat close", "no new conversations (none resumed)", "chats:close", WRITES)(chat_id)
command("chat reopen", "take conversations again (also undoes a delete)", "chats:reopen", WRITES)(chat_id)
command("chat delete", "hide the task (every row is kept; `chat reopen` brings it back)", "chats:delete", WRITES)(chat_id)


@command("chat review", "the conversations waiting for review, or accept one or send it back with a reason",
         "chats:review", WRITES)
def chat_review(p):
    chat_id(p)
    p.add_argument("--conversation", type=int, metavar="ID")
    what = p.add_mutually_exclusive_group()
    what.add_argument("--accept", action="store_true", help="it becomes a dialogue of the task's dataset")
    what.add_argument("--send-back", metavar="REASON", help="a fresh conversation takes its place, for someone else")


@command("chat simulate", "run a task's simulated conversations (each simulator with each endpoint on each scenario) "
         "until each ends and rates itself; resumable", "simulation:simulate", WRITES)
def chat_simulate(p):
    chat_id(p)
    p.add_argument("--simulators", metavar="S1,S2", help="only these of the task's simulators (default: all)")
    p.add_argument("--concurrency", type=names.count(1), metavar="N",
                   help="conversations at once (default: the smallest concurrency of the endpoints involved)")


@command("chat judge", "rate a task's conversations whole (not turn by turn) with a judge endpoint, on each dimension "
         "with an MSDE rubric; kept apart from the ratings of whoever held them", "simulation:judge", WRITES)
def chat_judge(p):
    chat_id(p)
    p.add_argument("--judge", required=True, metavar="ENDPOINT", help="a registered endpoint that judges")
    p.add_argument("--held-by", default="all", choices=["all", "simulated", "people"],
                   help="whose conversations (default %(default)s)")
    p.add_argument("--all", action="store_true", help="rated conversations too, not only accepted ones")
    p.add_argument("--concurrency", type=names.count(1), metavar="N", help="requests at once (default: the endpoint's)")


@command("chat detect", "a rating task asking people \"Was the user a person?\" of a task's accepted conversations, "
         "people's and simulated mixed (can people tell?); prints its id", "simulation:detect", WRITES)
def chat_detect(p):
    chat_id(p)
    p.add_argument("--per-dialogue", type=names.count(1), default=3, metavar="K",
                   help="different people answering each conversation (default 3)")
    p.add_argument("--seed", type=task_seed, default=0, help=f"the units' order, 0 to {TASK_MAX_SEED} (default 0)")


@command("chat export", "every message (time, person, endpoint), rating and flag, as CSV files", "chats:export", READS)
def chat_export(p):
    chat_id(p)
    p.add_argument("--out", required=True, metavar="DIR")


group("simulator", "simulated users: an endpoint playing the user of a chat task's scenarios, with a user template, a "
      "persona style and a seed: add, list, show", "action")


@command("simulator add", "register a simulator (an endpoint that plays the user)", "simulation:add", WRITES)
def simulator_add(p):
    p.add_argument("name", type=written_text("name"))
    db(p)
    p.add_argument("--endpoint", required=True, help="the registered endpoint that plays the user")
    p.add_argument("--style", default="cooperative",
                   choices=["cooperative", "terse", "impatient", "withholding", "off-topic"],
                   help="how the user behaves (evalcore/simulation/styles.toml; default %(default)s)")
    p.add_argument("--template", metavar="NAME_OR_FILE", help="a shipped user template's name or a TOML file "
                   "(default: each skill's shipped one, user-<skill>-<zh|en>)")
    p.add_argument("--seed", type=int, default=0, help="recorded in the signature (sent as the endpoint's seed "
                   "only when the endpoint has none)")
    p.add_argument("--replace", action="store_true", help="change a registered simulator (tasks keep what they froze)")


@command("simulator list", "every registered simulator", "simulation:listing", READS)
def simulator_list(p):
    db(p)
    output(p)


@command("simulator show", "a simulator and the user template it uses for a skill and language, in full",
         "simulation:show", READS)
def simulator_show(p):
    p.add_argument("name")
    db(p)
    p.add_argument("--skill", default="knowledge", help="the skill whose template to show (default %(default)s)")
    p.add_argument("--language", default="zh", help="zh or en (default %(default)s)")


@command("simulator-audit", "can a task's simulated users stand in for its people? rankings (Kendall tau), "
         "differences and behaviour, with bootstrap intervals", "simulation:audit", READS)
def simulator_audit(p):
    db(p)
    p.add_argument("--task", type=int, required=True, metavar="N", help="a chat task with people and simulators")
    p.add_argument("--all", action="store_true", help="count every rated conversation, not only accepted ones")
    p.add_argument("--rated-by", metavar="JUDGE", help="rank simulated conversations by this judge's ratings of the "
                   "whole conversation (`evalcore chat judge`), not by the simulators' own answers")
    output(p)


group("task", "human rating tasks: create, list, show, close, reopen, delete, export, annotators, reset-key", "action")


@command("task create", "sample units of a dataset for people to rate; prints the task id", "tasks:create", WRITES)
def task_create(p):
    on_dataset(p, track=False)
    p.add_argument("--mode", choices=TASK_MODES, default=TASK_MODES[0],
                   help="absolute: each response rated on each dimension; pairwise: two models' responses side by side")
    p.add_argument("--dimensions", required=True, help="comma-separated, e.g. Info,Coh")
    p.add_argument("--items", type=names.count(1), required=True, help="units to rate (responses, or pairs)")
    p.add_argument("--per-item", type=names.count(1), default=2, help="different annotators per unit, K (default 2)")
    p.add_argument("--tracks", help="comma-separated (default: every track)")
    p.add_argument("--models", help="comma-separated (default: every model)")
    p.add_argument("--seed", type=task_seed, default=0, help=f"0 to {TASK_MAX_SEED} (default 0)")
    p.add_argument("--name", type=written_text("name"))
    p.add_argument("--sampling", choices=TASK_SAMPLINGS, default=TASK_SAMPLINGS[0],
                   help="stratified: at least 4 units per track, the rest by the tracks' sizes, over their models in "
                        "turn; disagreement: where the metrics disagree most (needs scores); active: each response "
                        "drawn with a probability that favours where --judge is uncertain (stored with the unit)")
    p.add_argument("--judge", type=written_text("judge"),
                   help="--sampling active only: the judge (name or signature) or metric whose per-response values "
                        "steer it; it must have a value on every candidate response")
    p.add_argument("--no-ties", action="store_true", help="pairwise: annotators must pick a side")
    p.add_argument("--guidelines", type=written_text("guidelines"), default="",
                   help="text shown to annotators above every unit")
    p.add_argument("--level", choices=TASK_LEVELS, default=TASK_LEVELS[0],
                   help="response: one response per unit; dialogue: a whole conversation one model held (a chat "
                        "task's), and with --mode pairwise two of them on one scenario (ACUTE-Eval's questions)")
    p.add_argument("--lang", choices=LANGS, help="the task's language: its annotators' pages, dimension definitions "
                   "and questions, whatever their browser says (default: the dataset's: zh-CN for Chinese, else en)")
    crowd_settings(p, required=False)


@command("task list", "every task with its progress", "tasks:listing", READS)
def task_list(p):
    db(p)
    output(p)


def task_id(p):
    p.add_argument("task_id", type=int)
    db(p)


command("task show", "a task's settings and progress", "tasks:show", READS)(task_id)
command("task close", "take no more answers", "tasks:close", WRITES)(task_id)
command("task reopen", "take answers again", "tasks:reopen", WRITES)(task_id)
command("task delete", "set the task's ratings aside (restorable)", "tasks:delete", WRITES)(task_id)


@command("task export", "every rating or vote that counts, and every flag, with annotator and time", "tasks:export", READS)
def task_export(p):
    task_id(p)
    p.add_argument("--format", choices=["csv", "jsonl"], default="csv")


@command("task annotators", "everyone who entered a task: name, signed in or not, when their key was issued (never the "
         "key)", "tasks:annotators", READS)
def task_annotators(p):
    db(p)
    output(p)


# reset-key writes a new key, yet it is declared as reading, as it always was: on a store that
# cannot be written it gets DuckDB's own refusal, as it always has
@command("task reset-key", "a new personal key for an annotator who lost theirs (printed once; the old one stops "
         "working; their answers stay theirs)", "tasks:reset_key", READS)
def task_reset_key(p):
    p.add_argument("annotator", help="their name (compared ignoring case and width)")
    db(p)


def crowd_settings(p, *, required: bool) -> None:
    """A crowd study's settings (`task create --platform`, `crowd open`)."""
    p.add_argument("--platform", choices=CROWD_PLATFORMS, required=required,
                   help="open the task to a crowd platform: its workers arrive by the study's link (`crowd link`) with "
                        "their platform identifier, and leave with the completion code")
    p.add_argument("--completion-code", metavar="CODE", help="the code a worker who passes gets (the platform's)")
    p.add_argument("--failed-code", metavar="CODE", help="the code a worker who failed the checks gets")
    p.add_argument("--redirect", metavar="URL", help="where a worker goes back at the end ({code}: their code); "
                   "Prolific's completion page by default on Prolific")
    p.add_argument("--units-per-worker", type=names.count(1), default=10, help="units one worker rates, gold ones "
                   "included (a chat study: conversations one worker holds) (default 10)")
    p.add_argument("--gold-per-worker", type=names.count(0), default=0, help="gold units among them (add them with "
                   "`crowd gold`; a chat study: conversations carrying an instruction check, `crowd instruction`)")
    p.add_argument("--pay", type=float, help="the study's stated payment per worker (for the effective hourly pay)")
    p.add_argument("--currency", help="the payment's currency, e.g. GBP, USD, CNY")
    p.add_argument("--gold-min", type=float, default=CROWD_RULE["gold_min"],
                   help=f"pass rule: the share of gold units answered right (default {CROWD_RULE['gold_min']})")
    p.add_argument("--too-fast-max", type=float, default=CROWD_RULE["too_fast_max"],
                   help="pass rule: the largest share of answers faster than reading allows (default "
                        f"{CROWD_RULE['too_fast_max']})")


group("crowd", "crowd studies: a rating or chat task opened for Prolific, MTurk or another platform (open, link, "
      "gold, question, instruction, workers, quality, exclude, include; --chat: TASK is a chat task's id)", "action")


def crowd_task(p) -> None:
    """A crowd command's TASK, a rating task's id unless --chat."""
    p.add_argument("task_id", type=int)
    p.add_argument("--chat", action="store_true", help="TASK is a chat task's id (`evalcore chat list`)")


@command("crowd open", "open a rating task (--chat: a chat task) to a crowd platform", "crowd:open_command", WRITES)
def crowd_open(p):
    crowd_task(p)
    db(p)
    crowd_settings(p, required=True)


@command("crowd link", "the study URL to paste into the platform", "crowd:link_command", READS)
def crowd_link(p):
    crowd_task(p)
    db(p)
    p.add_argument("--base", default="http://localhost:8501", help="the dashboard's address as workers reach it")


@command("crowd gold", "add gold units (known answers) to a crowd study", "crowd:gold_command", WRITES)
def crowd_gold(p):
    crowd_task(p)
    db(p)
    p.add_argument("--kind", choices=CROWD_GOLD_KINDS, required=True,
                   help="nonsense: a reply's characters shuffled; copies-knowledge: the item's knowledge copied out; "
                        "custom: --item and --response")
    p.add_argument("--dimension", required=True)
    p.add_argument("--expect", required=True, metavar="LOW[:HIGH]", help="the answers that pass, e.g. 0 or 1:2")
    p.add_argument("--count", type=names.count(1), default=1, help="units of this kind (default 1)")
    p.add_argument("--item", help="custom: the item whose context is shown")
    p.add_argument("--response", type=written_text("response"), help="custom: the reply shown")


@command("crowd question", "add a comprehension question workers answer before real work (two attempts)",
         "crowd:question_command", WRITES)
def crowd_question(p):
    crowd_task(p)
    db(p)
    p.add_argument("--question", type=written_text("question"), required=True)
    p.add_argument("--option", type=written_text("option"), action="append", required=True,
                   help="an answer offered (give two or more)")
    p.add_argument("--answer", type=names.count(1), required=True, help="the right option's number, from 1")


@command("crowd instruction", "add an instruction check to a chat study: shown inside the scenario of the "
         "conversations at a worker's gold places; one of their messages there must contain the word",
         "crowd:instruction_command", WRITES)
def crowd_instruction(p):
    crowd_task(p)
    db(p)
    p.add_argument("--text", type=written_text("text"), required=True,
                   help="the instruction, in the task's language, e.g. \"In your first message, mention the word giraffe.\"")
    p.add_argument("--expect", type=written_text("expect"), required=True,
                   help="the word one of the worker's messages in that conversation contains (case and width ignored)")


@command("crowd workers", "every worker of a study: pseudonym, outcome, exclusion (identifiers only when asked)",
         "crowd:workers_command", READS)
def crowd_workers(p):
    crowd_task(p)
    db(p)
    p.add_argument("--with-identifiers", action="store_true",
                   help="add the platform identifiers (personal data: to approve and pay workers on the platform)")
    output(p)


@command("crowd quality", "per worker: gold answered right, agreement with the others, MACE competence, time, "
         "flags and effective hourly pay", "crowd:quality_command", READS)
def crowd_quality(p):
    crowd_task(p)
    db(p)
    output(p)


@command("crowd exclude", "exclude a worker: their ratings leave every analysis (logged; `crowd include` puts them "
         "back)", "crowd:exclude_command", WRITES)
def crowd_exclude(p):
    crowd_task(p)
    p.add_argument("annotator", help="the worker's pseudonym, as `crowd workers` lists it")
    db(p)
    p.add_argument("--reason", type=written_text("reason"), required=True)


@command("crowd include", "put an excluded worker back (logged)", "crowd:include_command", WRITES)
def crowd_include(p):
    crowd_task(p)
    p.add_argument("annotator")
    db(p)
    p.add_argument("--reason", type=written_text("reason"), required=True)


group("dimension", "what people rating a dataset's dimensions read: describe", "action")


@command("dimension describe", "set a dimension's definition in one language: new tasks in that language show it to "
         "their people (tasks made before keep theirs)", "dimensions:describe", WRITES)
def dimension_describe(p):
    p.add_argument("text", help="the definition, as people rating the dimension read "
                   "it")
    on_dataset(p, track=False)
    p.add_argument("--dimension", required=True, help="a dimension of the dataset, or one of MSDE's (Info, Coh, Know, "
                   "Rec)")
    p.add_argument("--lang", required=True, choices=LANGS, help="the language the text is in")


@command("bt", "Bradley-Terry ratings (Elo scale) from pairwise votes, with bootstrap intervals", "analysis:bt", READS)
def bt(p):
    on_dataset(p, track=False)
    p.add_argument("--dimension", help="one question's votes (default: each dimension)")
    p.add_argument("--source", default="human", help="human, or judge:NAME")
    p.add_argument("--anchor", metavar="MODEL", help="this model rated 1000 (default: the mean is 1000)")
    p.add_argument("--bootstrap", type=names.count(0), default=1000, help="resamples of the votes (default 1000)")
    p.add_argument("--seed", type=int, default=0)
    output(p)


def of_dataset(p):
    """--db, an optional --dataset and --format."""
    db(p)
    p.add_argument("--dataset")
    output(p)


command("summary", "per track: items, references, models, responses, ratings, system scores", "store:summary",
        READS)(of_dataset)


@command("storage", "what takes the space in the store's file: bytes per table and column, indexes, free blocks",
         "store:storage", READS)
def storage(p):
    db(p)
    output(p)


command("models", "models and where they have data", "store:models", READS)(of_dataset)


@command("jobs", "scoring jobs the dashboard started (after uploads): state and progress", "score:jobs", READS)
def jobs(p):
    db(p)
    p.add_argument("--dataset")
    p.add_argument("--limit", type=names.count(1), default=50)
    output(p)


@command("worker", "run scoring jobs: one (--job N), or every queued one and every one whose worker ended unfinished "
         "(the dashboard starts a worker per job itself)", "score:worker", scores=True)
def worker(p):
    db(p)
    p.add_argument("--job", type=names.count(1), help="the job to run (default: every job no live process runs)")


@command("submissions", "every import, replace, delete and restore: file, sha256, rows, who; what each set aside and "
         "whether it can come back", "store:submissions", READS)
def submissions(p):
    db(p)
    p.add_argument("--dataset")
    p.add_argument("--model")
    output(p)


@command("restore", "undo a replace or delete: bring back the rows it set aside (one transaction)", "store:restore", WRITES)
def restore(p):
    p.add_argument("submission", type=int)
    db(p)


@command("purge", "drop for good the rows a submission set aside", "store:purge", WRITES)
def purge(p):
    p.add_argument("submission", type=int)
    db(p)
    p.add_argument("--yes", action="store_true", help="really drop them")


@command("delete-model", "set aside a model's responses, ratings and scores (one transaction; restorable until purge)",
         "store:delete_model", WRITES)
def delete_model(p):
    p.add_argument("model")
    db(p)
    p.add_argument("--dataset", help="only in this dataset")
    p.add_argument("--yes", action="store_true", help="really delete (without it, only show what would go)")
