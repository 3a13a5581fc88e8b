"""SQLAlchemy table definitions of the record store (schema version 7).

The record store is the source of truth: Qdrant and the graph are derived from it.
All times are stored as timezone-aware UTC. The SQLite graph backend keeps its
tables (entities, relations, mentions) in this same database.
"""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any

from sqlalchemy import (
    JSON,
    BigInteger,
    CheckConstraint,
    DateTime,
    Float,
    ForeignKey,
    Index,
    Integer,
    String,
    Text,
    TypeDecorator,
    UniqueConstraint,
)
from sqlalchemy.engine import Dialect
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

from hello_memory.text.facts import FACT_KEY_CHARS

SCHEMA_VERSION = 9

# Longest topic key kept in ``hm_memory_items.topic`` (the index column); longer keys are
# stored cut and matched exactly on the rows read back (see MemoryRepository.recent_by_topic).
TOPIC_CHARS = 255

ID = String(36)

# SQLite's INTEGER holds 64 bits, PostgreSQL's 32. Counters and sequence keys that a
# long-lived store can take past 2**31 are BIGINT on PostgreSQL (and stay INTEGER in
# SQLite, where an INTEGER PRIMARY KEY is the rowid).
BigInt = BigInteger().with_variant(Integer(), "sqlite")


class UTCDateTime(TypeDecorator[datetime]):
    """Stores aware datetimes as UTC; returns aware UTC datetimes on every backend
    (SQLite drops the offset, so it is re-attached on the way out)."""

    impl = DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        if value.tzinfo is None:
            raise ValueError("naive datetime given to the record store; pass an aware datetime")
        return value.astimezone(timezone.utc)

    def process_result_value(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        if value.tzinfo is None:
            return value.replace(tzinfo=timezone.utc)
        return value.astimezone(timezone.utc)


class Base(DeclarativeBase):
    type_annotation_map = {dict[str, Any]: JSON, datetime: UTCDateTime}


class SchemaMeta(Base):
    __tablename__ = "hm_schema_meta"
    key: Mapped[str] = mapped_column(String(64), primary_key=True)
    value: Mapped[str] = mapped_column(String(256))


class MemoryRow(Base):
    __tablename__ = "hm_memory_items"
    __table_args__ = (
        CheckConstraint("importance >= 0 AND importance <= 1", name="ck_importance_range"),
        Index("ix_items_ns_type_status", "namespace", "memory_type", "status"),
        Index("ix_items_ns_session", "namespace", "session_id"),
        Index("ix_items_ns_user", "namespace", "user_id"),
        Index("ix_items_ns_event_time", "namespace", "event_time"),
        Index("ix_items_ns_hash", "namespace", "content_hash"),
        # Schema v4: a topic's newest memories, and a type's most important ones, are
        # read with LIMIT straight off these indexes (bounded by the limit, not by N).
        Index("ix_items_ns_topic", "namespace", "topic", "status", "event_time"),
        Index("ix_items_ns_type_importance", "namespace", "memory_type", "status",
              "importance", "event_time"),
        # Schema v5: the memories stating one fact (memory/supersede.py). valid_to has
        # no index of its own: nearly every row is NULL there (still true), and such an
        # index only leads SQLite's planner to read a whole namespace through it.
        # Schema v8 (issue 27): one fact's chain in start order, and by the end of its
        # validity, so the window an add reads around its start is found without
        # reading the whole chain (MemoryQueries.same_fact).
        Index("ix_items_ns_fact_key", "namespace", "fact_key", "status", "valid_from",
              "recorded_time"),
        Index("ix_items_ns_fact_valid_to", "namespace", "fact_key", "status", "valid_to"),
        # Schema v7 (issue 28): one current memory per (namespace, dedup key), so
        # identical adds that race store one memory (memory/dedup.py). NULLs are
        # distinct on SQLite and PostgreSQL: memories that hold no key never collide.
        Index("ux_items_ns_dedup_key", "namespace", "dedup_key", unique=True),
    )

    id: Mapped[str] = mapped_column(ID, primary_key=True)
    namespace: Mapped[str] = mapped_column(String(255))
    user_id: Mapped[str | None] = mapped_column(String(255))
    agent_id: Mapped[str | None] = mapped_column(String(255))
    session_id: Mapped[str | None] = mapped_column(String(255))
    memory_type: Mapped[str] = mapped_column(String(16))
    modality: Mapped[str] = mapped_column(String(16), default="text")
    content: Mapped[str] = mapped_column(Text)
    content_hash: Mapped[str | None] = mapped_column(String(64))  # added in schema v2
    event_time: Mapped[datetime] = mapped_column(UTCDateTime)
    recorded_time: Mapped[datetime] = mapped_column(UTCDateTime)
    importance: Mapped[float] = mapped_column(Float, default=0.5)
    access_count: Mapped[int] = mapped_column(BigInt, default=0)
    last_access: Mapped[datetime | None] = mapped_column(UTCDateTime)
    status: Mapped[str] = mapped_column(String(16), default="active")
    metadata_: Mapped[dict[str, Any]] = mapped_column("metadata", JSON, default=dict)
    # Added in schema v4, both derived from the fields above on every write:
    # ``topic`` = the progressive loader's topic key (metadata["topic"], else
    # session_id, else the id), cut to TOPIC_CHARS; ``tokens`` = the content's token
    # count by the default token counter.
    topic: Mapped[str | None] = mapped_column(String(TOPIC_CHARS))
    tokens: Mapped[int] = mapped_column(Integer, default=0)
    # Added in schema v5 (issue 15): when the memory's fact holds. ``valid_from`` is
    # its event time unless given; ``valid_to`` / ``superseded_by`` are set when a
    # newer memory supersedes it (NULL: still true). Nothing is deleted by this.
    valid_from: Mapped[datetime | None] = mapped_column(UTCDateTime)
    valid_to: Mapped[datetime | None] = mapped_column(UTCDateTime)
    superseded_by: Mapped[str | None] = mapped_column(ID)
    # ``subject|attribute`` of the single-valued fact the content states, if any
    # (hello_memory/text/facts.py): the memories about the same fact, one index away.
    fact_key: Mapped[str | None] = mapped_column(String(FACT_KEY_CHARS))
    # Schema v7 (issue 28, docs/RELIABILITY.md "Concurrency"). ``version`` starts at 1
    # and every update of the row adds 1 in the same statement that checks it
    # (compare-and-swap): a read-modify-write job (consolidate, forget, restore) that
    # read version n changes or deletes the row only while it is still n, so an update
    # acknowledged in between is never overwritten or deleted unseen. Access counts are
    # bookkeeping and do not bump it. ``dedup_key`` (memory/dedup.py ``dedup_key``:
    # type, user and content hash) is set by the idempotent add and cleared when the
    # memory stops being a current active memory of that content; NULL otherwise.
    version: Mapped[int] = mapped_column(Integer, default=1, server_default="1")
    dedup_key: Mapped[str | None] = mapped_column(String(64))


# Longest time expression kept in ``hm_memory_times.expression`` (longer ones cut).
EXPRESSION_CHARS = 255


class MemoryTimeRow(Base):
    """Schema v5 (issue 15, times from the text): the time ranges a memory's content
    mentions ("on 2026-12-18", "yesterday", "上周"), resolved against its event time
    by hello_memory/text/timeparse.py, half-open ``[start_time, end_time)``. Derived
    from the memory row and written, rewritten and deleted with it in the same
    transaction (MemoryRepository.add_items / update_item / delete_items); the symbolic
    time view reads it (hello_memory/retrieval/views.py)."""

    __tablename__ = "hm_memory_times"
    __table_args__ = (
        Index("ix_memory_times_ns_start", "namespace", "start_time", "end_time"),
        Index("ix_memory_times_memory", "memory_id"),
    )

    id: Mapped[int] = mapped_column(BigInt, primary_key=True, autoincrement=True)
    memory_id: Mapped[str] = mapped_column(
        ID, ForeignKey("hm_memory_items.id", ondelete="CASCADE"))
    namespace: Mapped[str] = mapped_column(String(255))
    start_time: Mapped[datetime] = mapped_column(UTCDateTime)
    end_time: Mapped[datetime] = mapped_column(UTCDateTime)
    granularity: Mapped[str] = mapped_column(String(16))
    expression: Mapped[str] = mapped_column(String(EXPRESSION_CHARS))


class NamespaceTotalsRow(Base):
    """Schema v4: the active memories of a namespace and their token total, kept in
    step with ``hm_memory_items`` in the same transaction as every write to it.
    Schema v9: ``generation``, moved on by every write to the namespace's memories
    (adds, updates, deletes; not the access bookkeeping), in that same transaction:
    what a process derives from the records may be kept while it holds, whichever
    process wrote them (MemoryRepository.generation; docs/PERFORMANCE.md, "Search
    on PostgreSQL"). A row made anew (a namespace's first write, or its
    first after a purge) starts at a random value, so a value seen before a purge is
    not seen again after it."""

    __tablename__ = "hm_namespace_totals"

    namespace: Mapped[str] = mapped_column(String(255), primary_key=True)
    items: Mapped[int] = mapped_column(BigInt, default=0)
    tokens: Mapped[int] = mapped_column(BigInt, default=0)
    generation: Mapped[int] = mapped_column(BigInt, default=0, server_default="0")


class EntityRow(Base):
    __tablename__ = "hm_entities"
    __table_args__ = (Index("ix_entities_ns_norm", "namespace", "normalized_name"),)

    id: Mapped[str] = mapped_column(ID, primary_key=True)
    namespace: Mapped[str] = mapped_column(String(255))
    name: Mapped[str] = mapped_column(Text)
    normalized_name: Mapped[str] = mapped_column(Text)
    type: Mapped[str] = mapped_column(String(64))
    properties: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)


class RelationRow(Base):
    __tablename__ = "hm_relations"
    __table_args__ = (
        Index("ix_relations_source", "source_id"),
        Index("ix_relations_target", "target_id"),
        Index("ix_relations_ns", "namespace"),
    )

    id: Mapped[str] = mapped_column(ID, primary_key=True)
    namespace: Mapped[str] = mapped_column(String(255))
    source_id: Mapped[str] = mapped_column(ID, ForeignKey("hm_entities.id", ondelete="CASCADE"))
    target_id: Mapped[str] = mapped_column(ID, ForeignKey("hm_entities.id", ondelete="CASCADE"))
    type: Mapped[str] = mapped_column(String(128))
    weight: Mapped[float] = mapped_column(Float, default=1.0)
    properties: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)


class EntityMentionRow(Base):
    """Many-to-many link: which memories mention which entity."""

    __tablename__ = "hm_entity_mentions"
    __table_args__ = (Index("ix_entity_mentions_memory", "namespace", "memory_id"),)

    entity_id: Mapped[str] = mapped_column(
        ID, ForeignKey("hm_entities.id", ondelete="CASCADE"), primary_key=True
    )
    memory_id: Mapped[str] = mapped_column(ID, primary_key=True)
    namespace: Mapped[str] = mapped_column(String(255))


class RelationMentionRow(Base):
    """Many-to-many link: which memories state which relation."""

    __tablename__ = "hm_relation_mentions"
    __table_args__ = (Index("ix_relation_mentions_memory", "namespace", "memory_id"),)

    relation_id: Mapped[str] = mapped_column(
        ID, ForeignKey("hm_relations.id", ondelete="CASCADE"), primary_key=True
    )
    memory_id: Mapped[str] = mapped_column(ID, primary_key=True)
    namespace: Mapped[str] = mapped_column(String(255))


class DocumentRow(Base):
    __tablename__ = "hm_documents"
    __table_args__ = (UniqueConstraint("namespace", "source_path", name="uq_documents_source"),)

    id: Mapped[str] = mapped_column(ID, primary_key=True)
    namespace: Mapped[str] = mapped_column(String(255))
    source_path: Mapped[str] = mapped_column(Text)
    title: Mapped[str | None] = mapped_column(Text)
    content_hash: Mapped[str] = mapped_column(String(64))
    modified_time: Mapped[datetime | None] = mapped_column(UTCDateTime)
    language: Mapped[str | None] = mapped_column(String(16))
    ingested_at: Mapped[datetime] = mapped_column(UTCDateTime)
    metadata_: Mapped[dict[str, Any]] = mapped_column("metadata", JSON, default=dict)


class ChunkRow(Base):
    __tablename__ = "hm_chunks"
    __table_args__ = (
        Index("ix_chunks_document", "document_id", "ordinal"),
        Index("ix_chunks_ns", "namespace"),
    )

    id: Mapped[str] = mapped_column(ID, primary_key=True)
    document_id: Mapped[str] = mapped_column(
        ID, ForeignKey("hm_documents.id", ondelete="CASCADE")
    )
    namespace: Mapped[str] = mapped_column(String(255))
    ordinal: Mapped[int] = mapped_column(Integer)
    content: Mapped[str] = mapped_column(Text)
    content_hash: Mapped[str] = mapped_column(String(64))
    heading_path: Mapped[str] = mapped_column(Text, default="")
    start_offset: Mapped[int] = mapped_column(Integer)
    end_offset: Mapped[int] = mapped_column(Integer)
    token_count: Mapped[int] = mapped_column(Integer)
    language: Mapped[str | None] = mapped_column(String(16))
    metadata_: Mapped[dict[str, Any]] = mapped_column("metadata", JSON, default=dict)


class OutboxRow(Base):
    """The one outbox (schema v6, issue 16): index work committed with its record, one
    row per indexed thing a write touched, keyed by ``kind`` ("memory": the memories
    collection and the graph; "media": the perceptual collections; "chunk": the
    document chunk collection) and the thing's stable UUID ``item_id``. Applied by
    hello_memory/stores/indexing.py; rows left pending after a crash are replayed at
    open and by ``reconcile`` (ARCHITECTURE decision 1)."""

    __tablename__ = "hm_outbox"
    __table_args__ = (Index("ix_outbox_pending", "applied_at", "seq"),
                      Index("ix_outbox_item", "namespace", "item_id"))

    seq: Mapped[int] = mapped_column(BigInt, primary_key=True, autoincrement=True)
    kind: Mapped[str] = mapped_column(String(16), default="memory")
    op: Mapped[str] = mapped_column(String(32))  # add | upsert | payload | delete
    namespace: Mapped[str] = mapped_column(String(255))
    item_id: Mapped[str] = mapped_column(ID)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime)
    applied_at: Mapped[datetime | None] = mapped_column(UTCDateTime)


class AuditRow(Base):
    __tablename__ = "hm_audit_log"
    __table_args__ = (Index("ix_audit_ns_at", "namespace", "at"),)

    id: Mapped[int] = mapped_column(BigInt, primary_key=True, autoincrement=True)
    at: Mapped[datetime] = mapped_column(UTCDateTime)
    namespace: Mapped[str] = mapped_column(String(255))
    action: Mapped[str] = mapped_column(String(64))
    details: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
