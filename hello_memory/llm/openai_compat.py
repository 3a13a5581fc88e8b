"""A synchronous client for OpenAI-compatible ``/chat/completions`` endpoints.

Only standard request fields are sent, so the same client works with OpenAI,
DeepSeek, Qwen/DashScope compatible mode, Ollama and vLLM. Transient failures
(connect errors, timeouts, 429, 5xx) are retried with exponential backoff; every
failure surfaces as an :class:`~hello_memory.llm.base.LLMError` whose text never
contains the API key.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Mapping, Sequence
from types import TracebackType
from typing import Any

from hello_memory.config import LLMSettings
from hello_memory.errors import ConfigError
from hello_memory.llm.base import (
    LLMError,
    LLMResponseError,
    LLMSchemaError,
    LLMStats,
    LLMUnavailableError,
    Message,
    ModelT,
)
from hello_memory.llm.json_repair import (
    json_request,
    repair_request,
    strip_think,
    validate_answer,
    wants_json_object,
)

try:  # httpx ships with qdrant-client, but only the `llm` extra promises it
    import httpx
except ImportError as exc:  # pragma: no cover - exercised only without httpx
    _HTTPX_MISSING: ImportError | None = exc
else:
    _HTTPX_MISSING = None

__all__ = ["MAX_RETRY_AFTER_S", "OpenAICompatClient", "from_settings"]

logger = logging.getLogger(__name__)

# A server asking for minutes of patience is better answered by the caller's
# fallback than by blocking an agent turn.
MAX_RETRY_AFTER_S = 30.0
_BODY_SNIPPET = 500  # characters of an error body kept in exceptions


class OpenAICompatClient:
    """:class:`~hello_memory.llm.base.LLMClient` over an OpenAI-compatible HTTP API.

    Args:
        base_url: API root such as ``http://localhost:11434/v1`` (trailing slash ok).
        model: model name sent with each request.
        api_key: sent as ``Authorization: Bearer ...``; never logged or shown.
        timeout: seconds per network operation (connect, each read, write).
        max_retries: re-sends after a transient failure (0 disables retries).
        backoff: first retry delay in seconds, doubled on each further retry.
        extra_headers: added to every request (e.g. an organisation header).
        json_mode: send ``response_format={"type": "json_object"}`` in
            :meth:`complete_json`; switched off for good when the server rejects it.

    Constructing the client does no I/O; call :meth:`close` (or use ``with``).
    """

    def __init__(
        self,
        base_url: str,
        model: str,
        *,
        api_key: str | None = None,
        timeout: float = 30.0,
        max_retries: int = 2,
        backoff: float = 0.5,
        extra_headers: Mapping[str, str] | None = None,
        json_mode: bool = True,
    ) -> None:
        if _HTTPX_MISSING is not None:  # pragma: no cover
            raise ConfigError("OpenAICompatClient needs httpx: pip install 'hello-memory[llm]'")
        if not base_url.startswith(("http://", "https://")):
            raise ConfigError(f"LLM base_url must start with http:// or https://, got {base_url!r}")
        if not model:
            raise ConfigError("LLM model must be a non-empty model name")
        if timeout <= 0 or max_retries < 0 or backoff < 0:
            raise ConfigError("LLM timeout must be > 0, max_retries and backoff >= 0")
        self.base_url = base_url.rstrip("/")
        self.model = model
        self.max_retries = max_retries
        self.backoff = backoff
        self._url = f"{self.base_url}/chat/completions"
        self._api_key = api_key or None
        self._json_mode = json_mode
        self._json_mode_lock = threading.Lock()
        self._stats = LLMStats()
        headers = dict(extra_headers or {})
        if self._api_key:
            headers["Authorization"] = f"Bearer {self._api_key}"
        # trust_env stays on so HTTPS_PROXY / NO_PROXY work as users expect.
        self._client = httpx.Client(headers=headers, timeout=httpx.Timeout(timeout))

    def __repr__(self) -> str:  # no api key, ever
        return f"OpenAICompatClient(base_url={self.base_url!r}, model={self.model!r})"

    @property
    def stats(self) -> LLMStats:
        return self._stats

    @property
    def json_mode(self) -> bool:
        """Whether ``response_format`` is still sent (False after a server refused it)."""
        return self._json_mode

    # --- public API ------------------------------------------------------------------
    def complete(
        self,
        messages: Sequence[Message],
        *,
        temperature: float = 0.0,
        max_tokens: int | None = None,
    ) -> str:
        """The assistant's answer; a leading ``<think>`` block (reasoning models) is
        dropped so it never ends up in stored memories."""
        started = time.perf_counter()
        self._stats.add(calls=1)
        try:
            return strip_think(self._chat(messages, temperature, max_tokens, want_json=False))
        except LLMError:
            self._stats.add(failures=1)
            raise
        finally:
            self._stats.add(latency_s=time.perf_counter() - started)

    def complete_json(
        self,
        messages: Sequence[Message],
        schema: type[ModelT],
        *,
        temperature: float = 0.0,
        max_tokens: int | None = None,
    ) -> ModelT:
        """Ask for JSON matching ``schema`` and return it validated.

        Local fixes (fences, prose, trailing commas) come first; if the answer still
        does not validate, one repair request shows the model its answer and the
        validation errors.

        Raises:
            LLMSchemaError: no valid JSON after the repair round trip.
            LLMUnavailableError, LLMResponseError: as for :meth:`complete`.
        """
        started = time.perf_counter()
        self._stats.add(calls=1)
        try:
            convo = json_request(messages, schema)
            object_mode = wants_json_object(schema)
            answer = self._chat(convo, temperature, max_tokens, want_json=object_mode)
            result, error = validate_answer(answer, schema)
            if result is not None:
                return result
            logger.info("LLM JSON answer invalid for %s (%s); asking for a repair",
                        schema.__name__, error)
            self._stats.add(repairs=1)
            repair = repair_request(convo, answer, error)
            answer = self._chat(repair, temperature, max_tokens, want_json=object_mode)
            result, error = validate_answer(answer, schema)
            if result is not None:
                return result
            raise LLMSchemaError(
                f"LLM answer is not valid JSON for {schema.__name__} after one repair: {error}",
                schema=schema, answer=answer)
        except LLMError:
            self._stats.add(failures=1)
            raise
        finally:
            self._stats.add(latency_s=time.perf_counter() - started)

    def close(self) -> None:
        """Close the connection pool; the client cannot be used afterwards."""
        self._client.close()

    def __enter__(self) -> OpenAICompatClient:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    # --- one chat round trip -------------------------------------------------------------
    def _chat(
        self, messages: Sequence[Message], temperature: float, max_tokens: int | None,
        *, want_json: bool,
    ) -> str:
        body: dict[str, Any] = {"model": self.model, "messages": list(messages),
                                "temperature": temperature}
        if max_tokens is not None:
            body["max_tokens"] = max_tokens
        use_format = want_json and self._json_mode
        if use_format:
            body["response_format"] = {"type": "json_object"}
        try:
            data = self._post(body)
        except LLMResponseError as exc:
            if not (use_format and exc.status_code in (400, 422)
                    and "response_format" in exc.body.lower()):
                raise
            # Older vLLM/Ollama builds and some providers refuse json_object; the
            # system hint alone still asks for JSON, and the parser copes with prose.
            with self._json_mode_lock:
                self._json_mode = False
            logger.info("LLM server %s rejected response_format; sending without it",
                        self.base_url)
            del body["response_format"]
            data = self._post(body)
        return self._content(data)

    def _post(self, body: dict[str, Any]) -> dict[str, Any]:
        """POST with retries; returns the decoded JSON envelope."""
        attempt = 0
        while True:
            self._stats.add(requests=1)
            retry_after: float | None = None
            cause: Exception | None = None
            try:
                response = self._client.post(self._url, json=body)
            except httpx.TransportError as exc:
                kind = "timed out" if isinstance(exc, httpx.TimeoutException) else "failed"
                failure: Exception = LLMUnavailableError(self._redact(
                    f"LLM request to {self._url} {kind} after {attempt + 1} attempt(s): "
                    f"{type(exc).__name__}: {exc}"))
                cause = exc
            else:
                status = response.status_code
                if 200 <= status < 300:
                    return self._envelope(response)
                failure = self._status_error(response, attempt)
                if status != 429 and status < 500:
                    # 4xx: the request itself is wrong, re-sending cannot help; 3xx:
                    # redirects are not followed (a POST body must not be replayed
                    # blindly), so the base_url needs fixing.
                    raise failure
                retry_after = self._retry_after(response)
            if attempt >= self.max_retries:
                raise failure from cause
            delay = retry_after if retry_after is not None else self.backoff * 2**attempt
            logger.info("LLM request failed (%s); retry %d/%d in %.2fs",
                        failure, attempt + 1, self.max_retries, delay)
            self._stats.add(retries=1)
            attempt += 1
            if delay > 0:
                time.sleep(delay)

    # --- helpers -----------------------------------------------------------------------
    def _redact(self, text: str) -> str:
        # Error bodies may echo the key back (some gateways do); scrub it everywhere.
        return text.replace(self._api_key, "***") if self._api_key else text

    def _status_error(self, response: httpx.Response, attempt: int) -> LLMResponseError:
        snippet = self._redact(response.text[:_BODY_SNIPPET])
        return LLMResponseError(
            f"LLM server {self.base_url} answered HTTP {response.status_code} "
            f"after {attempt + 1} attempt(s): {snippet}",
            status_code=response.status_code, body=snippet)

    @staticmethod
    def _retry_after(response: httpx.Response) -> float | None:
        """``Retry-After`` in seconds, capped; None when absent or an HTTP date."""
        raw = response.headers.get("retry-after")
        if raw is None:
            return None
        try:
            seconds = float(raw)
        except ValueError:
            return None
        return min(max(seconds, 0.0), MAX_RETRY_AFTER_S)

    def _envelope(self, response: httpx.Response) -> dict[str, Any]:
        try:
            data = response.json()
        except ValueError as exc:
            raise self._malformed(response, "body is not JSON") from exc
        if not isinstance(data, dict):
            raise self._malformed(response, "body is not a JSON object")
        usage = data.get("usage")
        if isinstance(usage, dict):
            tokens = {k: v for k in ("prompt_tokens", "completion_tokens")
                      if isinstance(v := usage.get(k), int)}
            self._stats.add(**tokens)
        return data

    def _content(self, data: dict[str, Any]) -> str:
        try:
            content = data["choices"][0]["message"]["content"]
        except (KeyError, IndexError, TypeError):
            content = None
        if not isinstance(content, str):
            snippet = self._redact(json.dumps(data)[:_BODY_SNIPPET])
            raise LLMResponseError(
                f"LLM server {self.base_url} sent no choices[0].message.content: {snippet}",
                body=snippet)
        return content

    def _malformed(self, response: httpx.Response, why: str) -> LLMResponseError:
        snippet = self._redact(response.text[:_BODY_SNIPPET])
        return LLMResponseError(f"LLM server {self.base_url} sent a malformed answer ({why}): "
                                f"{snippet}", status_code=response.status_code, body=snippet)


def from_settings(settings: LLMSettings) -> OpenAICompatClient | None:
    """The client the ``llm`` settings describe, or None for ``provider: none``.

    Raises:
        ConfigError: provider ``openai`` without ``base_url`` or ``model``.
    """
    if settings.provider == "none":
        return None
    base_url, model = settings.base_url, settings.model
    if not base_url or not model:
        missing = [k for k, v in (("base_url", base_url), ("model", model)) if not v]
        names = " and ".join(f"llm.{k} (HELLO_MEMORY__LLM__{k.upper()})" for k in missing)
        raise ConfigError(f"llm.provider is 'openai' but {names} is not set")
    return OpenAICompatClient(base_url, model, api_key=settings.api_key,
                              timeout=settings.timeout, max_retries=settings.max_retries)
