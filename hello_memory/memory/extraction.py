"""Lasting facts from a conversation (issue 15, part 4), so that an agent need not
prompt for ``remember`` itself.

:func:`remember_conversation` (``MemoryManager.remember_conversation``, and
``MemoryTool.record_turn`` when ``memory.extract_facts`` is on) asks the configured
LLM once for the facts worth keeping in a list of turns: preferences, people, plans,
changes ("I moved to Bergen"), each a self-contained sentence
(:class:`ExtractedFacts`, schema-validated JSON). The facts are stored with
``add_many`` (so they go through the idempotent add and the supersede step of
hello_memory/memory/supersede.py). Without an LLM, or when its answer fails or does not
validate, the deterministic fallback keeps the turns themselves (one episodic memory per
turn, ``metadata.role``): nothing said is lost (ARCHITECTURE decision 4: the LLM is
optional everywhere).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any, Literal, Protocol

from pydantic import BaseModel, ConfigDict, Field

from hello_memory.errors import InvalidInputError
from hello_memory.llm.base import LLMClient, Message, call_or_fallback
from hello_memory.types import MemoryItem, MemoryType

__all__ = ["ROLES", "ExtractedFact", "ExtractedFacts", "FactWriter", "extract_facts",
           "normalise_turns", "remember_conversation"]

log = logging.getLogger(__name__)

ROLES = ("user", "assistant", "system", "tool")
MAX_FACTS = 20


class ExtractedFact(BaseModel):
    """One lasting fact, stated so that it reads alone ("The user moved to Bergen")."""

    model_config = ConfigDict(extra="ignore")

    content: str = Field(min_length=1, max_length=2000)
    memory_type: Literal["semantic", "episodic"] = "semantic"
    importance: float | None = Field(default=None, ge=0, le=1)


class ExtractedFacts(BaseModel):
    """The LLM's answer: the facts worth keeping (an empty list: none)."""

    model_config = ConfigDict(extra="ignore")

    facts: list[ExtractedFact] = Field(default_factory=list, max_length=MAX_FACTS)


_SYSTEM = (
    "You extract long-term memories from a conversation between a user and an assistant. "
    "Keep only what stays useful later: facts about the user and the people in their life, "
    "preferences, decisions, plans with dates, and changes (moved, new job, married). "
    "Write each as one self-contained sentence in the conversation's language, naming the "
    "subject (\"The user ...\", a person's name), never 'I' or 'you'. Use memory_type "
    "'semantic' for lasting facts and preferences, 'episodic' for events. Leave out "
    "greetings, questions and small talk. Answer JSON only: "
    '{"facts": [{"content": "...", "memory_type": "semantic", "importance": 0.7}]}')


def normalise_turns(turns: Sequence[Mapping[str, Any] | tuple[str, str]]
                    ) -> list[tuple[str, str]]:
    """``[{"role": "user", "content": "..."}, ("assistant", "..."), ...]`` as
    ``(role, content)`` pairs; an unknown role or empty content is refused."""
    out: list[tuple[str, str]] = []
    for n, turn in enumerate(turns):
        if isinstance(turn, Mapping):
            role, content = turn.get("role"), turn.get("content")
        elif isinstance(turn, (tuple, list)) and len(turn) == 2:
            role, content = turn
        else:
            raise InvalidInputError(f"turn {n}: give {{'role': ..., 'content': ...}}")
        if role not in ROLES:
            raise InvalidInputError(f"turn {n}: role must be one of {', '.join(ROLES)}, "
                                    f"got {role!r}")
        if not isinstance(content, str) or not content.strip():
            raise InvalidInputError(f"turn {n}: content must be non-empty text")
        out.append((str(role), content))
    if not out:
        raise InvalidInputError("remember_conversation needs at least one turn")
    return out


def _ask(llm: LLMClient, turns: Sequence[tuple[str, str]]) -> ExtractedFacts:
    transcript = json.dumps([{"role": r, "content": c} for r, c in turns], ensure_ascii=False)
    messages: list[Message] = [{"role": "system", "content": _SYSTEM},
                               {"role": "user", "content": transcript}]
    return llm.complete_json(messages, ExtractedFacts)


class FactWriter(Protocol):
    """What extraction writes through: the configured LLM (None: keep the turns),
    ``memory.extract_facts`` and the add path. ``MemoryManager`` and the ingest service
    (services/ingest.py) are ones by their shape; this module imports neither."""

    @property
    def llm(self) -> LLMClient | None: ...

    @property
    def extract_facts(self) -> bool: ...

    def add_many(self, entries: Iterable[Mapping[str, Any]], *,
                 on_duplicate: str | None = None) -> list[MemoryItem]: ...


def extract_facts(manager: FactWriter, turns: Sequence[tuple[str, str]],
                  **common: Any) -> list[MemoryItem] | None:
    """The LLM path alone: the facts of ``turns`` stored with ``common`` fields
    (namespace, user_id, ...), or None when there is no LLM, it fails, its answer does
    not validate or the write path refuses a fact (the caller keeps the turns)."""
    llm = manager.llm
    if llm is None:
        return None

    def extracted(client: LLMClient) -> list[dict[str, Any]] | None:
        answer = _ask(client, turns)
        return [{"content": f.content.strip(), "memory_type": MemoryType(f.memory_type),
                 "importance": f.importance,
                 "metadata": {"source": "conversation"}, **common}
                for f in answer.facts if f.content.strip()]

    entries = call_or_fallback(llm, extracted, lambda: None, what="conversation extraction")
    if entries is None:
        return None
    try:
        return manager.add_many(entries) if entries else []
    except InvalidInputError as exc:  # a fact the write path refuses: keep the turns
        log.warning("extracted facts refused (%s); keeping the turns themselves", exc)
        return None


def remember_conversation(
    manager: FactWriter,
    turns: Sequence[Mapping[str, Any] | tuple[str, str]],
    *,
    namespace: str | None = None,
    user_id: str | None = None,
    agent_id: str | None = None,
    session_id: str | None = None,
    event_time: datetime | None = None,
    extract: bool | None = None,
) -> list[MemoryItem]:
    """Store what ``turns`` hold worth keeping; returns the memories stored (or found
    already stored). ``extract`` None follows ``memory.extract_facts``; with it on and
    an LLM configured, the extracted facts (``metadata.source = "conversation"``), else
    the turns themselves (episodic, ``metadata.role``)."""
    pairs = normalise_turns(turns)
    common = {"namespace": namespace, "user_id": user_id, "agent_id": agent_id,
              "session_id": session_id, "event_time": event_time}
    if manager.extract_facts if extract is None else extract:
        facts = extract_facts(manager, pairs, **common)
        if facts is not None:
            return facts
    return manager.add_many([{"content": content, "memory_type": MemoryType.EPISODIC,
                              "metadata": {"role": role}, **common} for role, content in pairs])
