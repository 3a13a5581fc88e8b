"""Deterministic clean-up of JSON answers from chat models.

Models asked for JSON often wrap it: a ```json fence, a sentence of prose before or
after, a ``<think>`` block from reasoning models, a trailing comma. Each fix here is
cheap and local, so :meth:`~hello_memory.llm.openai_compat.OpenAICompatClient.complete_json`
only spends a repair round trip on the model when these fail. Nothing here guesses
at content (no quote fixing, no truncation completion): a wrong guess would pass
validation with data the model never said.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Sequence
from functools import lru_cache
from typing import Any

from pydantic import BaseModel, ValidationError

from hello_memory.llm.base import LLMError, Message, ModelT

__all__ = [
    "JSONRepairError",
    "extract_json",
    "iter_json_candidates",
    "json_request",
    "remove_trailing_commas",
    "repair_request",
    "strip_think",
    "validate_answer",
    "wants_json_object",
]

# Reasoning models (DeepSeek-R1, Qwen3 via Ollama/vLLM) put their chain of thought
# in the content itself; it may contain braces that look like JSON.
_THINK_RE = re.compile(r"^\s*<think>.*?</think>\s*", re.DOTALL | re.IGNORECASE)
_FENCE_RE = re.compile(r"```[ \t]*(?:json[c5]?|javascript|js)?[ \t]*\r?\n?(.*?)```",
                       re.DOTALL | re.IGNORECASE)
_CLOSERS = {"{": "}", "[": "]"}
# Bound the work on long prose full of brackets: each start costs a linear scan.
_MAX_STARTS = 32
_ERROR_CHARS = 1500  # characters of validation errors sent back to the model


class JSONRepairError(LLMError, ValueError):
    """No JSON value could be recovered from the text.

    An :class:`LLMError`, so a caller parsing :meth:`complete` output with
    :func:`extract_json` inside :func:`call_or_fallback` degrades like any LLM failure.
    """


def strip_think(text: str) -> str:
    """Drop one leading ``<think>...</think>`` block, if any."""
    return _THINK_RE.sub("", text, count=1)


def remove_trailing_commas(text: str) -> str:
    """Remove commas directly before ``}`` or ``]``, leaving string contents intact."""
    out: list[str] = []
    in_string = escaped = False
    pending_comma: int | None = None  # index in `out` of a comma that may be trailing
    for ch in text:
        if in_string:
            out.append(ch)
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
            continue
        if ch in "}]" and pending_comma is not None:
            del out[pending_comma]
            pending_comma = None
        elif ch == ",":
            pending_comma = len(out)
        elif not ch.isspace():
            pending_comma = None
        if ch == '"':
            in_string = True
        out.append(ch)
    return "".join(out)


def _balanced_end(text: str, start: int) -> int | None:
    """Index just past the bracket closing ``text[start]``, or None when unbalanced."""
    stack: list[str] = []
    in_string = escaped = False
    for i in range(start, len(text)):
        ch = text[i]
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
        elif ch == '"':
            in_string = True
        elif ch in _CLOSERS:
            stack.append(_CLOSERS[ch])
        elif ch in "}]":
            if not stack or stack.pop() != ch:
                return None
            if not stack:
                return i + 1
    return None


def _loads(snippet: str) -> tuple[bool, Any]:
    """Parse ``snippet`` as is, then with trailing commas removed."""
    for attempt in (snippet, remove_trailing_commas(snippet)):
        try:
            return True, json.loads(attempt)
        except json.JSONDecodeError:
            continue
    return False, None


def _scan(text: str) -> Iterator[Any]:
    """Every balanced ``{...}``/``[...]`` in ``text`` that parses, in order of start.

    A value nested in one already yielded is skipped: ``{"a": [1]}`` yields the
    object, not also ``[1]``.
    """
    consumed_until = 0
    starts = 0
    for match in re.finditer(r"[\[{]", text):
        start = match.start()
        if start < consumed_until:
            continue
        starts += 1
        if starts > _MAX_STARTS:
            return
        end = _balanced_end(text, start)
        if end is None:
            continue
        ok, value = _loads(text[start:end])
        if ok:
            consumed_until = end
            yield value


def iter_json_candidates(text: str) -> Iterator[Any]:
    """JSON values found in a model answer, most likely first.

    Order: the whole answer (after dropping a leading ``<think>`` block); the
    contents of each code fence; then each bracketed value in the prose. Callers
    validate against their schema and take the first that fits, so an incidental
    ``[1]`` in a leading sentence does not hide the real object after it.
    """
    body = strip_think(text).strip()
    if not body:
        return
    ok, value = _loads(body)
    if ok:
        yield value
        return
    for fenced in _FENCE_RE.findall(body):
        ok, value = _loads(fenced.strip())
        if ok:
            yield value
        else:
            yield from _scan(fenced)
    yield from _scan(body)


def extract_json(text: str) -> Any:
    """The first JSON value in ``text`` (see :func:`iter_json_candidates`).

    Raises:
        JSONRepairError: the text holds no parseable JSON object or array.
    """
    for value in iter_json_candidates(text):
        return value
    raise JSONRepairError("no JSON object or array found in the answer")


# --- schema-guided requests (shared by every LLMClient implementation) ----------------
@lru_cache(maxsize=128)
def _schema_json(schema: type[BaseModel]) -> str:
    return json.dumps(schema.model_json_schema(), separators=(",", ":"), ensure_ascii=False)


def wants_json_object(schema: type[BaseModel]) -> bool:
    """Whether the schema's JSON is an object, so ``json_object`` mode may be asked for
    (a ``RootModel[list[...]]`` answers with an array, which that mode forbids)."""
    return json.loads(_schema_json(schema)).get("type", "object") == "object"


def json_request(messages: Sequence[Message], schema: type[BaseModel]) -> list[Message]:
    """``messages`` with a compact system hint asking for JSON matching ``schema``."""
    hint = ("Reply with JSON only: one value matching this JSON schema, without prose or "
            f"code fences.\nJSON schema: {_schema_json(schema)}")
    # Merge into an existing leading system message: several chat templates (Mistral,
    # Gemma) reject a second system message or one that is not first.
    out = list(messages)
    if out and out[0]["role"] == "system":
        out[0] = {"role": "system", "content": f"{out[0]['content']}\n\n{hint}"}
    else:
        out.insert(0, {"role": "system", "content": hint})
    return out


def repair_request(convo: Sequence[Message], answer: str, error: str) -> list[Message]:
    """The conversation followed by the bad answer and a request to correct it."""
    return [
        *convo,
        {"role": "assistant", "content": answer},
        {"role": "user", "content": f"Your answer is not valid for the schema: {error}\n"
                                    "Reply with the corrected JSON only."},
    ]


def _summary(exc: ValidationError) -> str:
    # Compact "loc: msg" lines; pydantic's str() adds inputs and URLs the model
    # does not need.
    lines = [f"{'.'.join(str(p) for p in e['loc']) or '(root)'}: {e['msg']}"
             for e in exc.errors(include_url=False)]
    return "; ".join(lines)[:_ERROR_CHARS]


def validate_answer(answer: str, schema: type[ModelT]) -> tuple[ModelT | None, str]:
    """The first JSON value in ``answer`` that validates as ``schema``, with ``""``;
    or None and the reason (the first candidate's validation errors)."""
    first_error = ""
    for value in iter_json_candidates(answer):
        try:
            return schema.model_validate(value), ""
        except ValidationError as exc:
            first_error = first_error or _summary(exc)
    return None, first_error or "the answer holds no JSON object or array"
