"""What several adapters (and the chat importer) share: stable ids, the mapping of a
framework's tuple namespaces onto ours, and keyed writes.

A framework's ``put`` / ``add_documents`` / session item is a record the framework
addresses by its own key and expects back exactly as given, so these writes go to the
stores with an id derived from that key (:func:`stable_id`) and are never merged with
a near-duplicate: :func:`add_keyed` validates and stores the items as they are, the way
``MemoryManager.import_jsonl`` stores an export.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from hello_memory.memory.importance import estimate_importance
from hello_memory.types import MemoryItem, MemoryStatus, MemoryType
from hello_memory.validation import require_namespace, validate_item

if TYPE_CHECKING:
    from hello_memory.config import LimitsSettings
    from hello_memory.memory.manager import MemoryManager

__all__ = ["ADAPTER_ID_NAMESPACE", "active", "add_keyed", "existing", "join_namespace",
           "keyed_item", "split_namespace", "stable_id"]

# Fixed: ids derived from it are stored. Never change it.
ADAPTER_ID_NAMESPACE = uuid.UUID("0e6f4f1c-3b57-4c47-9a55-6c1d1d5e7a21")
SEP = "/"


def stable_id(*parts: str) -> str:
    """The same parts give the same memory id in every process (uuid5)."""
    return str(uuid.uuid5(ADAPTER_ID_NAMESPACE, "\x1f".join(parts)))


def _escape(label: str) -> str:
    return label.replace("%", "%25").replace(SEP, "%2F")


def _unescape(label: str) -> str:
    return label.replace("%2F", SEP).replace("%25", "%")


def join_namespace(labels: Sequence[str], root: str | None = None) -> str:
    """``("users", "alice")`` -> ``"users/alice"`` (``root/users/alice`` with a root): the
    API keys' ``users/*`` patterns then grant a subtree. A ``/`` or ``%`` inside a label
    is percent-escaped, so every tuple maps to one namespace and back."""
    parts = [_escape(str(p)) for p in labels]
    if root:
        parts.insert(0, root)
    return require_namespace(SEP.join(parts))


def split_namespace(namespace: str, root: str | None = None) -> tuple[str, ...] | None:
    """The inverse of :func:`join_namespace`; None for a namespace outside ``root``."""
    if root:
        if not namespace.startswith(root + SEP):
            return None
        namespace = namespace[len(root) + 1:]
    return tuple(_unescape(p) for p in namespace.split(SEP))


def existing(manager: MemoryManager, namespace: str, ids: Sequence[str]
             ) -> dict[str, MemoryItem]:
    """The stored records among ``ids`` (forgotten ones too), by id."""
    if not ids:
        return {}
    return {i.id: i for i in manager.browse.get_memories(namespace, ids)}


def add_keyed(manager: MemoryManager, items: Sequence[MemoryItem]) -> list[MemoryItem]:
    """Store ``items`` with the ids they carry, as given (one embedding batch, one
    transaction; one invalid item stores nothing)."""
    return manager.edit.add_keyed(items)


def keyed_item(memory_id: str, namespace: str, content: str, memory_type: MemoryType,
               metadata: dict[str, Any], *, limits: LimitsSettings | None = None,
               **fields: Any) -> MemoryItem:
    """A record with a chosen id, already validated against ``limits`` (the manager's,
    ``MemoryManager.limits``), so a replacement is checked before the record it
    replaces is removed; importance estimated as ``MemoryManager.add`` does unless
    ``importance`` is given."""
    if fields.get("importance") is None:
        fields["importance"] = estimate_importance(content, metadata)
    return validate_item(MemoryItem(id=memory_id, namespace=namespace, content=content,
                                    memory_type=memory_type, metadata=metadata, **fields),
                         limits)


def active(item: MemoryItem | None) -> bool:
    return item is not None and item.status == MemoryStatus.ACTIVE
