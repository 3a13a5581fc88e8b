"""Memory rows and memory items: the conversions between a ``hm_memory_items`` row
(:class:`~hello_memory.stores.records.models.MemoryRow`) and a
:class:`~hello_memory.types.MemoryItem`, the columns a row derives from its item when
written (topic key, token count, fact key, dedup key, the ``hm_memory_times`` rows of
the times its text mentions) and the waiting accesses counted into items read (the
namespace totals every write bumps: generation.py). Helpers of
:mod:`hello_memory.stores.records.memories`, which re-exports every name defined here.
"""

from __future__ import annotations

import hashlib
import json
from datetime import datetime
from typing import Any

from hello_memory.stores.records.access import Pending
from hello_memory.stores.records.models import (
    EXPRESSION_CHARS,
    TOPIC_CHARS,
    MemoryRow,
)
from hello_memory.text.facts import fact_key
from hello_memory.text.timeparse import TimeRange, mentioned_ranges
from hello_memory.text.tokens import default_token_counter
from hello_memory.types import MemoryItem, MemoryStatus, MemoryType, Modality, copy_item


def dedup_key(item: MemoryItem) -> str:
    """The idempotent add's key of a memory within its namespace (schema v7,
    ``ux_items_ns_dedup_key``): SHA-256 of its type, its ``user_id`` and its
    ``content_hash`` (issue 28: one user's memory is never another's duplicate)."""
    assert item.content_hash is not None  # validate_item set it
    raw = json.dumps([MemoryType(item.memory_type).value, item.user_id, item.content_hash])
    return hashlib.sha256(raw.encode("utf-8", "surrogatepass")).hexdigest()


def _keeps_key(before: MemoryItem, after: MemoryItem) -> bool:
    """Whether an updated memory is still the current active memory of the same key
    (else its key is released: a forgotten, superseded or rewritten memory no longer
    stands for that content)."""
    return (after.status == MemoryStatus.ACTIVE and after.valid_to is None
            and dedup_key(before) == dedup_key(after))


def _to_item(row: MemoryRow) -> MemoryItem:
    return MemoryItem(
        id=row.id, namespace=row.namespace, content=row.content,
        memory_type=MemoryType(row.memory_type), modality=Modality(row.modality),
        user_id=row.user_id, agent_id=row.agent_id, session_id=row.session_id,
        event_time=row.event_time, recorded_time=row.recorded_time,
        importance=row.importance, access_count=row.access_count,
        last_access=row.last_access, status=MemoryStatus(row.status),
        metadata=dict(row.metadata_ or {}), content_hash=row.content_hash,
        valid_from=row.valid_from or row.event_time, valid_to=row.valid_to,
        superseded_by=row.superseded_by, version=row.version or 1,
    )


# The columns an item is built from, read as plain rows (no ORM objects): building
# ~100 ORM rows per search cost a third more than the rows themselves (issue 27).
_ITEM_COLUMNS = (MemoryRow.id, MemoryRow.namespace, MemoryRow.content, MemoryRow.memory_type,
                 MemoryRow.modality, MemoryRow.user_id, MemoryRow.agent_id,
                 MemoryRow.session_id, MemoryRow.event_time, MemoryRow.recorded_time,
                 MemoryRow.importance, MemoryRow.access_count, MemoryRow.last_access,
                 MemoryRow.status, MemoryRow.metadata_, MemoryRow.content_hash,
                 MemoryRow.valid_from, MemoryRow.valid_to, MemoryRow.superseded_by,
                 MemoryRow.version)


def _row_item(row: Any) -> MemoryItem:
    """:func:`_to_item` of a row of :data:`_ITEM_COLUMNS`."""
    (memory_id, namespace, content, memory_type, modality, user_id, agent_id, session_id,
     event_time, recorded_time, importance, access_count, last_access, status, metadata,
     content_hash, valid_from, valid_to, superseded_by, version) = row
    return MemoryItem(
        id=memory_id, namespace=namespace, content=content,
        memory_type=MemoryType(memory_type), modality=Modality(modality),
        user_id=user_id, agent_id=agent_id, session_id=session_id,
        event_time=event_time, recorded_time=recorded_time,
        importance=importance, access_count=access_count,
        last_access=last_access, status=MemoryStatus(status),
        metadata=dict(metadata or {}), content_hash=content_hash,
        valid_from=valid_from or event_time, valid_to=valid_to,
        superseded_by=superseded_by, version=version or 1,
    )


def _with_access(items: list[MemoryItem], pending: Pending, *, shared: bool = False
                 ) -> list[MemoryItem]:
    """``items`` with the accesses still waiting in the log (access.py) counted: a
    fresh item is changed in place (once, however often a list holds it), a shared one
    (item_cache.py) copied first."""
    out: list[MemoryItem] = []
    done: set[int] = set()
    for item in items:
        entry = pending.get((item.namespace, item.id))
        if entry is not None:
            if shared:
                item = copy_item(item)
            if id(item) not in done:
                done.add(id(item))
                item.access_count += entry[0]
                item.last_access = entry[1]
        out.append(item)
    return out


def topic_for(metadata: Any, session_id: str | None, memory_id: str) -> str:
    """The topic key of a memory: ``metadata["topic"]`` (on one line) when set, else
    its ``session_id``, else its own id (the progressive loader's grouping)."""
    topic = metadata.get("topic") if isinstance(metadata, dict) else None
    if topic is not None and str(topic).strip():
        return " ".join(str(topic).split())  # keys are printed in one-line index entries
    return session_id or memory_id


def item_topic(item: MemoryItem) -> str:
    return topic_for(item.metadata, item.session_id, item.id)


def count_tokens(content: str) -> int:
    """The stored ``tokens`` of a memory: the default token counter's count."""
    return default_token_counter().count(content)


# The time expressions of a memory are looked for in its first MENTION_CHARS characters
# (the parser costs about 1 ms per 600 characters; a memory is a thought, not a book).
MENTION_CHARS = 20_000


def mentioned_times(content: str, event_time: datetime) -> list[TimeRange]:
    """The time ranges ``content`` mentions, resolved against ``event_time`` by the same
    en + zh rules the retriever reads questions with (hello_memory/text/timeparse.py):
    "yesterday" in a memory of 2023-05-08 is 2023-05-07 (issue 15, times from the text);
    a date without a year points the way its wording does ("dentist on 9 December",
    said in November, is this December: ``timeparse.mentioned_ranges``, issue 26)."""
    return mentioned_ranges(content[:MENTION_CHARS], event_time)


def mention_time_rows(item: MemoryItem) -> list[dict[str, Any]]:
    return [{"memory_id": item.id, "namespace": item.namespace, "start_time": r.start,
             "end_time": r.end, "granularity": r.granularity,
             "expression": r.text[:EXPRESSION_CHARS]}
            for r in mentioned_times(item.content, item.event_time)]


def _to_row(item: MemoryItem) -> MemoryRow:
    return MemoryRow(**_row_values(item))


def _row_values(item: MemoryItem) -> dict[str, Any]:
    """The columns of ``item``'s row, by attribute name (an ORM bulk insert takes these
    as they are: no ORM object per row; issue 27)."""
    return dict(
        id=item.id, namespace=item.namespace, content=item.content,
        content_hash=item.content_hash, memory_type=item.memory_type.value,
        modality=item.modality.value, user_id=item.user_id, agent_id=item.agent_id,
        session_id=item.session_id, event_time=item.event_time,
        recorded_time=item.recorded_time, importance=item.importance,
        access_count=item.access_count, last_access=item.last_access,
        status=item.status.value, metadata_=item.metadata,
        topic=item_topic(item)[:TOPIC_CHARS], tokens=count_tokens(item.content),
        valid_from=item.valid_from or item.event_time, valid_to=item.valid_to,
        superseded_by=item.superseded_by,
        fact_key=fact_key(item.content, item.metadata, item.user_id),
    )


def _active(status: str | MemoryStatus) -> bool:
    return MemoryStatus(status) is MemoryStatus.ACTIVE
