"""The interfaces are thin (issue 31): they read the stores through the browse service
(``MemoryManager.browse``, hello_memory/services/browse.py) and write through the
facade's services (``MemoryManager.edit`` / ``maintenance``, ``embed``), not through
``manager.stores``; and those services do to the stores what the interfaces did.

The interface modules are the source modules of the import contract "Interfaces do
not import hello_memory.stores" in pyproject.toml, so a new interface is scanned as
soon as the contract names it."""

from __future__ import annotations

import ast
import sys
from collections import Counter
from collections.abc import Iterator
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from hello_memory.config import load_settings
from hello_memory.errors import InsufficientStorageError, NotFoundError
from hello_memory.interfaces.jobs import run_job
from hello_memory.memory.manager import MemoryManager
from hello_memory.rag import RAGPipeline
from hello_memory.services import BrowseService
from hello_memory.services.browse import ItemFilter
from hello_memory.types import MemoryStatus, MemoryType

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "hello_memory"
INTERFACES = PACKAGE / "interfaces"  # the files below are named from here

# The reaches into manager.stores left in the interfaces: (file, function) -> (how
# many, why). Empty: every write goes through a facade method or service
# (MemoryManager.edit / maintenance / embed), every read through the browse service.
ALLOWED: dict[tuple[str, str], tuple[int, str]] = {}


def interface_files() -> list[Path]:
    """The files of every module the contract counts as an interface."""
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # Python 3.10: the backport, where installed
        tomllib = pytest.importorskip("tomli")
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    contract = next(c for c in config["tool"]["importlinter"]["contracts"]
                    if c["name"] == "Interfaces do not import hello_memory.stores")
    files: list[Path] = []
    for module in contract["source_modules"]:
        path = ROOT.joinpath(*module.split("."))
        files += sorted(path.rglob("*.py")) if path.is_dir() else [path.with_suffix(".py")]
    return files


class _Reaches(ast.NodeVisitor):
    """Every attribute access named ``stores`` (``x.stores``, whatever ``x`` is), by
    the qualified name of the function or class it is in."""

    def __init__(self) -> None:
        self.scope: list[str] = []
        self.found: Counter[str] = Counter()

    def _scoped(self, node: ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) -> None:
        self.scope.append(node.name)
        self.generic_visit(node)
        self.scope.pop()

    visit_FunctionDef = visit_AsyncFunctionDef = visit_ClassDef = _scoped

    def visit_Attribute(self, node: ast.Attribute) -> None:
        if node.attr == "stores":
            self.found[".".join(self.scope) or "<module>"] += 1
        self.generic_visit(node)


def store_reaches() -> Counter[tuple[str, str]]:
    found: Counter[tuple[str, str]] = Counter()
    for path in interface_files():
        visitor = _Reaches()
        visitor.visit(ast.parse(path.read_text(encoding="utf-8"), filename=str(path)))
        rel = path.relative_to(INTERFACES).as_posix()
        for scope, n in visitor.found.items():
            found[(rel, scope)] += n
    return found


def test_the_scan_sees_every_interface() -> None:
    files = {p.relative_to(INTERFACES).as_posix() for p in interface_files()}
    assert {"ui/pages.py", "adapters/langgraph.py", "catalogue/memories.py", "jobs.py",
            "rest/metrics.py", "cli/__init__.py", "mcp.py", "tools/rag_tool.py"} <= files
    assert all((INTERFACES / f).is_file() for f in files)


def test_the_scan_finds_a_reach() -> None:
    visitor = _Reaches()
    visitor.visit(ast.parse("def f(mm):\n    return (mm.stores).records, mm.stores.graph\n"))
    assert visitor.found == {"f": 2}


def test_interfaces_do_not_reach_into_the_stores() -> None:
    found = store_reaches()
    unexpected = {k: n for k, n in found.items() if k not in ALLOWED}
    assert not unexpected, ("interfaces reach manager.stores; read through "
                            f"MemoryManager.browse instead: {unexpected}")
    # the allow-list stays exact: a reach removed is removed from it too
    assert {k: n for k, n in found.items()} == {k: n for k, (n, _) in ALLOWED.items()}


# --- the browse service on a real embedded store ------------------------------------
T0 = datetime(2024, 5, 6, 9, 0, tzinfo=timezone.utc)


@pytest.fixture(scope="module")
def mm(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MemoryManager]:
    data_dir = tmp_path_factory.mktemp("browse")
    with MemoryManager.open(load_settings(environ={}, data_dir=data_dir,
                                          semantic={"extractor": "rules"})) as manager:
        yield manager


@pytest.fixture(scope="module")
def seeded(mm: MemoryManager) -> dict[str, str]:
    ids = {}
    for n, (key, text, mtype) in enumerate([
            ("berlin", "Priya Natarajan moved to Berlin for Acme Robotics", "semantic"),
            ("tea", "Alice prefers green tea in the morning", "semantic"),
            ("walk", "We walked along the river after lunch", "episodic"),
            ("call", "Called the dentist to move the appointment", "episodic")]):
        ids[key] = mm.add(text, memory_type=mtype, namespace="alice", session_id="s1",
                          event_time=T0 + timedelta(days=n)).id
    ids["bob"] = mm.add("Bob plays chess on Sundays", memory_type="episodic",
                        namespace="bob", event_time=T0).id
    mm.forget_ids([ids["call"]], namespace="alice")
    return ids


def test_manager_builds_one_browse_service(mm: MemoryManager) -> None:
    assert isinstance(mm.browse, BrowseService)
    assert mm.browse is mm.browse
    with pytest.raises(AttributeError):
        mm.browse = BrowseService(mm.stores)  # type: ignore[misc]


def test_namespaces_and_memories(mm: MemoryManager, seeded: dict[str, str]) -> None:
    browse, memories = mm.browse, mm.stores.records.memories
    assert browse.namespaces() == memories.namespaces() == ["alice", "bob"]

    # one memory, forgotten ones too; an unknown id raises as the store does
    assert browse.get_memory("alice", seeded["tea"]) == mm.get(seeded["tea"],
                                                               namespace="alice")
    assert browse.get_memory("alice", seeded["call"]).status is MemoryStatus.FORGOTTEN
    with pytest.raises(NotFoundError):
        browse.get_memory("bob", seeded["tea"])  # another namespace's
    got = browse.get_memories("alice", [seeded["walk"], "no-such-id", seeded["bob"]])
    assert [i.id for i in got] == [seeded["walk"]]
    assert browse.get_memories("alice", []) == []

    # listing: active ones by default, oldest first; a filter, an order and a page
    listed = browse.list_memories("alice")
    assert listed == memories.list_items("alice")
    assert [i.id for i in listed] == [seeded["berlin"], seeded["tea"], seeded["walk"]]
    everything = browse.list_memories("alice", ItemFilter(status=None), order="-event_time")
    assert [i.id for i in everything] == [seeded[k] for k in ("call", "walk", "tea", "berlin")]
    semantic = browse.list_memories("alice", ItemFilter(memory_types=(MemoryType.SEMANTIC,)))
    assert {i.id for i in semantic} == {seeded["berlin"], seeded["tea"]}
    page = browse.list_memories("alice", ItemFilter(session_id="s1", status=None),
                                order="-event_time", limit=2, offset=1)
    assert [i.id for i in page] == [seeded["walk"], seeded["tea"]]
    assert browse.list_memories("alice", order="-importance") == memories.list_items(
        "alice", order="-importance")


def test_graph(mm: MemoryManager, seeded: dict[str, str]) -> None:
    browse, graph = mm.browse, mm.stores.graph
    stats = browse.graph_stats("alice")
    assert stats == graph.stats("alice") and stats.entities > 0
    assert browse.graph_stats("bob") == graph.stats("bob")
    found = browse.find_entities("alice", ["Berlin", "Acme Robotics"])
    assert {e.name for e in found} == {"Berlin", "Acme Robotics"}
    assert found == graph.find_entities("alice", ["Berlin", "Acme Robotics"])
    assert browse.find_entities("alice", ["priya"], aliases=True) == graph.find_entities(
        "alice", ["priya"], aliases=True)
    start = [e.id for e in found]
    near = browse.neighbours("alice", start, max_hops=1, limit=10)
    assert near == graph.neighbors("alice", start, max_hops=1, limit=10)
    assert {h.name for h in near if h.hops == 0} == {"Berlin", "Acme Robotics"}
    assert any(seeded["berlin"] in h.memory_ids for h in near)
    assert browse.neighbours("alice", start, limit=1) == graph.neighbors("alice", start,
                                                                         limit=1)


def test_documents(mm: MemoryManager, seeded: dict[str, str]) -> None:
    rag = RAGPipeline.from_manager(mm)
    doc_id = rag.add_text("# Leave\nTwenty-five days a year.\n\n# Travel\nBook trains.",
                          namespace="alice", source="handbook.md")
    browse, documents = mm.browse, mm.stores.records.documents
    docs = browse.documents("alice")
    assert [d.id for d in docs] == [doc_id] and docs == documents.list_documents("alice")
    assert browse.find_document("alice", doc_id) == documents.find_document("alice", doc_id)
    assert browse.find_document("alice", "handbook.md") is not None
    assert browse.find_document("bob", doc_id) is None
    chunks = browse.document_chunks("alice", doc_id)
    assert chunks and chunks == documents.document_chunks("alice", doc_id)
    stats = browse.document_stats("alice")
    assert stats == documents.document_stats("alice") and stats["documents"] == 1
    assert browse.document_stats("bob") == {"documents": 0, "chunks": 0, "tokens": 0}


def test_audit_pending_work_gauges_and_disk(mm: MemoryManager,
                                            seeded: dict[str, str]) -> None:
    browse, records = mm.browse, mm.stores.records
    run_job(mm, "forget", namespace="alice", dry_run=True)  # audited as "job:forget"
    run_job(mm, "consolidate", namespace="alice", dry_run=True)
    audit = browse.audit("alice")
    assert audit == records.audit.list("alice")
    assert [row["action"] for row in audit][:2] == ["job:consolidate", "job:forget"]
    assert browse.audit("alice", limit=1) == records.audit.list("alice", limit=1) == audit[:1]
    assert browse.audit("bob") == []

    # the writes applied their own index work; a queued repair is pending until applied
    assert browse.pending_index_work(kinds=["memory"], namespace="alice") == []
    seqs = records.outbox.enqueue("memory", "payload", "alice", [seeded["tea"]])
    pending = browse.pending_index_work(kinds=["memory", "media"])
    assert [e.seq for e in pending] == seqs
    assert pending == records.outbox.pending_outbox(kinds=["memory", "media"])
    assert browse.pending_index_work(kinds=["chunk"], namespace="alice") == []
    assert browse.pending_index_work(namespace="bob") == []
    gauges = browse.gauges()
    assert gauges == records.memories.gauges()
    assert gauges["outbox"].get("memory") == 1
    assert gauges["memories"][("episodic", "forgotten")] == 1
    mm.stores.apply_outbox()
    assert browse.pending_index_work() == []

    browse.check_disk()  # the default floor (256 MiB) is far below what is free here
    with pytest.raises(InsufficientStorageError):
        browse.check_disk(1 << 62)


def test_the_writes_the_interfaces_call(mm: MemoryManager, seeded: dict[str, str]) -> None:
    """What the adapters, jobs and scheduler call instead of reaching the stores."""
    from hello_memory.interfaces.adapters._common import keyed_item, stable_id

    records = mm.stores.records
    keyed = [keyed_item(stable_id("k", str(n)), "keyed", text, MemoryType.EPISODIC, {"n": n})
             for n, text in enumerate(["Keyed one about Lisbon", "Keyed two about Oslo"])]
    assert [i.id for i in mm.edit.add_keyed(keyed)] == [i.id for i in keyed]
    # stored as given under the ids they carry, indexed like any add
    assert {i.id for i in records.memories.list_items("keyed")} == {i.id for i in keyed}
    assert mm.search("Oslo", namespace="keyed", top_k=1)[0].item.id == keyed[1].id
    # a repeat of the same text is not merged (no dedup): a second copy under its own id
    copy = keyed_item(stable_id("k", "9"), "keyed", keyed[0].content, MemoryType.EPISODIC, {})
    mm.edit.add_keyed([copy])
    assert records.memories.count_items("keyed") == 3

    # batch delete: records, vectors and graph links in one go; unknown ids skipped
    assert mm.edit.remove_many("keyed", [keyed[0].id, copy.id, "no-such-id"]) == 2
    assert [i.id for i in records.memories.list_items("keyed")] == [keyed[1].id]
    assert [h.item.id for h in mm.search("Lisbon", namespace="keyed")] == [keyed[1].id]

    # the job audit record, as the jobs wrote it
    mm.maintenance.record_job("keyed", "reindex", {"counts": {"items": 1}})
    assert records.audit.list("keyed")[0]["action"] == "job:reindex"
    # the fleet lease: only on a shared (PostgreSQL) database; this store is SQLite
    assert records.engine.url.get_backend_name() == "sqlite"
    assert mm.maintenance.job_lease() is None
    # the store's own embedder, as LangChain's Embeddings wrap it
    texts = ["green tea", "chess on Sundays"]
    assert (mm.embed(texts) == mm.stores.embedder.embed(texts)).all()
