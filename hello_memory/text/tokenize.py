"""Tokenisation, language detection and sentence splitting for mixed English/Chinese.

Chinese has no spaces, so runs of Han characters are segmented with jieba (precise
mode); everything else is split by a word regex that keeps identifiers such as
``984233``, ``gpt-4o``, ``o'brien`` and ``v1.2.3`` whole, with an English possessive
``'s`` taken off (``anna's`` -> ``anna``). Punctuation is dropped.
"""

from __future__ import annotations

import logging
import re
import threading
import unicodedata
from typing import Any, Literal

__all__ = [
    "EN_STOPWORDS",
    "ZH_STOPWORDS",
    "contains_cjk",
    "detect_language",
    "split_sentences",
    "tokenize",
]

# Han ideographs: CJK Unified (+ extension A, B..F) and compatibility ideographs. Kana
# and Hangul are deliberately not here: jieba would cut them into single characters,
# while the word regex keeps space-delimited Korean words and kana runs whole.
_HAN = "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\U00020000-\U0002fa1f"
_HAN_RE = re.compile(f"[{_HAN}]")
_HAN_RUN_RE = re.compile(f"[{_HAN}]+")
# A word: letters/digits/underscore, optionally joined by - ' ’ or . (so "gpt-4o",
# "o'brien", "3.14", "example.com" stay one token), with a trailing ++ or # for
# names like "c++" and "c#".
_WORD_RE = re.compile(r"\w+(?:[-'’.]\w+)*(?:\+\+|#(?!\w))?")
_LATIN_RE = re.compile(r"[A-Za-z]")
# An English possessive or "is"/"has" contraction at the end of a word: "anna's" is
# the token "anna", so a possessive matches the name (Lucene's possessive filter does
# the same); "o'brien" keeps its apostrophe.
_POSSESSIVE_RE = re.compile(r"['’]s$")

# Kept as whitespace-separated strings (not list literals) so the sets stay readable.
EN_STOPWORDS: frozenset[str] = frozenset(
    """a an the and or but if then so of to in on at by for with from as into about
    is are was were be been being am do does did have has had i me my we our you your
    he him his she her it its they them their this that these those there here what
    which who whom not no can will would should could just than too very also""".split()  # noqa: SIM905
)
ZH_STOPWORDS: frozenset[str] = frozenset(
    """的 了 是 在 和 与 及 或 而 就 都 也 还 又 很 被 把 让 给 对 从 向 这 那 这个 那个
    这些 那些 我 你 他 她 它 我们 你们 他们 她们 它们 自己 一个 一些 有 没有 不 吗 呢 吧
    啊 呀 嗯 哦 着 过 得 地 之 其 等 以及 因为 所以 但是 如果 然后
    什么 怎么 怎样 怎么样 哪 哪里 哪儿 哪个 谁 多少 几 为什么 如何 么""".split()  # noqa: SIM905
)

_jieba: Any = None
_jieba_lock = threading.Lock()


def _get_jieba() -> Any:
    """Import and initialise jieba once, quietly and thread-safely.

    jieba builds its prefix dictionary (~0.5 s) on first use and logs about it at
    DEBUG; doing it lazily keeps ``import hello_memory`` fast, and the lock stops two
    threads from building it twice.
    """
    global _jieba
    if _jieba is None:
        with _jieba_lock:
            if _jieba is None:
                import jieba

                jieba.setLogLevel(logging.WARNING)
                jieba.initialize()
                _jieba = jieba
    return _jieba


def contains_cjk(text: str) -> bool:
    """True if ``text`` contains at least one Han (Chinese) character."""
    return _HAN_RE.search(text) is not None


def detect_language(text: str) -> Literal["zh", "en", "mixed", "unknown"]:
    """Guess the language from the share of Han characters among Han + Latin letters.

    ``zh`` at >= 60 % Han (Chinese prose with some English terms), ``en`` at <= 10 %,
    ``mixed`` in between, ``unknown`` when there are neither (digits, symbols, other
    scripts). Characters are compared one to one, which favours English a little
    because an English word spends more letters than a Chinese word spends characters.
    """
    han = len(_HAN_RE.findall(text))
    latin = len(_LATIN_RE.findall(text))
    total = han + latin
    if total == 0:
        return "unknown"
    ratio = han / total
    if ratio >= 0.6:
        return "zh"
    if ratio <= 0.1:
        return "en"
    return "mixed"


def _segment_han(run: str) -> list[str]:
    words: list[str] = _get_jieba().lcut(run, cut_all=False)
    return [w for w in words if w.strip()]


def tokenize(text: str, *, lowercase: bool = True, remove_stopwords: bool = False) -> list[str]:
    """Split mixed English/Chinese text into word tokens, punctuation dropped.

    Text is NFKC-normalised first so full-width letters and digits (``ＧＰＴ４``) match
    their ASCII forms. Han runs go to jieba; the rest to a word regex.
    """
    if not isinstance(text, str):
        raise TypeError(f"tokenize() takes a str, got {type(text).__name__}")
    text = unicodedata.normalize("NFKC", text)
    if lowercase:
        text = text.lower()
    tokens: list[str] = []
    pos = 0
    for match in _HAN_RUN_RE.finditer(text):
        tokens.extend(_WORD_RE.findall(text, pos, match.start()))
        tokens.extend(_segment_han(match.group()))
        pos = match.end()
    tokens.extend(_WORD_RE.findall(text, pos))
    tokens = [_POSSESSIVE_RE.sub("", t) if t[-1:] in "sS" else t for t in tokens]
    tokens = [t for t in tokens if t]
    if remove_stopwords:
        # Compare lowercased so stopwords are removed even with lowercase=False.
        tokens = [t for t in tokens if t.lower() not in EN_STOPWORDS and t not in ZH_STOPWORDS]
    return tokens


# A sentence ends at: Chinese terminators (always); ASCII . ! ? only before
# whitespace, end of text or a Han character (so "3.14", "e.g.x" and "gpt-4.5" do not
# split); or a newline. Closing quotes/brackets stay with the sentence they close, and
# the whitespace after a sentence belongs to it, so joining the pieces gives the input.
_CLOSERS = "\"'”’」』）)\\]】》"
_SENTENCE_END_RE = re.compile(
    rf"""
    (?: [。！？；…]+ [{_CLOSERS}]*
      | [.!?]+ [{_CLOSERS}]* (?=\s|$|[{_HAN}])
      | \n
    ) \s*
    """,
    re.VERBOSE,
)
_CONTENT_RE = re.compile(r"[^\W_]")  # a letter, digit or Han character


def split_sentences(text: str) -> list[str]:
    """Split text into sentences, terminators and trailing whitespace included.

    ``"".join(split_sentences(text)) == text`` always holds. Pieces without any
    letter, digit or Han character (stray punctuation, blank lines) are merged into the
    neighbouring sentence rather than returned alone; only an input with no content at
    all comes back as a single content-free piece. Empty input gives ``[]``.
    """
    if not isinstance(text, str):
        raise TypeError(f"split_sentences() takes a str, got {type(text).__name__}")
    raw: list[str] = []
    pos = 0
    for match in _SENTENCE_END_RE.finditer(text):
        if match.end() > pos:
            raw.append(text[pos : match.end()])
            pos = match.end()
    if pos < len(text):
        raw.append(text[pos:])

    pieces: list[str] = []
    carry = ""  # content-free text seen before the first real sentence
    for piece in raw:
        if _CONTENT_RE.search(piece):
            pieces.append(carry + piece)
            carry = ""
        elif pieces:
            pieces[-1] += piece
        else:
            carry += piece
    if carry:
        pieces.append(carry)
    return pieces
