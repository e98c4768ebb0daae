"""LLM-as-judge: prompts (G-Eval rubrics for the MSDE dimensions, FastChat's MT-Bench single and pairwise),
the rules that read the judge's answers, and a client for any OpenAI-compatible chat endpoint.
No judge model ships with evalcore: the user points it at a server (vLLM, Ollama, llama.cpp, OpenAI)."""
from evalcore.metrics.judge.client import Endpoint, Reply, availability, chat_many
from evalcore.metrics.judge.options import JudgeOptions
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


def endpoint(args) -> Endpoint | None:
    """The judge's server, when both its URL and model are given."""
    if not (args.judge_base_url and args.judge_model):
        if args.judge_base_url or args.judge_model:
            raise ValueError("a judge needs both --judge-base-url and --judge-model")
        return None
    return Endpoint(args.judge_base_url, args.judge_model, api_key_env=args.judge_api_key_env,
                    temperature=args.judge_temperature, max_tokens=args.judge_max_tokens,
                    timeout=getattr(args, "judge_timeout", None) or Endpoint.timeout)


def options(args) -> dict:
    """JudgeOptions' fields, from the options of metrics.options.add_judge_arguments."""
    return dict(judge=endpoint(args), judge_baseline=args.judge_baseline, judge_concurrency=args.judge_concurrency,
                judge_retries=args.judge_retries, judge_sample=args.judge_sample)
