"""Idempotent add (issue 15, hello_memory/memory/dedup.py): the same content in the same
namespace and type is one memory everywhere (Python, REST, MCP, the MemoryTool,
import), ``memory.on_duplicate`` modes, the near-duplicate report, and ``consolidate``
merging near-duplicates within a type. Real embedded stores and MiniLM."""

from __future__ import annotations

import re
import subprocess
import sys
from collections.abc import Iterator
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import anyio
import pytest

from hello_memory.config import load_settings
from hello_memory.errors import InvalidInputError
from hello_memory.factory import open_stores
from hello_memory.memory.manager import MemoryManager
from hello_memory.stores.records import ItemFilter
from hello_memory.text.entities import RuleExtractor
from hello_memory.types import MemoryType

pytestmark = pytest.mark.slow

README = Path(__file__).resolve().parents[2] / "README.md"
T0 = datetime(2026, 12, 1, 9, 0, tzinfo=timezone.utc)


@pytest.fixture(scope="module")
def embedder() -> Any:
    from hello_memory.embedding import SentenceTransformerEmbedder

    return SentenceTransformerEmbedder()


def make(data: Path, embedder: Any, **memory: Any) -> MemoryManager:
    settings = load_settings(environ={}, data_dir=data, memory=memory)
    m = settings.memory
    return MemoryManager(open_stores(settings, embedder=embedder), extractor=RuleExtractor(),
                         dedup_threshold=m.dedup_threshold, on_duplicate=m.on_duplicate)


@pytest.fixture
def mm(tmp_path: Path, embedder: Any) -> Iterator[MemoryManager]:
    manager = make(tmp_path / "data", embedder)
    yield manager
    manager.close()


def count(mm: MemoryManager, ns: str) -> int:
    return int(mm.stats(ns)["total"])


# --- Python -------------------------------------------------------------------------
def test_the_same_content_returns_the_stored_memory(mm: MemoryManager) -> None:
    first = mm.add("Alice prefers green tea.", "semantic", namespace="a")
    assert first.duplicate_of is None
    again = mm.add("Alice prefers green tea.", "semantic", namespace="a")
    spaced = mm.add("  Alice prefers\ngreen   tea. ", "semantic", namespace="a")  # whitespace
    assert again.id == spaced.id == first.id
    assert again.duplicate_of == spaced.duplicate_of == first.id
    assert count(mm, "a") == 1
    # another type, another namespace, other words: new memories
    assert mm.add("Alice prefers green tea.", "episodic", namespace="a").id != first.id
    assert mm.add("Alice prefers green tea.", "semantic", namespace="b").id != first.id
    assert mm.add("alice prefers green tea.", "semantic", namespace="a").id != first.id
    assert count(mm, "a") == 3


def test_working_memory_is_idempotent_too(mm: MemoryManager) -> None:
    a = mm.add("The user is booking a flight right now.", "working", namespace="w")
    b = mm.add("The user is booking a flight right now.", "working", namespace="w")
    assert b.id == a.id and b.duplicate_of == a.id
    assert mm.stats("w")["by_type"]["working"] == 1


def test_add_many_one_lookup_for_repeats_inside_and_outside_the_batch(mm: MemoryManager) -> None:
    old = mm.add("Tom works at Acme.", "semantic", namespace="n")
    out = mm.add_many([
        {"content": "Tom works at Acme.", "memory_type": "semantic", "namespace": "n"},
        {"content": "Tom plays chess on Sundays.", "memory_type": "semantic", "namespace": "n"},
        {"content": "Tom plays chess on Sundays.", "memory_type": "semantic", "namespace": "n"},
    ])
    assert [o.duplicate_of for o in out] == [old.id, None, out[1].id]
    assert out[0].id == old.id and out[2].id == out[1].id
    assert count(mm, "n") == 2


def test_update_mode_merges_the_repeat_into_the_stored_memory(mm: MemoryManager) -> None:
    first = mm.add("Mia is allergic to peanuts.", "semantic", importance=0.4,
                   metadata={"source": "chat"}, namespace="u")
    later = datetime(2026, 12, 5, tzinfo=timezone.utc)
    again = mm.add("Mia is allergic to peanuts.", "semantic", importance=0.9,
                   metadata={"checked": True}, namespace="u", event_time=later,
                   on_duplicate="update")
    assert again.id == first.id and again.duplicate_of == first.id
    stored = mm.get(first.id, namespace="u")
    assert stored.importance == 0.9 and stored.event_time == later
    assert stored.metadata == {"source": "chat", "checked": True}
    assert count(mm, "u") == 1


def test_store_mode_keeps_copies(tmp_path: Path, embedder: Any) -> None:
    with make(tmp_path / "s", embedder, on_duplicate="store") as mm:  # the setting
        a = mm.add("Same words twice.", "episodic", namespace="s")
        b = mm.add("Same words twice.", "episodic", namespace="s")
        assert a.id != b.id and b.duplicate_of is None
        c = mm.add("Same words twice.", "episodic", namespace="s", on_duplicate="return")
        assert c.id == a.id  # the per-call choice wins over the setting
        assert count(mm, "s") == 2
    with pytest.raises(InvalidInputError):
        MemoryManager.add(mm, "x", namespace="s", on_duplicate="skip")


def test_a_forgotten_memory_is_no_duplicate(mm: MemoryManager) -> None:
    a = mm.add("The printer code is 4711.", "semantic", namespace="f")
    mm.forget_ids([a.id], namespace="f")
    b = mm.add("The printer code is 4711.", "semantic", namespace="f")
    assert b.id != a.id and b.duplicate_of is None


def test_a_superseded_fact_said_again_about_its_own_time_is_a_duplicate(
        mm: MemoryManager) -> None:
    # The README's facts-that-update snippet run twice stores nothing new.
    old_time, new_time = datetime(2023, 1, 10, tzinfo=timezone.utc), datetime(
        2024, 3, 5, tzinfo=timezone.utc)
    for _ in range(2):
        old = mm.add("Tom lives in Oslo.", namespace="tom", event_time=old_time)
        new = mm.add("Tom moved from Oslo to Bergen.", namespace="tom", event_time=new_time)
    assert old.duplicate_of is not None and new.duplicate_of is not None
    rows = mm.stores.records.memories.list_items("tom", ItemFilter(status=None))
    assert sorted(r.content for r in rows) == ["Tom lives in Oslo.",
                                               "Tom moved from Oslo to Bergen."]
    # Said about a time after it stopped being true, it is news: stored again.
    back = mm.add("Tom lives in Oslo.", namespace="tom",
                  event_time=datetime(2025, 8, 1, tzinfo=timezone.utc))
    assert back.duplicate_of is None


def test_near_duplicates_are_stored_and_reported(mm: MemoryManager) -> None:
    a = mm.add("Alice prefers green tea in the morning.", "semantic", namespace="nd")
    b = mm.add("Alice prefers green tea in the morning!", "semantic", namespace="nd")
    assert b.id != a.id and b.duplicate_of is None
    assert [i for i, _ in b.near_duplicates] == [a.id]
    assert b.near_duplicates[0][1] >= mm.dedup_threshold
    other = mm.add("The car needs new tyres before winter.", "semantic", namespace="nd")
    assert other.near_duplicates == ()
    episodic = mm.add("Alice prefers green tea in the morning?", "episodic", namespace="nd")
    assert episodic.near_duplicates == ()  # another type is not compared
    batch = mm.add_many([{"content": "Bob jogs every evening.", "namespace": "nd"},
                         {"content": "Bob jogs every evening!", "namespace": "nd"}])
    assert [i for i, _ in batch[1].near_duplicates] == [batch[0].id]


# --- consolidate within a type ------------------------------------------------------
def test_consolidate_merges_near_duplicates_within_a_type(mm: MemoryManager) -> None:
    ns = "c"
    a = mm.add("Alice prefers green tea in the morning.", "semantic", importance=0.5,
               namespace=ns)
    b = mm.add("Alice prefers green tea in the morning!", "semantic", importance=0.8,
               namespace=ns)
    copy = mm.add("Alice prefers green tea in the morning.", "semantic", namespace=ns,
                  on_duplicate="store")
    other = mm.add("Bob is learning Norwegian.", "semantic", namespace=ns)
    dry = mm.consolidate("semantic", "semantic", namespace=ns, dry_run=True)
    assert dry.deduplicated == {a.id: (copy.id, b.id)}  # the exact copy first
    assert dry.merged == {} and count(mm, ns) == 4
    report = mm.consolidate("semantic", "semantic", namespace=ns)
    assert set(report.removed_sources) == {b.id, copy.id}
    left = {i.id: i for i in mm.stores.records.memories.list_items(ns)}
    assert set(left) == {a.id, other.id}
    assert left[a.id].importance == 0.8
    assert set(left[a.id].metadata["merged_from"]) == {b.id, copy.id}
    again = mm.consolidate("semantic", "semantic", namespace=ns)
    assert again.deduplicated == {} and count(mm, ns) == 2


def test_promotion_also_merges_duplicates_already_in_the_target(mm: MemoryManager) -> None:
    ns = "p"
    s1 = mm.add("Tom lives in Bergen.", "semantic", namespace=ns)
    s2 = mm.add("Tom lives in Bergen.", "semantic", namespace=ns, on_duplicate="store")
    near = mm.add("Tom lives in Bergen!", "semantic", namespace=ns)
    report = mm.consolidate("episodic", "semantic", namespace=ns)  # no episodic source
    assert report.deduplicated == {s1.id: (s2.id,)} and report.merged == {}
    # the copy is merged; a near-duplicate is left to consolidate("semantic", "semantic")
    assert [i.id for i in mm.stores.records.memories.list_items(ns)] == [s1.id, near.id]
    assert s2.id in mm.get(s1.id, namespace=ns).metadata["merged_from"]


# --- import -------------------------------------------------------------------------
def test_import_skips_content_already_stored(tmp_path: Path, embedder: Any) -> None:
    with make(tmp_path / "one", embedder) as src:
        src.add("Alice prefers green tea.", "semantic", namespace="a")
        src.add("Alice moved to Berlin.", "episodic", namespace="a")
        src.export_jsonl(tmp_path / "a.jsonl", namespace="a")
    with make(tmp_path / "two", embedder) as dst:
        kept = dst.add("Alice prefers green tea.", "semantic", namespace="a")  # other id
        result = dst.import_jsonl(tmp_path / "a.jsonl")
        assert result == {"imported": 1, "skipped": 0, "duplicates": 1}
        assert dst.import_jsonl(tmp_path / "a.jsonl") == {"imported": 0, "skipped": 1,
                                                          "duplicates": 1}
        assert count(dst, "a") == 2
        assert dst.get(kept.id, namespace="a").content == "Alice prefers green tea."


# --- REST, MCP, the MemoryTool --------------------------------------------------------
def test_rest_add_and_batch_return_the_stored_memory(tmp_path: Path, embedder: Any) -> None:
    from fastapi.testclient import TestClient

    from hello_memory.interfaces.rest import create_app

    settings = load_settings(environ={}, data_dir=tmp_path / "rest",
                             api={"api_keys": {"k": ["*"]}})
    mm = MemoryManager(open_stores(settings, embedder=embedder), extractor=RuleExtractor())
    auth = {"Authorization": "Bearer k"}
    with TestClient(create_app(settings, manager=mm)) as client:
        body = {"content": "Alice prefers green tea.", "memory_type": "semantic"}
        r1 = client.post("/v1/memories", params={"namespace": "a"}, json=body, headers=auth)
        r2 = client.post("/v1/memories", params={"namespace": "a"}, json=body, headers=auth)
        assert (r1.status_code, r2.status_code) == (201, 200)
        assert r1.json()["duplicate_of"] is None and r1.json()["near_duplicates"] == []
        assert r2.json()["id"] == r1.json()["id"] == r2.json()["duplicate_of"]
        r3 = client.post("/v1/memories", params={"namespace": "a", "on_duplicate": "store"},
                         json=body, headers=auth)
        assert r3.status_code == 201 and r3.json()["id"] != r1.json()["id"]
        assert r3.json()["near_duplicates"] == []  # "store" runs no check at all
        batch = client.post("/v1/memories/batch", params={"namespace": "a"}, headers=auth,
                            json={"memories": [body, {**body, "content": "Bob jogs."},
                                               {**body, "content": "Bob jogs."}]})
        assert batch.status_code == 201
        out = batch.json()
        assert out["duplicates"] == 2 and out["ids"][0] == r1.json()["id"]
        assert out["ids"][1] == out["ids"][2] == out["memories"][2]["duplicate_of"]
    mm.close()


def test_mcp_remember_twice_is_one_memory(tmp_path: Path, mm: MemoryManager) -> None:
    from mcp import Client

    from hello_memory.interfaces.mcp import build_server

    settings = load_settings(environ={}, data_dir=tmp_path / "data")
    server = build_server(mm, settings, ["m"])

    async def remember() -> list[dict[str, Any]]:
        out = []
        async with Client(server) as c:  # the mcp package's client, in process
            for _ in range(2):
                result = await c.call_tool("remember", {
                    "namespace": "m", "content": "The user's dentist is Dr Lund.",
                    "memory_type": "semantic"})
                out.append(result.structured_content)
        return out

    first, second = anyio.run(remember)
    assert second["id"] == first["id"] == second["duplicate_of"]
    assert first["duplicate_of"] is None
    assert count(mm, "m") == 1


def test_memory_tool_add_twice_says_it_is_remembered(mm: MemoryManager) -> None:
    from hello_memory.interfaces.tools import MemoryTool

    tool = MemoryTool(mm, namespace="t")
    first = tool.add("The user's dentist is Dr Lund.", "semantic")
    second = tool.add("The user's dentist is Dr Lund.", "semantic")
    assert second["id"] == first["id"] == second["duplicate_of"]
    assert first["duplicate_of"] is None and "already remembered" in second["text"]
    tool.record_turn("user", "ok")
    tool.record_turn("user", "ok")  # turns are a transcript: both kept
    assert mm.stats("t")["by_type"]["working"] == 2


# --- the README's first example, run twice (issue 20) --------------------------------
def test_first_readme_example_twice_stores_nothing_new(tmp_path: Path) -> None:
    block = re.findall(r"```python\n(.*?)```", README.read_text(encoding="utf-8"), re.S)[0]
    code = block.replace("/tmp/", f"{tmp_path}/")
    totals = []
    for _ in range(2):
        out = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True,
                             text=True, timeout=300)
        assert out.returncode == 0, out.stderr[-2000:]
        with MemoryManager.open(data_dir=tmp_path / "hm-readme", environ={}) as mm:
            stats = mm.stats("alice")
            totals.append((stats["by_type"][MemoryType.EPISODIC.value],
                           stats["by_type"][MemoryType.SEMANTIC.value]))
    assert totals[0] == totals[1]


def test_one_indexed_lookup_per_batch(mm: MemoryManager) -> None:
    from sqlalchemy import event

    mm.add("warm the schema up", namespace="ix")
    seen: list[tuple[str, Any]] = []

    def capture(conn: Any, cursor: Any, statement: str, params: Any, context: Any,
                executemany: bool) -> None:
        if "content_hash IN" in statement:
            seen.append((statement, params))

    engine = mm.stores.records.engine
    event.listen(engine, "before_cursor_execute", capture)
    try:
        mm.add_many([{"content": f"memory number {n}", "namespace": "ix"} for n in range(60)])
    finally:
        event.remove(engine, "before_cursor_execute", capture)
    assert len(seen) == 1  # one query for the 60 memories
    statement, params = seen[0]
    with engine.connect() as conn:
        plan = " ".join(str(r[-1]) for r in conn.exec_driver_sql(
            "EXPLAIN QUERY PLAN " + statement, params).all())
    assert "ix_items_ns_hash" in plan, plan
