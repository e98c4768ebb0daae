"""Tokenizers: the vectorised char path equals the regex one; each tokenizer on tricky text."""
import numpy as np
import pytest

from evalcore.core.tokenize import MULTI_BASE, SPACE_TABLE, TOKENIZERS, char_encode, char_tokens, get_tokenizer
from support import shared

TRICKY = ["", "   ", "！！！。。。", "Hello, World! 我喜欢iPhone15和《我是山姆》😀  ok", "ÀÉ×÷ abc\u3000def\t１２",
          "a", "ab c", "x" * 10000, "中文English混合123，emoji🎉👍🏻结束", "\n 你 好 \n"]


def decode(texts):
    ids, per_text, multi = char_encode(texts)
    words = [chr(i) if i < MULTI_BASE else multi[i - MULTI_BASE] for i in ids.tolist()]
    out, at = [], 0
    for k in per_text.tolist():
        out.append(words[at:at + k])
        at += k
    return out


def test_char_by_hand():
    assert char_tokens("我喜欢iPhone15和《我》😀 ok") == ["我", "喜", "欢", "iPhone15", "和", "《", "我", "》", "😀", "ok"]
    assert char_tokens("  \t\n") == []


def test_vectorised_char_equals_regex_on_tricky_texts():
    assert decode(TRICKY) == [char_tokens(t) for t in TRICKY]


def test_vectorised_char_equals_regex_on_real_responses():
    import openpyxl

    wb = openpyxl.load_workbook(shared("msde", "data", "Lic 2021_CPC", "chatglm.xlsx"), read_only=True)
    texts = [str(r[1]) for r in list(wb.worksheets[0].iter_rows(values_only=True))[1:2001]]
    assert decode(texts) == [char_tokens(t) for t in texts]


def test_space_table_matches_str_isspace_everywhere():
    spaces = [c for c in range(0x110000) if chr(c).isspace()]
    assert max(spaces) < len(SPACE_TABLE)
    assert np.flatnonzero(SPACE_TABLE).tolist() == spaces


@pytest.mark.parametrize("name, text, expected", [
    ("space", "你好 ， 世界  ok", ["你好", "，", "世界", "ok"]),
    ("en", "Don't STOP, me-now!", ["don", "'", "t", "stop", ",", "me", "-", "now", "!"]),
    ("jieba", "我喜欢看电影", ["我", "喜欢", "看", "电影"]),
])
def test_other_tokenizers(name, text, expected):
    assert get_tokenizer(name)(text) == expected


def test_signatures_and_unknown_name():
    assert TOKENIZERS["char"].signature == "tok:char-1"
    assert TOKENIZERS["jieba"].signature.startswith("tok:jieba-0.42")
    with pytest.raises(ValueError, match="unknown tokenizer 'bpe'; known: char, space, jieba, en"):
        get_tokenizer("bpe")
