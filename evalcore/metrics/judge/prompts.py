"""Judge prompts and the rules that read the judge's answer.

Three kinds of prompt, each in Chinese and English:
- "geval": G-Eval-style rubrics (Liu et al. 2023: task, criterion, numbered steps, score) for the four MSDE
  human dimensions, on the annotators' own 0-2 scale so judge scores sit on the humans' scale.
- "mtbench-single": FastChat's MT-Bench single-answer grading, 1-10 (judge_prompts.jsonl, single-v1 and
  single-v1-multi-turn).
- "pairwise": FastChat's pair-v2 / pair-v2-multi-turn, verdict [[A]], [[B]] or [[C]] (tie).

The English MT-Bench texts are FastChat's verbatim, except that the multi-turn ones say "last user question"
where FastChat says "second" (our dialogues have any number of turns). The Chinese ones translate the
instructions and keep FastChat's section markers and output format, so one parser reads both.
"""
from __future__ import annotations

import hashlib
import json
import re

DIMENSIONS = ("Info", "Coh", "Know", "Rec")
# MSDE paper §3.2: every dimension rated 丰富度 (0~2)、连贯性 (0~2)、知识准确率 (0~2)、推荐成功率 (0~2).
DIMENSION_SCALES: dict[str, tuple[float, float]] = {d: (0.0, 2.0) for d in DIMENSIONS}
MTBENCH_SCALE = (1.0, 10.0)
KINDS = ("geval", "mtbench-single", "pairwise")
DIALOGUE_KIND = "geval-dialogue"   # a whole conversation rated at once (dialogue_messages): not a per-response metric

RATING_RULE = "fastchat-[[n]]"  # first [[n]], else first [n]; outside the scale is a failure
VERDICT_RULE = "fastchat-[[A|B|C]]-unique"  # exactly one of [[A]], [[B]], [[C]] in the answer

ONE_SCORE = re.compile(r"\[\[(\d+\.?\d*)\]\]")  # FastChat common.py one_score_pattern
ONE_SCORE_BACKUP = re.compile(r"\[(\d+\.?\d*)\]")  # ... and its one_score_pattern_backup


def norm_lang(lang: str | None) -> str:
    """'en', 'en-US', 'english' -> 'en'; anything else -> 'zh' (the engine's first language)."""
    return "en" if str(lang or "").lower().startswith("en") else "zh"


# ---------------------------------------------------------------- G-Eval rubrics (MSDE paper §3.2.1-3.2.4)
# Each: name, definition, one line per score, evaluation steps. The paper rates whole dialogues; the steps
# say how to apply its levels to the one response being judged.
RUBRICS: dict[str, dict[str, dict]] = {
    "zh": {
        "Info": {
            "name": "丰富度 (information-richness, Info.)",
            "definition": "评估回复中提供的知识（目标话题和话题属性）的多少。",
            "levels": ["没有提及任何知识。", "只提及了一个知识点。", "提及了多个知识点。"],
            "steps": [
                "阅读对话上下文，以及对话附加信息（知识、目标或画像，如有）。",
                "阅读回复，列出其中提及的每个不同的知识点：目标话题（如电影、明星、歌曲、美食、地点）"
                "及其属性（如导演、生日、获奖、评分、口味）。",
                "数一数知识点的个数：没有为 0 分，恰好一个为 1 分，多个为 2 分。"
                "这里不判断知识是否正确，那是知识准确性指标的事。",
            ],
        },
        "Coh": {
            "name": "连贯性 (coherence, Coh.)",
            "definition": "评估回复在给定的当前目标和全局上下文时的流畅性、相关性和逻辑一致性。",
            "levels": [
                "超过 2/3 的内容与当前目标和全局上下文不相关或逻辑矛盾。",
                "超过 1/3（但不超过 2/3）的内容与当前目标和全局上下文不相关或逻辑矛盾。",
                "少于 1/3 的内容与当前目标和全局上下文不相关或逻辑矛盾。",
            ],
            "steps": [
                "阅读对话上下文，弄清当前的话题与目标（对话附加信息中给出目标时以之为准）。",
                "阅读回复，检查它是否流畅，是否回应了用户的最后一句话并服务于当前目标，"
                "是否与前文以及自身在逻辑上一致（不自相矛盾、不与已说过的事实冲突）。",
                "逐句判断回复中不相关或逻辑矛盾的部分所占比例（标注者对整段对话按回复比例打分，"
                "这里对这一条回复按句子比例打分）：超过 2/3 为 0 分，1/3 到 2/3 为 1 分，少于 1/3 为 2 分。",
            ],
        },
        "Know": {
            "name": "知识准确性 (knowledge fidelity, Know.)",
            "definition": "评估回复中使用知识的正确性。",
            "levels": ["所有使用的知识都是错误的，或没有使用任何知识。", "部分使用的知识是正确的。",
                       "所有使用的知识都是正确的。"],
            "steps": [
                "阅读对话附加信息中的知识（如有）和对话上下文。",
                "列出回复中使用的每条知识（事实陈述）。",
                "逐条对照附加信息中的知识核对；附加信息未涉及的，按公认的常识核对。",
                "打分：全部正确为 2 分；部分正确为 1 分；全部错误或没有使用任何知识为 0 分。",
            ],
        },
        "Rec": {
            "name": "推荐成功率 (recommendation accuracy, Rec.)",
            "definition": "评估用户是否最终接受了对话中的推荐。",
            "levels": ["用户没有接受推荐。", "用户部分接受推荐。", "用户完全接受推荐。"],
            "steps": [
                "阅读对话附加信息中的推荐目标（如有）和对话上下文，弄清用户的兴趣与偏好。",
                "找出回复（及前文）中机器人所做的推荐。",
                "判断用户是否接受推荐：上下文中有用户的反应时以之为准；回复是最后一句时，"
                "判断一位有上述偏好的用户会不会接受。没有做出任何推荐视为没有接受。",
                "打分：没有接受为 0 分；部分接受（如感兴趣但犹豫，或只接受了一部分）为 1 分；完全接受为 2 分。",
            ],
        },
    },
    "en": {
        "Info": {
            "name": "Information-richness (Info.)",
            "definition": "How much knowledge (target topics and topic attributes) the response provides.",
            "levels": ["No knowledge is mentioned.", "Exactly one knowledge point is mentioned.",
                       "Several knowledge points are mentioned."],
            "steps": [
                "Read the dialogue context and the grounding (knowledge, goal or persona), if given.",
                "Read the response and list each distinct knowledge point it mentions: target topics (e.g. a "
                "movie, a star, a song, a dish, a place) and their attributes (e.g. director, birthday, awards, "
                "rating, taste).",
                "Count the knowledge points: none gives 0, exactly one gives 1, several give 2. Do not judge "
                "whether the knowledge is correct; that is the knowledge-fidelity metric's job.",
            ],
        },
        "Coh": {
            "name": "Coherence (Coh.)",
            "definition": "The fluency, relevance and logical consistency of the response given the current "
                          "goal and the global context.",
            "levels": [
                "More than 2/3 of the content is irrelevant to, or logically contradicts, the current goal and "
                "the global context.",
                "More than 1/3 (but at most 2/3) of the content is irrelevant to, or logically contradicts, the "
                "current goal and the global context.",
                "Less than 1/3 of the content is irrelevant to, or logically contradicts, the current goal and "
                "the global context.",
            ],
            "steps": [
                "Read the dialogue context and work out the current topic and goal (the goal in the grounding, "
                "when given, decides).",
                "Read the response. Check that it is fluent, answers the user's last turn, serves the current "
                "goal, and is logically consistent with the earlier turns and with itself.",
                "Judge, sentence by sentence, what share of the response is irrelevant or contradictory (the "
                "annotators rated whole dialogues by the share of replies; here rate this one response by the "
                "share of its sentences): more than 2/3 gives 0, between 1/3 and 2/3 gives 1, less than 1/3 "
                "gives 2.",
            ],
        },
        "Know": {
            "name": "Knowledge fidelity (Know.)",
            "definition": "The correctness of the knowledge used in the response.",
            "levels": ["All knowledge used is wrong, or no knowledge is used.",
                       "Part of the knowledge used is correct.", "All knowledge used is correct."],
            "steps": [
                "Read the knowledge in the grounding, if given, and the dialogue context.",
                "List each piece of knowledge (each factual statement) the response uses.",
                "Check each one against the grounding knowledge; where the grounding is silent, against "
                "well-established common knowledge.",
                "Score: all correct gives 2; partly correct gives 1; all wrong, or no knowledge used, gives 0.",
            ],
        },
        "Rec": {
            "name": "Recommendation accuracy (Rec.)",
            "definition": "Whether the user finally accepts the recommendation made in the dialogue.",
            "levels": ["The user does not accept the recommendation.",
                       "The user partly accepts the recommendation.",
                       "The user fully accepts the recommendation."],
            "steps": [
                "Read the recommendation goal in the grounding, if given, and the dialogue context; work out "
                "the user's interests and preferences.",
                "Find the recommendation the bot makes in the response (or earlier in the dialogue).",
                "Judge whether the user accepts it: the user's reactions in the context decide when present; "
                "when the response is the last turn, judge whether a user with these preferences would accept "
                "it. Making no recommendation counts as not accepted.",
                "Score: not accepted gives 0; partly accepted (e.g. interested but hesitant, or accepting only "
                "part) gives 1; fully accepted gives 2.",
            ],
        },
    },
}

GEVAL = {
    "zh": {
        "system": "你是一名严谨的对话系统评估员。你将看到一段对话上下文，以及对话系统接着给出的一条回复。"
                  "你的任务是按一个指标为这条回复打分。\n请仔细阅读并理解以下说明，评估时随时参照。",
        "criteria": "评估标准：\n\n{name}（{lo}-{hi} 分）：{definition}\n",
        "level": "- {score} 分：{text}\n",
        "steps": "\n评估步骤：\n\n",
        "grounding": "对话附加信息（系统可用的背景信息）：\n\n{grounding}\n\n",
        "references": "参考回复（仅供参考，好的回复不必与之一致）：\n\n{references}\n\n",
        "input": "对话上下文（按时间先后）：\n\n{context}\n\n待评估的回复：\n\n{response}\n\n",
        "output": "请先用不超过三句话简要说明理由，然后在最后一行严格按照以下格式给出分数（{lo} 到 {hi} 之间的整数）："
                  "\"Rating: [[分数]]\"，例如：\"Rating: [[1]]\"。",
        "speakers": ("用户", "机器人"),
        "colon": "：",
        "none": "（无）",
    },
    "en": {
        "system": "You are a careful evaluator of dialogue systems. You will be given a dialogue context and "
                  "one response that a dialogue system wrote next. Your task is to rate the response on one "
                  "metric.\nPlease make sure you read and understand these instructions carefully. Please keep "
                  "this document open while reviewing, and refer to it as needed.",
        "criteria": "Evaluation Criteria:\n\n{name} ({lo}-{hi}): {definition}\n",
        "level": "- {score}: {text}\n",
        "steps": "\nEvaluation Steps:\n\n",
        "grounding": "Grounding (background the system was given):\n\n{grounding}\n\n",
        "references": "Reference responses (for reference only; a good response need not match them):\n\n"
                      "{references}\n\n",
        "input": "Dialogue Context (oldest first):\n\n{context}\n\nResponse to evaluate:\n\n{response}\n\n",
        "output": "First give a short explanation (at most three sentences), then on the last line give the "
                  "score, an integer from {lo} to {hi}, strictly in this format: \"Rating: [[score]]\", for "
                  "example: \"Rating: [[1]]\".",
        "speakers": ("User", "Bot"),
        "colon": ": ",
        "none": "(none)",
    },
}


def _num(x: float) -> str:
    """1.0 -> '1', 2.5 -> '2.5': scale ends as the paper writes them."""
    return f"{x:g}"


def _rubric_text(dimension: str, lang: str) -> str:
    """The criterion and steps of one dimension: fixed text, so it counts as template."""
    if dimension not in DIMENSION_SCALES:
        raise ValueError(f"unknown dimension {dimension!r}: one of {', '.join(DIMENSIONS)}")
    t, r = GEVAL[lang], RUBRICS[lang][dimension]
    lo, hi = DIMENSION_SCALES[dimension]
    text = t["criteria"].format(name=r["name"], lo=_num(lo), hi=_num(hi), definition=r["definition"])
    for score, level in zip(range(int(lo), int(hi) + 1), r["levels"]):
        text += t["level"].format(score=score, text=level)
    text += t["steps"] + "".join(f"{i}. {s}\n" for i, s in enumerate(r["steps"], 1))
    return text + "\n"


def _dialogue_lines(context: list[str], t: dict) -> str:
    """One turn per line, oldest first; the last turn is the user's (the response answers it)."""
    n = len(context)
    lines = [f"{t['speakers'][(n - 1 - i) % 2]}{t['colon']}{' '.join(str(turn).splitlines())}"
             for i, turn in enumerate(context)]
    return "\n".join(lines) if lines else t["none"]


def _grounding_json(grounding: dict) -> str:
    """JSON with one top-level key per line and each value on its line: readable, yet short for long lists."""
    if not isinstance(grounding, dict):
        return json.dumps(grounding, ensure_ascii=False, default=str)
    lines = [f"  {json.dumps(str(k), ensure_ascii=False)}: {json.dumps(v, ensure_ascii=False, default=str)}"
             for k, v in grounding.items()]
    return "{\n" + ",\n".join(lines) + "\n}"


def geval_messages(dimension: str, lang: str, context: list[str], response: str, references: list[str] | None = None,
                   grounding: dict | None = None) -> list[dict]:
    """System + user messages asking for one MSDE dimension's score of `response`, as 'Rating: [[n]]'."""
    lang = norm_lang(lang)
    t = GEVAL[lang]
    user = _rubric_text(dimension, lang)  # raises on an unknown dimension
    lo, hi = DIMENSION_SCALES[dimension]
    if grounding:
        user += t["grounding"].format(grounding=_grounding_json(grounding))
    refs = [r for r in (references or []) if str(r).strip()]
    if refs:
        user += t["references"].format(references="\n".join(f"- {' '.join(str(r).splitlines())}" for r in refs))
    user += t["input"].format(context=_dialogue_lines(list(context), t), response=response)
    user += t["output"].format(lo=_num(lo), hi=_num(hi))
    return [{"role": "system", "content": t["system"]}, {"role": "user", "content": user}]


# ---------------------------------------------------------------- G-Eval over a whole conversation
# MSDE rated whole dialogues: the same rubric, applied to everything the system said in one conversation (a
# simulated or a person's), not to one response. The simulator audit rates simulated conversations with it.
DIALOGUE = {
    "zh": {
        "system": "你是一名细心的对话系统评测员。你会看到一段用户与对话系统的完整对话。你的任务是按一项指标给对话系统"
                  "在整段对话中的表现打分。\n请仔细阅读并理解这些说明，评分时随时对照。",
        "input": "完整对话（从早到晚）：\n\n{dialogue}\n\n",
        "speakers": ("用户", "系统"),
    },
    "en": {
        "system": "You are a careful evaluator of dialogue systems. You will be given a whole conversation between a "
                  "user and a dialogue system. Your task is to rate the system's side of the whole conversation on "
                  "one metric.\nPlease make sure you read and understand these instructions carefully, and refer to "
                  "them as needed.",
        "input": "The whole conversation (oldest first):\n\n{dialogue}\n\n",
        "speakers": ("User", "System"),
    },
}


def dialogue_messages(dimension: str, lang: str, turns: list[tuple[str, str]], grounding: dict | None = None) -> list[dict]:
    """System + user messages asking for one MSDE dimension's score of a whole conversation (turns: (role, text),
    role 'user' or 'assistant'), as 'Rating: [[n]]'."""
    lang = norm_lang(lang)
    t, d = GEVAL[lang], DIALOGUE[lang]
    user = _rubric_text(dimension, lang)  # raises on an unknown dimension
    lo, hi = DIMENSION_SCALES[dimension]
    if grounding:
        user += t["grounding"].format(grounding=_grounding_json(grounding))
    lines = "\n".join(f"{d['speakers'][role != 'user']}{t['colon']}{' '.join(str(text).splitlines())}"
                      for role, text in turns)
    user += d["input"].format(dialogue=lines or t["none"])
    user += t["output"].format(lo=_num(lo), hi=_num(hi))
    return [{"role": "system", "content": d["system"]}, {"role": "user", "content": user}]


# ---------------------------------------------------------------- MT-Bench (FastChat judge_prompts.jsonl)
_FC_SINGLE_SYSTEM = "You are a helpful assistant."
_FC_SINGLE_PROMPT = (
    "[Instruction]\nPlease act as an impartial judge and evaluate the quality of the response provided by an AI "
    "assistant to the user question displayed below. Your evaluation should consider factors such as the "
    "helpfulness, relevance, accuracy, depth, creativity, and level of detail of the response. Begin your "
    "evaluation by providing a short explanation. Be as objective as possible. After providing your explanation, "
    "you must rate the response on a scale of 1 to 10 by strictly following this format: \"[[rating]]\", for "
    "example: \"Rating: [[5]]\".\n\n[Question]\n{question}\n\n[The Start of Assistant's Answer]\n{answer}\n"
    "[The End of Assistant's Answer]")
# single-v1-multi-turn's system prompt ("You evaluation" is FastChat's wording); "second" -> "last".
_FC_SINGLE_MT_SYSTEM = (
    "Please act as an impartial judge and evaluate the quality of the response provided by an AI assistant to the "
    "user question displayed below. Your evaluation should consider factors such as the helpfulness, relevance, "
    "accuracy, depth, creativity, and level of detail of the response. You evaluation should focus on the "
    "assistant's answer to the last user question. Begin your evaluation by providing a short explanation. Be as "
    "objective as possible. After providing your explanation, you must rate the response on a scale of 1 to 10 by "
    "strictly following this format: \"[[rating]]\", for example: \"Rating: [[5]]\".\n\n")
_FC_PAIR_SYSTEM = (
    "Please act as an impartial judge and evaluate the quality of the responses provided by two AI assistants to "
    "the user question displayed below. You should choose the assistant that follows the user's instructions and "
    "answers the user's question better. Your evaluation should consider factors such as the helpfulness, "
    "relevance, accuracy, depth, creativity, and level of detail of their responses. Begin your evaluation by "
    "comparing the two responses and provide a short explanation. Avoid any positional biases and ensure that the "
    "order in which the responses were presented does not influence your decision. Do not allow the length of the "
    "responses to influence your evaluation. Do not favor certain names of the assistants. Be as objective as "
    "possible. After providing your explanation, output your final verdict by strictly following this format: "
    "\"[[A]]\" if assistant A is better, \"[[B]]\" if assistant B is better, and \"[[C]]\" for a tie.")
_FC_PAIR_PROMPT = (
    "[User Question]\n{question}\n\n[The Start of Assistant A's Answer]\n{answer_a}\n[The End of Assistant A's "
    "Answer]\n\n[The Start of Assistant B's Answer]\n{answer_b}\n[The End of Assistant B's Answer]")
# pair-v2-multi-turn's system prompt; "second" -> "last".
_FC_PAIR_MT_SYSTEM = (
    "Please act as an impartial judge and evaluate the quality of the responses provided by two AI assistants to "
    "the user questions. You should choose the assistant that follows the user's instructions and answers the "
    "user's questions better. Your evaluation should consider factors such as the helpfulness, relevance, "
    "accuracy, depth, creativity, and level of detail of their responses. You should focus on who provides a "
    "better answer to the last user question. Begin your evaluation by comparing the responses of the two "
    "assistants and provide a short explanation. Avoid any positional biases and ensure that the order in which "
    "the responses were presented does not influence your decision. Do not allow the length of the responses to "
    "influence your evaluation. Do not favor certain names of the assistants. Be as objective as possible. After "
    "providing your explanation, output your final verdict by strictly following this format: \"[[A]]\" if "
    "assistant A is better, \"[[B]]\" if assistant B is better, and \"[[C]]\" for a tie.")

MTBENCH = {
    "en": {"single_system": _FC_SINGLE_SYSTEM, "single": _FC_SINGLE_PROMPT, "single_mt_system": _FC_SINGLE_MT_SYSTEM,
           "pair_system": _FC_PAIR_SYSTEM, "pair": _FC_PAIR_PROMPT, "pair_mt_system": _FC_PAIR_MT_SYSTEM},
    "zh": {
        "single_system": "你是一个乐于助人的助手。",
        "single": (
            "[Instruction]\n请作为一名公正的评审，评估 AI 助手对下面所示用户问题的回复质量。你的评估应考虑回复的有"
            "用性、相关性、准确性、深度、创造性和详细程度等因素。请先给出简短的解释。请尽可能客观。给出解释后，你必"
            "须严格按照以下格式在 1 到 10 的范围内为回复打分：\"[[rating]]\"，例如：\"Rating: [[5]]\"。\n\n[Questio"
            "n]\n{question}\n\n[The Start of Assistant's Answer]\n{answer}\n[The End of Assistant's Answer]"),
        "single_mt_system": (
            "请作为一名公正的评审，评估 AI 助手对下面所示用户问题的回复质量。你的评估应考虑回复的有用性、相关性、准"
            "确性、深度、创造性和详细程度等因素。你的评估应聚焦于助手对最后一个用户问题的回答。请先给出简短的解释。"
            "请尽可能客观。给出解释后，你必须严格按照以下格式在 1 到 10 的范围内为回复打分：\"[[rating]]\"，例如："
            "\"Rating: [[5]]\"。\n\n"),
        "pair_system": (
            "请作为一名公正的评审，评估两个 AI 助手对下面所示用户问题的回复质量。你应选择更好地遵循用户指令、更好地"
            "回答用户问题的助手。你的评估应考虑回复的有用性、相关性、准确性、深度、创造性和详细程度等因素。请先比较"
            "两个回复并给出简短的解释。避免任何位置偏见，确保回复的呈现顺序不影响你的判断。不要让回复的长度影响你的"
            "评估。不要偏爱某个助手的名字。请尽可能客观。给出解释后，严格按照以下格式输出最终裁决：助手 A 更好输出 "
            "\"[[A]]\"，助手 B 更好输出 \"[[B]]\"，平局输出 \"[[C]]\"。"),
        "pair": _FC_PAIR_PROMPT,
        "pair_mt_system": (
            "请作为一名公正的评审，评估两个 AI 助手对用户问题的回复质量。你应选择更好地遵循用户指令、更好地回答用户"
            "问题的助手。你的评估应考虑回复的有用性、相关性、准确性、深度、创造性和详细程度等因素。你应聚焦于哪个助"
            "手对最后一个用户问题给出了更好的回答。请先比较两个助手的回复并给出简短的解释。避免任何位置偏见，确保回"
            "复的呈现顺序不影响你的判断。不要让回复的长度影响你的评估。不要偏爱某个助手的名字。请尽可能客观。给出解"
            "释后，严格按照以下格式输出最终裁决：助手 A 更好输出 \"[[A]]\"，助手 B 更好输出 \"[[B]]\"，平局输出 \"["
            "[C]]\"。"),
    },
}
# The multi-turn conversation layout of FastChat's *-multi-turn templates, for any number of turns.
_CONV_START = "<|The Start of Assistant {who}'s Conversation with User|>\n\n"
_CONV_USER = "### User:\n{text}\n\n"
_CONV_ASSISTANT = "### Assistant {who}:\n{text}\n\n"
_CONV_END = "<|The End of Assistant {who}'s Conversation with User|>"


def _conversation(context: list[str], answer: str, who: str) -> str:
    """FastChat's multi-turn block: the history, oldest first, ending with the user's turn, then `answer`."""
    n, out = len(context), _CONV_START.format(who=who)
    for i, turn in enumerate(context):
        user = (n - 1 - i) % 2 == 0  # the last context turn is the user's
        out += _CONV_USER.format(text=turn) if user else _CONV_ASSISTANT.format(who=who, text=turn)
    return out + _CONV_ASSISTANT.format(who=who, text=answer) + _CONV_END.format(who=who)


def mtbench_single_messages(context: list[str], response: str, lang: str) -> list[dict]:
    """MT-Bench single-answer grading (1-10). One context turn: single-v1; more: single-v1-multi-turn's layout."""
    t, context = MTBENCH[norm_lang(lang)], list(context)
    if len(context) <= 1:
        user = t["single"].format(question=context[0] if context else "", answer=response)
        return [{"role": "system", "content": t["single_system"]}, {"role": "user", "content": user}]
    return [{"role": "system", "content": t["single_mt_system"]},
            {"role": "user", "content": _conversation(context, response, "A")}]


def pairwise_messages(context: list[str], answer_a: str, answer_b: str, lang: str) -> list[dict]:
    """MT-Bench pairwise comparison (pair-v2; pair-v2-multi-turn's layout for more than one context turn)."""
    t, context = MTBENCH[norm_lang(lang)], list(context)
    if len(context) <= 1:
        user = t["pair"].format(question=context[0] if context else "", answer_a=answer_a, answer_b=answer_b)
        return [{"role": "system", "content": t["pair_system"]}, {"role": "user", "content": user}]
    user = _conversation(context, answer_a, "A") + "\n\n\n" + _conversation(context, answer_b, "B")
    return [{"role": "system", "content": t["pair_mt_system"]}, {"role": "user", "content": user}]


def template_hash(kind: str, dimension: str | None, lang: str) -> str:
    """First 10 hex chars of sha256 over every template text the kind may use (before filling), so editing a
    prompt changes the hash. `dimension` matters for "geval" only."""
    lang = norm_lang(lang)
    if kind == "geval":
        t = GEVAL[lang]
        parts = [t["system"], _rubric_text(dimension or "", lang), t["grounding"], t["references"], t["input"],
                 t["output"], *t["speakers"], t["colon"], t["none"]]
    elif kind == DIALOGUE_KIND:
        t, d = GEVAL[lang], DIALOGUE[lang]
        parts = [d["system"], _rubric_text(dimension or "", lang), t["grounding"], d["input"], t["output"],
                 *d["speakers"], t["colon"], t["none"]]
    elif kind in ("mtbench-single", "pairwise"):
        t = MTBENCH[lang]
        keys = ("single_system", "single", "single_mt_system") if kind == "mtbench-single" else \
            ("pair_system", "pair", "pair_mt_system")
        parts = [t[k] for k in keys] + [_CONV_START, _CONV_USER, _CONV_ASSISTANT, _CONV_END]
    else:
        raise ValueError(f"unknown judge prompt kind {kind!r}: one of {', '.join(KINDS)}")
    return hashlib.sha256("\x1f".join(parts).encode("utf-8")).hexdigest()[:10]


# ---------------------------------------------------------------- reading the judge's answer
def parse_rating(text: str | None, lo: float, hi: float) -> tuple[float | None, str | None]:
    """FastChat's rule: the first [[n]], else the first [n]; a value outside [lo, hi] is a failure, not clipped."""
    if text is None:
        return None, "no answer from the judge"
    match = ONE_SCORE.search(text) or ONE_SCORE_BACKUP.search(text)
    if not match:
        return None, f"no [[rating]] in the answer: {text[:80]!r}"
    value = float(match.group(1))
    if not lo <= value <= hi:
        return None, f"rating {_num(value)} outside {_num(lo)}-{_num(hi)}"
    return value, None


_VERDICTS = {"[[A]]": "A", "[[B]]": "B", "[[C]]": "tie"}


def parse_verdict(text: str | None) -> tuple[str | None, str | None]:
    """'A', 'B' or 'tie' from FastChat's [[A]]/[[B]]/[[C]]. Unlike FastChat (which takes A over B over C when
    several appear) an answer holding more than one is a failure: echoing the format must not favour A."""
    if text is None:
        return None, "no answer from the judge"
    found = [token for token in _VERDICTS if token in text]
    if not found:
        return None, f"no [[A]]/[[B]]/[[C]] verdict in the answer: {text[:80]!r}"
    if len(found) > 1:
        return None, f"ambiguous verdict: {' and '.join(found)} both in the answer"
    return _VERDICTS[found[0]], None


_AS_A = {"A": 1.0, "tie": 0.5, "B": 0.0}  # the answer under test is A in the first order ...
_AS_B = {"B": 1.0, "tie": 0.5, "A": 0.0}  # ... and B in the swapped order


def pairwise_value(verdict_ab: str | None, verdict_ba: str | None) -> tuple[float | None, str | None]:
    """Score of the answer under test over both orders: each order gives 1 (it wins), 0.5 (tie) or 0 (it loses);
    the value is their mean. So win+win = 1, win+tie = 0.75, win+loss (position flip) = 0.5, tie+tie = 0.5."""
    if verdict_ab not in _AS_A:
        return None, "no verdict with the answer under test as A (first order)"
    if verdict_ba not in _AS_B:
        return None, "no verdict with the answer under test as B (swapped order)"
    return (_AS_A[verdict_ab] + _AS_B[verdict_ba]) / 2, None


def position_bias(pairs: list[tuple[str | None, str | None]]) -> dict:
    """Position bias over (verdict with the test answer as A, verdict with it as B) pairs; pairs missing either
    verdict are skipped. With n usable pairs:
      inconsistent   = #pairs whose outcome for the test answer differs between the orders / n
                       (outcome: win/tie/loss; e.g. ("A", "A") means it won first and lost swapped)
      first_position = #verdicts equal to "A" / (2 n)   (0.5 for a judge blind to position, ties aside)
    Fractions are None when n is 0."""
    usable = [(ab, ba) for ab, ba in pairs if ab in _AS_A and ba in _AS_B]
    n = len(usable)
    inconsistent = sum(_AS_A[ab] != _AS_B[ba] for ab, ba in usable)
    first = sum((ab == "A") + (ba == "A") for ab, ba in usable)
    return {"pairs": n, "skipped": len(pairs) - n,
            "inconsistent": inconsistent / n if n else None,
            "first_position": first / (2 * n) if n else None}
