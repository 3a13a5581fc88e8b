"""Relational record store (the source of truth): ``RecordStore`` and its repositories."""

from hello_memory.stores.records.audit import AuditRepository
from hello_memory.stores.records.documents import ChunkRecord, DocumentRecord, DocumentRepository
from hello_memory.stores.records.memories import (
    DuplicateKeyError,
    ItemFilter,
    MemoryRepository,
    WriteConflictError,
)
from hello_memory.stores.records.models import SCHEMA_VERSION
from hello_memory.stores.records.outbox import OutboxEntry, OutboxRepository
from hello_memory.stores.records.store import RecordStore

__all__ = ["SCHEMA_VERSION", "AuditRepository", "ChunkRecord", "DocumentRecord",
           "DocumentRepository", "DuplicateKeyError", "ItemFilter", "MemoryRepository",
           "OutboxEntry", "OutboxRepository", "RecordStore", "WriteConflictError"]
