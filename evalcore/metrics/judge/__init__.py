"""LLM-as-judge: prompts (G-Eval rubrics for the MSDE dimensions, FastChat's MT-Bench single and pairwise),
the rules that read the judge's answers, and a client for any OpenAI-compatible chat endpoint.
No judge model ships with evalcore: the user points it at a server (vLLM, Ollama, llama.cpp, OpenAI)."""
from evalcore.core.names import count
from evalcore.metrics.judge.client import Endpoint, Reply, availability, chat_many
from evalcore.metrics.judge.options import JudgeOptions, default
from evalcore.metrics.judge.prompts import (
    DIMENSION_SCALES,
    DIMENSIONS,
    MTBENCH_SCALE,
    RATING_RULE,
    VERDICT_RULE,
    geval_messages,
    mtbench_single_messages,
    pairwise_messages,
    pairwise_value,
    parse_rating,
    parse_verdict,
    position_bias,
    template_hash,
)

__all__ = ["DIMENSIONS", "DIMENSION_SCALES", "Endpoint", "JudgeOptions", "MTBENCH_SCALE", "RATING_RULE", "Reply", "VERDICT_RULE",
           "availability", "chat_many", "geval_messages", "mtbench_single_messages", "pairwise_messages",
           "pairwise_value", "parse_rating", "parse_verdict", "position_bias", "template_hash"]


def add_arguments(parser) -> None:
    """`evalcore score`'s options of the LLM judge metrics, as one argument group."""
    g = parser.add_argument_group("LLM judge metrics (--metrics judge; any OpenAI-compatible server: vLLM, Ollama, "
                                  "llama.cpp)")
    g.add_argument("--judge-base-url", metavar="URL", help="the server's OpenAI API root, e.g. http://127.0.0.1:8000/v1")
    g.add_argument("--judge-model", help="the model name the server knows")
    g.add_argument("--judge-api-key-env", default=Endpoint.api_key_env, metavar="VAR",
                   help="environment variable holding the API key, if the server needs one (default %(default)s)")
    g.add_argument("--judge-temperature", type=float, default=Endpoint.temperature)
    g.add_argument("--judge-max-tokens", type=count(1), default=Endpoint.max_tokens)
    g.add_argument("--judge-concurrency", type=count(1), default=default("judge_concurrency"),
                   help=f"requests in flight at most (default {default('judge_concurrency')})")
    g.add_argument("--judge-retries", type=count(1), default=default("judge_retries"),
                   help=f"attempts per request, with backoff (default {default('judge_retries')})")
    g.add_argument("--judge-baseline", metavar="MODEL", help="Judge-Pairwise: the model every response is compared with")
    g.add_argument("--judge-sample", type=count(1), metavar="I",
                   help="this run is sample I of k (with --judge-temperature > 0): stored under its own signature, "
                        "so `judge-audit --part uncertainty` sees the judge's spread")


def endpoint(args) -> Endpoint | None:
    """The judge's server, when both its URL and model are given."""
    if not (args.judge_base_url and args.judge_model):
        if args.judge_base_url or args.judge_model:
            raise ValueError("a judge needs both --judge-base-url and --judge-model")
        return None
    return Endpoint(args.judge_base_url, args.judge_model, api_key_env=args.judge_api_key_env,
                    temperature=args.judge_temperature, max_tokens=args.judge_max_tokens)


def options(args) -> dict:
    """JudgeOptions' fields, from add_arguments' options."""
    return dict(judge=endpoint(args), judge_baseline=args.judge_baseline, judge_concurrency=args.judge_concurrency,
                judge_retries=args.judge_retries, judge_sample=args.judge_sample)
