"""Optional LLM support: the :class:`LLMClient` protocol, an OpenAI-compatible client,
deterministic JSON repair and :func:`call_or_fallback` for degrading without one.

Build a client from settings with :func:`from_settings` (None when
``llm.provider`` is ``none``); the core takes the built object (or None).

>>> llm = from_settings(load_settings().llm)                                # doctest: +SKIP
>>> plan = call_or_fallback(llm, lambda c: c.complete_json(msgs, Plan),     # doctest: +SKIP
...                         lambda: rule_plan(query), what="query planning")
"""

from __future__ import annotations

from hello_memory.llm.base import (
    LLMClient,
    LLMError,
    LLMResponseError,
    LLMSchemaError,
    LLMStats,
    LLMUnavailableError,
    Message,
    call_or_fallback,
)
from hello_memory.llm.json_repair import JSONRepairError, extract_json
from hello_memory.llm.openai_compat import OpenAICompatClient, from_settings

__all__ = [
    "JSONRepairError",
    "LLMClient",
    "LLMError",
    "LLMResponseError",
    "LLMSchemaError",
    "LLMStats",
    "LLMUnavailableError",
    "Message",
    "OpenAICompatClient",
    "call_or_fallback",
    "extract_json",
    "from_settings",
]
