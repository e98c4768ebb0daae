"""LLM-as-judge: prompts (G-Eval rubrics for the MSDE dimensions, FastChat's MT-Bench single and pairwise),
the rules that read the judge's answers, and a client for any OpenAI-compatible chat endpoint.
No judge model ships with evalcore: the user points it at a server (vLLM, Ollama, llama.cpp, OpenAI)."""
from evalcore.metrics.judge.client import Endpoint, Reply, availability, chat_many
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

__all__ = ["DIMENSIONS", "DIMENSION_SCALES", "Endpoint", "MTBENCH_SCALE", "RATING_RULE", "Reply", "VERDICT_RULE",
           "availability", "chat_many", "geval_messages", "mtbench_single_messages", "pairwise_messages",
           "pairwise_value", "parse_rating", "parse_verdict", "position_bias", "template_hash"]
