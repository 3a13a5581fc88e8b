"""The LLM port: an optional chat model behind two calls (decision 4: every caller
has a rule-based fallback).

Backend: ``OpenAICompatClient`` (``llm/openai_compat.py``, any OpenAI-compatible
endpoint). Callers: the planner and reflection of the search, extraction, supersede,
MQE / HyDE and RAG answers, all through ``llm.base.call_or_fallback``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal, Protocol, TypedDict, TypeVar, runtime_checkable

from pydantic import BaseModel

ModelT = TypeVar("ModelT", bound=BaseModel)


class ChatMessage(TypedDict):
    """One chat message in the OpenAI schema (the shape of ``llm.base.Message``)."""

    role: Literal["system", "user", "assistant"]
    content: str


class UsageCounters(Protocol):
    """What a caller does with a client's counters (``llm.base.LLMStats`` is one)."""

    def add(self, **deltas: float) -> None:
        """Add to the named counters (``fallbacks=1``, ...)."""
        ...

    def snapshot(self) -> dict[str, float]:
        """A copy of every counter."""
        ...


@runtime_checkable
class LLMPort(Protocol):
    """What the services call on a chat model. Implementations raise only
    ``llm.base.LLMError`` subclasses for endpoint and answer problems."""

    @property
    def stats(self) -> UsageCounters:
        """Usage counters (calls, tokens, fallbacks) of this client."""
        ...

    def complete(self, messages: Sequence[ChatMessage], *, temperature: float = 0.0,
                 max_tokens: int | None = None) -> str:
        """The assistant's answer text to ``messages``."""
        ...

    def complete_json(self, messages: Sequence[ChatMessage], schema: type[ModelT], *,
                      temperature: float = 0.0, max_tokens: int | None = None) -> ModelT:
        """The answer parsed and validated as ``schema``."""
        ...
