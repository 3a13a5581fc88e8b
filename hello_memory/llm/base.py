"""The ``LLMClient`` protocol, its errors, usage statistics and the fallback helper.

The LLM is optional everywhere (ARCHITECTURE decision 4): callers hold an
``LLMClient | None`` and go through :func:`call_or_fallback`, so a missing endpoint
and a failing one both end on the same deterministic path.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, fields
from typing import Literal, Protocol, TypedDict, TypeVar

from pydantic import BaseModel

from hello_memory.errors import BackendUnavailableError, HelloMemoryError

__all__ = [
    "LLMClient",
    "LLMError",
    "LLMResponseError",
    "LLMSchemaError",
    "LLMStats",
    "LLMUnavailableError",
    "Message",
    "ModelT",
    "call_or_fallback",
]

logger = logging.getLogger(__name__)

T = TypeVar("T")
ModelT = TypeVar("ModelT", bound=BaseModel)


# --- errors --------------------------------------------------------------------------
# Kept here rather than in hello_memory.errors so that module stays free of LLM
# concerns; all four still derive from HelloMemoryError.
class LLMError(HelloMemoryError):
    """Root of every LLM failure; :func:`call_or_fallback` turns these into fallbacks."""


class LLMUnavailableError(LLMError, BackendUnavailableError):
    """The endpoint could not be reached or timed out, after all retries."""


class LLMResponseError(LLMError):
    """The endpoint answered with an error status or a malformed envelope.

    ``status_code`` is the HTTP status (None for a malformed 2xx body); ``body`` is
    the start of the response text, with the API key redacted.
    """

    def __init__(self, message: str, *, status_code: int | None = None, body: str = "") -> None:
        self.status_code = status_code
        self.body = body
        super().__init__(message)


class LLMSchemaError(LLMError):
    """The answer was not valid JSON for the requested schema, even after one repair.

    ``answer`` is the model's last answer; ``schema`` the requested model class.
    """

    def __init__(self, message: str, *, schema: type[BaseModel], answer: str) -> None:
        self.schema = schema
        self.answer = answer
        super().__init__(message)


# --- messages and stats ----------------------------------------------------------------
class Message(TypedDict):
    """One chat message in the OpenAI schema."""

    role: Literal["system", "user", "assistant"]
    content: str


@dataclass
class LLMStats:
    """Counters of one client, safe to update from several threads.

    Attributes:
        calls: public calls (``complete`` / ``complete_json``).
        failures: public calls that raised an :class:`LLMError`.
        requests: HTTP requests sent, retries and repair round trips included.
        retries: requests re-sent after a timeout, connection error, 429 or 5xx.
        repairs: JSON repair round trips (a second request asking to fix the JSON).
        fallbacks: times :func:`call_or_fallback` used the fallback after an error.
        latency_s: total wall time spent inside public calls.
        prompt_tokens / completion_tokens: summed from ``usage`` when reported.
    """

    calls: int = 0
    failures: int = 0
    requests: int = 0
    retries: int = 0
    repairs: int = 0
    fallbacks: int = 0
    latency_s: float = 0.0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    def add(self, **deltas: float) -> None:
        """Add ``deltas`` to the named counters atomically, e.g. ``add(calls=1)``."""
        with self._lock:
            for name, delta in deltas.items():
                if name.startswith("_") or not hasattr(self, name):
                    raise AttributeError(f"LLMStats has no counter {name!r}")
                setattr(self, name, getattr(self, name) + delta)

    def snapshot(self) -> dict[str, float]:
        """A consistent copy of every counter (for logs, metrics, the CLI)."""
        with self._lock:
            return {f.name: getattr(self, f.name) for f in fields(self) if f.name != "_lock"}


# --- protocol ------------------------------------------------------------------------
class LLMClient(Protocol):
    """A chat model behind a small synchronous interface.

    Implementations raise only :class:`LLMError` subclasses for endpoint and answer
    problems, so callers can degrade with :func:`call_or_fallback`.
    """

    @property
    def stats(self) -> LLMStats:
        """Usage counters of this client."""

    def complete(
        self,
        messages: Sequence[Message],
        *,
        temperature: float = 0.0,
        max_tokens: int | None = None,
    ) -> str:
        """The assistant's answer text to ``messages``."""

    def complete_json(
        self,
        messages: Sequence[Message],
        schema: type[ModelT],
        *,
        temperature: float = 0.0,
        max_tokens: int | None = None,
    ) -> ModelT:
        """The answer parsed and validated as ``schema``; raises LLMSchemaError when
        the model cannot produce valid JSON for it."""


def call_or_fallback(
    llm: LLMClient | None,
    fn: Callable[[LLMClient], T],
    fallback: Callable[[], T],
    *,
    what: str,
) -> T:
    """Run ``fn(llm)``, or ``fallback()`` when there is no LLM or it fails.

    Only :class:`LLMError` triggers the fallback: a bug in ``fn`` (a TypeError, a
    KeyError) still raises, because hiding it would make the LLM path silently dead.

    Args:
        llm: the configured client, or None when no LLM is configured.
        fn: the LLM path, given the client.
        fallback: the deterministic path.
        what: a few words naming the step (``"query planning"``), for the log line.
    """
    if llm is None:
        return fallback()
    try:
        return fn(llm)
    except LLMError as exc:
        # Error texts never hold the API key (the client redacts it), so logging
        # the exception is safe.
        logger.warning("LLM %s failed, using the deterministic fallback: %s", what, exc)
        llm.stats.add(fallbacks=1)
        return fallback()
