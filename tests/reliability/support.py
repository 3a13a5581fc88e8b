"""Helpers shared by the reliability tests: building managers, fingerprinting every
store, and checking that the three stores agree with each other."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest

from hello_memory.config import load_settings
from hello_memory.factory import open_stores
from hello_memory.memory.manager import MemoryManager
from hello_memory.stores.bundle import MEMORY_COLLECTION, memory_payload
from hello_memory.stores.records import ItemFilter
from hello_memory.text.entities import RuleExtractor
from hello_memory.text.links import GraphLinks
from hello_memory.types import MemoryItem, MemoryType

__all__ = ["all_items", "assert_consistent", "fingerprint", "make_manager"]


def make_manager(data_dir: Path, embedder: Any, *, clock: Any = None,
                 **overrides: Any) -> MemoryManager:
    """A manager on embedded stores under ``data_dir`` (rule-based entity extraction:
    deterministic and quick to start in a fresh process)."""
    settings = load_settings(environ={}, data_dir=data_dir, **overrides)
    extra = {"clock": clock} if clock is not None else {}
    # as MemoryManager.open: the stores replay the outbox at open with the graph links in
    # place (text/links.py), before the manager is built
    extractor = RuleExtractor()
    stores = open_stores(settings, embedder=embedder, extractor=GraphLinks(extractor))
    return MemoryManager(stores, extractor=extractor, **extra)


def all_items(mm: MemoryManager, namespace: str) -> list[MemoryItem]:
    return mm.stores.records.memories.list_items(namespace, ItemFilter(status=None))


def _item_key(i: MemoryItem) -> list[Any]:
    return [i.namespace, i.id, i.content, i.memory_type.value, i.modality.value, i.importance,
            i.status.value, i.user_id, i.agent_id, i.session_id, i.event_time.isoformat(),
            i.access_count, json.dumps(i.metadata, sort_keys=True, ensure_ascii=False)]


def fingerprint(mm: MemoryManager, namespaces: list[str]) -> dict[str, Any]:
    """Counts and a content hash of every store, for "nothing changed" assertions."""
    st = mm.stores
    nss = sorted(set(namespaces) | set(st.records.memories.namespaces()))
    digest = hashlib.sha256()
    out: dict[str, Any] = {"pending_outbox": len(st.records.outbox.pending_outbox())}
    for ns in nss:
        items = all_items(mm, ns)
        for item in sorted(items, key=lambda i: i.id):
            digest.update(json.dumps(_item_key(item), ensure_ascii=False).encode(
                "utf-8", "surrogatepass"))
        g = st.graph.stats(ns)
        out[ns] = {"records": len(items),
                   "vectors": st.vectors.count(MEMORY_COLLECTION, namespace=ns),
                   "vector_ids": sorted(st.vectors.ids(MEMORY_COLLECTION, namespace=ns)),
                   "graph": (g.entities, g.relations, g.mentions),
                   "working": [w.id for w in mm.working.list(ns)]}
    out["records_sha256"] = digest.hexdigest()
    return out


def assert_consistent(mm: MemoryManager, namespace: str) -> None:
    """Records, vectors and graph agree in ``namespace``: every stored record has
    exactly one vector whose payload matches it; no vector and no graph link lacks its
    record; the outbox is empty."""
    st = mm.stores
    assert st.records.outbox.pending_outbox() == []
    items = [i for i in all_items(mm, namespace) if i.memory_type != MemoryType.PERCEPTUAL]
    ids = {i.id for i in items}
    vector_ids = st.vectors.ids(MEMORY_COLLECTION, namespace=namespace)
    assert vector_ids - ids == set(), "vectors without a record"
    assert ids - vector_ids == set(), "records without a vector"
    assert st.vectors.count(MEMORY_COLLECTION, namespace=namespace) == len(items)
    semantic = {i.id for i in items if i.memory_type == MemoryType.SEMANTIC}
    assert st.graph.memory_ids(namespace) - semantic == set(), "graph links without a record"
    points = {h.id: h.payload for h in st.vectors.retrieve(MEMORY_COLLECTION, sorted(ids),
                                                            namespace=namespace)}
    for item in items:
        want = memory_payload(item)
        have = {k: points[item.id].get(k) for k in want}
        assert have.pop("importance") == pytest.approx(want.pop("importance"), rel=1e-9)
        assert have == want, item.id
