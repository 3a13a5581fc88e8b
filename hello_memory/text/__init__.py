"""Text utilities: mixed English/Chinese tokenisation, sentence splitting, language
detection and offline token counting.

jieba is imported and its dictionary built only on the first Chinese tokenisation.
"""

from __future__ import annotations

from hello_memory.text.tokenize import (
    EN_STOPWORDS,
    ZH_STOPWORDS,
    contains_cjk,
    detect_language,
    split_sentences,
    tokenize,
)
from hello_memory.text.tokens import (
    HeuristicTokenCounter,
    HFTokenizerCounter,
    TiktokenCounter,
    TokenCounter,
    default_token_counter,
    truncate_to_tokens,
)

__all__ = [
    "EN_STOPWORDS",
    "ZH_STOPWORDS",
    "HFTokenizerCounter",
    "HeuristicTokenCounter",
    "TiktokenCounter",
    "TokenCounter",
    "contains_cjk",
    "default_token_counter",
    "detect_language",
    "split_sentences",
    "tokenize",
    "truncate_to_tokens",
]
