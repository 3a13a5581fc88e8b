"""The audit log (``hm_audit``): what maintenance and admin operations did, per namespace."""

from __future__ import annotations

import builtins
from typing import TYPE_CHECKING, Any

from sqlalchemy import select

from hello_memory.stores.records.models import AuditRow
from hello_memory.types import utcnow
from hello_memory.validation import require_namespace

if TYPE_CHECKING:
    from hello_memory.stores.records.handle import RecordsHandle

__all__ = ["AuditRepository"]


class AuditRepository:
    """The audit log of a :class:`RecordStore` (``records.audit``)."""

    def __init__(self, records: RecordsHandle) -> None:
        self._records = records

    def add(self, namespace: str, action: str, details: dict[str, Any]) -> None:
        require_namespace(namespace)
        with self._records.transaction() as s:
            s.add(AuditRow(at=utcnow(), namespace=namespace, action=action, details=details))

    def list(self, namespace: str, limit: int = 100) -> builtins.list[dict[str, Any]]:
        require_namespace(namespace)
        with self._records.transaction() as s:
            rows = s.scalars(select(AuditRow).where(AuditRow.namespace == namespace)
                             .order_by(AuditRow.id.desc()).limit(limit)).all()
            return [{"at": r.at, "action": r.action, "details": r.details} for r in rows]
