"""What a repository reads of the record store it belongs to (:class:`RecordsHandle`).

``RecordStore`` (store.py) opens the database and hands out one repository per
aggregate (docs/ARCHITECTURE.md, Layers: stores); each repository is given the store
and reads only these members of it. Naming them in a protocol, instead of the store's
class, keeps the repositories from importing the module that imports them (no import
cycle, not even for type checking: ``tests/unit/test_import_cycles.py``).
"""

from __future__ import annotations

from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from sqlalchemy.engine import Engine
    from sqlalchemy.orm import Session

    from hello_memory.config import LimitsSettings
    from hello_memory.stores.records.item_cache import ItemCache

__all__ = ["RecordsHandle"]


class RecordsHandle(Protocol):
    """The store's settings, its item cache, its engine and its one transaction."""

    limits: LimitsSettings
    mention_times: bool
    item_cache: ItemCache | None

    @property
    def engine(self) -> Engine: ...

    def transaction(self) -> AbstractContextManager[Session]: ...
