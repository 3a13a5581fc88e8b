"""Clearing a namespace leaves nothing of it anywhere (issue 20): every table of the
record database (found by reflection, so tables of later schema versions are covered),
every vector collection, the graph, working memory and the uploads folder, while
another namespace stays exactly as it was."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from asgi_client import AsgiApi  # tests/ is on sys.path
from sqlalchemy import MetaData, func, select

from hello_memory.config import Settings, load_settings
from hello_memory.factory import open_stores
from hello_memory.interfaces.rest import create_app
from hello_memory.memory.manager import MemoryManager
from hello_memory.rag import RAGPipeline
from hello_memory.stores.records.models import Base
from hello_memory.stores.uploads import namespace_folder, upload_folder, uploads_root
from hello_memory.stores.vector.base import CollectionSpec
from hello_memory.text.entities import RuleExtractor
from hello_memory.types import VectorPoint

pytestmark = pytest.mark.slow

KEY = {"Authorization": "Bearer key-all"}
# One word per namespace that appears in nothing else: finding it anywhere after the
# clear means some content of the namespace survived.
MARK = {"alice": "zephyrine", "bob": "quillon"}
EXTRA_COLLECTION = "perceptual_image"  # as perceptual memory writes it (its own space)


@pytest.fixture(scope="module")
def embedder() -> Any:
    from hello_memory.embedding import SentenceTransformerEmbedder

    return SentenceTransformerEmbedder()


def _settings(data_dir: Path, engine: str) -> Settings:
    return load_settings(environ={}, data_dir=data_dir, vector={"embedded": engine},
                         api={"api_keys": {"key-all": ["*"]}})


@pytest.fixture(params=[("rest", "edge"), ("python", "local")], ids=lambda p: "-".join(p))
def world(request: pytest.FixtureRequest, tmp_path: Path, embedder: Any
          ) -> Iterator[tuple[str, Settings, MemoryManager]]:
    via, engine = request.param
    settings = _settings(tmp_path / "data", engine)
    mm = MemoryManager(open_stores(settings, embedder=embedder), extractor=RuleExtractor(),
                       uploads_dir=uploads_root(settings.data_dir))
    yield via, settings, mm
    mm.close()


def _fill(via: str, settings: Settings, mm: MemoryManager, api: AsgiApi, ns: str,
          tmp: Path) -> None:
    mark = MARK[ns]
    name = ns.capitalize()
    facts = [f"{name} {mark.capitalize()} works at Acme Corp in Lisbon.",
             f"{name} told Bob Stone about the {mark} project on Monday."]
    for text, kind in zip(facts, ("semantic", "episodic"), strict=True):
        mm.add(text, kind, namespace=ns)
    gone = mm.add(f"{name} once liked {mark} tea.", "episodic", namespace=ns)
    mm.forget_ids([gone.id], namespace=ns)  # an audit row that names a memory
    mm.add(f"{name} is reading about {mark} right now.", "working", namespace=ns)
    doc = f"# {mark} handbook\n\n## Leave\n\nEvery {mark} employee gets 25 days of leave.\n"
    if via == "rest":
        r = api("POST", "/v1/documents", params={"namespace": ns}, headers=KEY,
                files=[("files", (f"{mark}-policy.md", doc.encode(), "text/markdown"))])
        assert r.status_code == 201 and r.json()["files"] == 1, r.text
        r = api("POST", "/v1/documents/text", params={"namespace": ns}, headers=KEY,
                json={"text": f"The {mark} office opens at nine.", "source": f"{mark}-notes"})
        assert r.status_code == 201, r.text
    else:
        rag = RAGPipeline.from_manager(mm)
        folder = tmp / ns
        folder.mkdir()
        (folder / f"{mark}-policy.md").write_text(doc, encoding="utf-8")
        assert rag.ingest([folder], namespace=ns).files == 1
        rag.add_text(f"The {mark} office opens at nine.", namespace=ns, source=f"{mark}-notes")
        # a file the server kept for this namespace (an uploaded image, say)
        data = f"{mark} image bytes".encode()
        kept = upload_folder(settings.data_dir, "media", ns, data)
        kept.mkdir(parents=True)
        (kept / "photo.png").write_bytes(data)
    # a collection of another space (perceptual memory writes one per modality)
    vectors = mm.stores.vectors
    vectors.ensure_collection(CollectionSpec(name=EXTRA_COLLECTION, dense={"dense": 4}))
    point_id = "00000000-0000-4000-8000-00000000000" + ("1" if ns == "alice" else "2")
    vectors.upsert(EXTRA_COLLECTION, [VectorPoint(
        id=point_id, vectors={"dense": [1.0, 0.0, 0.0, 0.0]},
        payload={"namespace": ns, "source": f"{mark}.png"})])


def _tables(mm: MemoryManager) -> MetaData:
    meta = MetaData()
    meta.reflect(mm.stores.records.engine)  # every table the database holds
    return meta


def _rows_of(mm: MemoryManager, ns: str) -> dict[str, int]:
    out: dict[str, int] = {}
    with mm.stores.records.engine.connect() as conn:
        for table in _tables(mm).sorted_tables:
            if "namespace" in table.c:
                out[table.name] = conn.execute(select(func.count()).select_from(table).where(
                    table.c.namespace == ns)).scalar_one()
    return out


def _ids_of(mm: MemoryManager, ns: str) -> set[str]:
    """Every id the namespace's rows carry (memories, documents, chunks, entities...)."""
    ids: set[str] = set()
    with mm.stores.records.engine.connect() as conn:
        for table in _tables(mm).sorted_tables:
            if "namespace" in table.c:
                for row in conn.execute(select(table).where(table.c.namespace == ns)):
                    ids |= {str(v) for k, v in row._mapping.items()
                            if isinstance(v, str) and (k == "id" or k.endswith("_id"))}
    return ids


def _vectors_of(mm: MemoryManager, ns: str) -> dict[str, int]:
    v = mm.stores.vectors
    return {c: v.count(c, namespace=ns) for c in v.collections()}


def _files_of(settings: Settings, ns: str) -> list[Path]:
    root = uploads_root(settings.data_dir)
    return sorted(p for p in root.glob(f"*/{namespace_folder(ns)}/**/*") if p.is_file())


def _state(settings: Settings, mm: MemoryManager, ns: str) -> tuple[Any, ...]:
    return (_rows_of(mm, ns), _vectors_of(mm, ns), mm.stores.graph.stats(ns),
            sorted(i.id for i in mm.working.list(ns)), _files_of(settings, ns))


def test_clear_removes_every_kind_of_data_of_one_namespace(
        world: tuple[str, Settings, MemoryManager], tmp_path: Path) -> None:
    via, settings, mm = world
    api = AsgiApi(create_app(settings, manager=mm))
    for ns in ("alice", "bob"):
        _fill(via, settings, mm, api, ns, tmp_path)
    alice_ids = _ids_of(mm, "alice")
    before = _rows_of(mm, "alice")
    # every kind is there to begin with
    assert {t for t, n in before.items() if n} >= {
        "hm_memory_items", "hm_documents", "hm_chunks", "hm_outbox",  # every kind's rows
        "hm_entities", "hm_entity_mentions", "hm_audit_log", "hm_namespace_totals"}
    assert set(mm.stores.vectors.collections()) >= {"memories", "rag_chunks", EXTRA_COLLECTION}
    assert all(_vectors_of(mm, "alice").values()) and _files_of(settings, "alice")
    assert mm.stores.graph.stats("alice").entities and mm.working.list("alice")
    bob = _state(settings, mm, "bob")

    if via == "rest":
        r = api("DELETE", "/v1/namespace", params={"namespace": "alice", "confirm": "true"},
                headers=KEY)
        assert r.status_code == 200, r.text
        report = r.json()
    else:
        report = mm.clear("alice", confirm=True)

    # counts per kind
    assert report["records"] == 3 and report["working"] == 1
    assert report["documents"] == 2 and report["chunks"] >= 2
    assert report["entities"] > 0 and report["files"] == 1 and report["audit"] >= 1
    assert set(report["vectors"]) == {"memories", "rag_chunks", EXTRA_COLLECTION}

    # nothing of alice in any table: by namespace, by id, by content
    rows = _rows_of(mm, "alice")
    assert {t: n for t, n in rows.items() if n and t != "hm_audit_log"} == {}
    with mm.stores.records.engine.connect() as conn:
        audit = Base.metadata.tables["hm_audit_log"]
        left = conn.execute(select(audit).where(audit.c.namespace == "alice")).all()
        assert [r.action for r in left] == ["clear"]  # the one row saying it happened
        assert all(isinstance(v, int) for v in left[0].details.values())
        for table in _tables(mm).sorted_tables:
            for row in conn.execute(select(table)):
                cells = [str(v) for v in row]
                assert not any(MARK["alice"] in c.lower() for c in cells), (table.name, row)
                assert not alice_ids & set(cells), (table.name, row)
    # nor in any vector collection, the graph, working memory or the uploads folder
    assert set(_vectors_of(mm, "alice").values()) == {0}
    assert mm.stores.graph.stats("alice").entities == 0
    assert mm.stores.graph.memory_ids("alice") == set()
    assert mm.working.list("alice") == []
    assert _files_of(settings, "alice") == []
    rag = RAGPipeline.from_manager(mm)
    assert rag.documents("alice") == [] and rag.search(MARK["alice"], namespace="alice") == []
    assert mm.search(MARK["alice"], namespace="alice") == []
    assert mm.stats("alice")["total"] == 0

    # bob exactly as before, and still searchable
    assert _state(settings, mm, "bob") == bob
    assert MARK["bob"] in rag.search("how many days of leave?", namespace="bob")[0].content
    assert MARK["bob"] in mm.search("where does Bob work?", namespace="bob")[0].item.content.lower()


def test_clearing_an_empty_namespace_reports_zeros(
        world: tuple[str, Settings, MemoryManager]) -> None:
    _, _, mm = world
    report = mm.clear("nobody", confirm=True)
    assert report["records"] == report["documents"] == report["files"] == 0
    assert report["vectors"] == {}
