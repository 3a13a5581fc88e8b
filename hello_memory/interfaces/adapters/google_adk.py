"""Google ADK ``BaseMemoryService`` over hello-memory (extra ``hello-memory[google-adk]``).

>>> from google.adk.runners import Runner                               # doctest: +SKIP
>>> from hello_memory.interfaces.adapters.google_adk import HelloMemoryService    # doctest: +SKIP
>>> runner = Runner(agent=agent, app_name="app", session_service=sessions,  # doctest: +SKIP
...                 memory_service=HelloMemoryService(mm))

- An (app, user) pair is one namespace of ours, ``app/user`` (``root/app/user`` with
  ``root=``); a ``/`` inside either is percent-escaped.
- ``add_session_to_memory(session)`` stores each event with text as an episodic memory
  (its author, the session as ``session_id``, the event's own time); the memory id is
  derived from the event id, so adding a growing session again stores only the new
  events. ``add_events_to_memory`` does the same for a delta of events.
- ``add_memory(memories=[MemoryEntry, ...])`` stores explicit memories through
  ``MemoryManager.add_many`` (semantic unless ``custom_metadata["memory_type"]`` says
  otherwise).
- ``search_memory`` is hello-memory's one search: ``MemoryEntry`` per hit, best first,
  with the memory id, author, ISO timestamp and ``custom_metadata`` (score, memory
  type, session).
- ``delete_memory(memory_id=...)`` forgets that memory (soft: out of search; its id
  stays known, so re-adding the session does not bring it back, as in ADK's own
  in-memory service); ``restore`` brings it back.

What the interface cannot carry: function calls, images and other non-text parts of
an event are not stored (only its text parts are).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any

from hello_memory.interfaces.adapters import missing_extra

try:  # the framework is an optional extra: a missing one names it
    from google.adk.memory.base_memory_service import BaseMemoryService, SearchMemoryResponse
    from google.adk.memory.memory_entry import MemoryEntry
    from google.genai import types
except ModuleNotFoundError as _missing:
    raise missing_extra("google-adk", _missing, __name__) from _missing

from hello_memory.interfaces.adapters._common import (
    add_keyed,
    existing,
    join_namespace,
    keyed_item,
    stable_id,
)
from hello_memory.interfaces.aio import AsyncMemoryManager
from hello_memory.memory.manager import MemoryManager
from hello_memory.types import MemoryType

if TYPE_CHECKING:
    from google.adk.events.event import Event
    from google.adk.sessions.session import Session

__all__ = ["HelloMemoryService"]


def _event_text(event: Event) -> str:
    content = event.content
    if content is None or not content.parts:
        return ""
    return "\n".join(p.text for p in content.parts if p.text and not p.thought).strip()


class HelloMemoryService(BaseMemoryService):
    """ADK's memory service backed by hello-memory (module doc)."""

    def __init__(self, manager: MemoryManager | AsyncMemoryManager, *,
                 root: str | None = None, top_k: int = 10) -> None:
        self.aio = AsyncMemoryManager.wrap(manager)
        self.manager = self.aio.manager
        self.root = root
        self.top_k = top_k

    def _ns(self, app_name: str, user_id: str) -> str:
        return join_namespace((app_name, user_id), self.root)

    def _store_events(self, ns: str, session_id: str | None, events: Sequence[Event],
                      extra: Mapping[str, object] | None = None) -> int:
        pending = [(stable_id("google-adk", ns, str(e.id)), e, _event_text(e)) for e in events]
        pending = [p for p in pending if p[2]]
        known = existing(self.manager, ns, [p[0] for p in pending])
        items = []
        for memory_id, event, text in pending:
            if memory_id in known:
                continue
            meta: dict[str, Any] = {"source": "google-adk", "author": event.author,
                                    "event_id": event.id, **dict(extra or {})}
            if event.content is not None and event.content.role:
                meta["role"] = event.content.role
            fields: dict[str, Any] = {"session_id": session_id}
            if event.timestamp:
                fields["event_time"] = datetime.fromtimestamp(event.timestamp, tz=timezone.utc)
            items.append(keyed_item(memory_id, ns, text, MemoryType.EPISODIC, meta,
                                    limits=self.manager.limits, **fields))
        add_keyed(self.manager, items)
        return len(items)

    async def add_session_to_memory(self, session: Session) -> None:
        ns = self._ns(session.app_name, session.user_id)
        await self.aio.run(self._store_events, ns, session.id, list(session.events))

    async def add_events_to_memory(self, *, app_name: str, user_id: str,
                                   events: Sequence[Event], session_id: str | None = None,
                                   custom_metadata: Mapping[str, object] | None = None) -> None:
        await self.aio.run(self._store_events, self._ns(app_name, user_id), session_id,
                           list(events), custom_metadata)

    async def add_memory(self, *, app_name: str, user_id: str, memories: Sequence[MemoryEntry],
                         custom_metadata: Mapping[str, object] | None = None) -> None:
        ns = self._ns(app_name, user_id)
        entries = []
        for entry in memories:
            text = "\n".join(p.text for p in (entry.content.parts or []) if p.text).strip()
            if not text:
                continue
            meta = {**dict(custom_metadata or {}), **entry.custom_metadata}
            mtype = str(meta.pop("memory_type", MemoryType.SEMANTIC.value))
            entries.append({"content": text, "memory_type": mtype, "namespace": ns,
                            "metadata": {"source": "google-adk", "author": entry.author,
                                         **meta}})
        if entries:
            await self.aio.add_many(entries)

    async def search_memory(self, *, app_name: str, user_id: str, query: str
                            ) -> SearchMemoryResponse:
        hits = await self.aio.search(query, top_k=self.top_k,
                                     namespace=self._ns(app_name, user_id))
        found = []
        for hit in hits:
            item = hit.item
            role = item.metadata.get("role") or ("user" if item.metadata.get("author") == "user"
                                                 else "model")
            found.append(MemoryEntry(
                id=item.id, author=item.metadata.get("author"),
                timestamp=item.event_time.isoformat(),
                content=types.Content(role=role, parts=[types.Part(text=item.content)]),
                custom_metadata={"score": hit.score, "memory_type": item.memory_type.value,
                                 "session_id": item.session_id}))
        return SearchMemoryResponse(memories=found)

    async def delete_memory(self, *, app_name: str, user_id: str,
                            memory_id: str | None = None) -> None:
        if memory_id is None:
            raise ValueError("delete_memory needs the memory_id search_memory returned")
        ns = self._ns(app_name, user_id)
        if await self.aio.run(existing, self.manager, ns, [memory_id]):
            await self.aio.forget_ids([memory_id], namespace=ns)
