"""Relational record store (the source of truth)."""

from hello_memory.stores.records.models import SCHEMA_VERSION
from hello_memory.stores.records.store import ItemFilter, OutboxEntry, RecordStore

__all__ = ["SCHEMA_VERSION", "ItemFilter", "OutboxEntry", "RecordStore"]
