"""Short handles (issue 26, the context block holds the answer): the block shows each
memory by the first 8 characters of its id, about 6 tokens where the uuid costs 25, so
a 300-token block holds more memories; every call that takes an id takes a handle
(``MemoryManager.resolve_id``), and a handle two memories share is a clear error."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from hello_memory.config import load_settings
from hello_memory.errors import InvalidInputError
from hello_memory.interfaces.tools.memory_tool import MemoryTool
from hello_memory.memory.manager import HANDLE_CHARS, MemoryManager
from hello_memory.types import MemoryItem, MemoryType


def _open(data_dir: Path, **extra: Any) -> MemoryManager:
    return MemoryManager.open(load_settings(environ={}, data_dir=data_dir, **extra))


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def on_both(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[MemoryManager]:
    """A manager whose records are in SQLite, then in PostgreSQL."""
    extra: dict[str, Any] = {}
    if request.param == "postgresql":
        extra = {"records": {"url": request.getfixturevalue("postgres_url")}}
    mm = _open(tmp_path / "d", **extra)
    yield mm
    mm.close()


def test_the_block_shows_handles_and_every_call_takes_them(tmp_path: Path) -> None:
    mm = _open(tmp_path / "d")
    try:
        tool = MemoryTool(mm, namespace="n")
        full = tool.add("The user is allergic to peanuts.", "semantic")["id"]
        block = tool.get_context_for_query("Which snacks are safe for my allergy?")
        handle = full[:HANDLE_CHARS]
        assert f"[{handle}]" in block and full not in block
        assert mm.get(handle, namespace="n").id == full
        assert mm.update(handle, namespace="n", importance=0.9).importance == 0.9
        assert mm.forget_ids([handle], namespace="n") == [full]
        assert mm.restore([handle], namespace="n") == 1
        assert mm.remove(handle, namespace="n")
    finally:
        mm.close()


def _records_only(mm: MemoryManager, ids: list[str]) -> None:
    mm.stores.records.memories.add_items([
        MemoryItem(content=f"note {n}", namespace="n", memory_type=MemoryType.SEMANTIC,
                   id=i) for n, i in enumerate(ids)])


def test_a_handle_two_memories_share_is_a_clear_error(tmp_path: Path) -> None:
    mm = _open(tmp_path / "d")
    try:
        twins = ["0123abcd-0000-4000-8000-000000000001", "0123abcd-0000-4000-8000-000000000002"]
        _records_only(mm, twins)
        with pytest.raises(InvalidInputError, match="more than one memory"):
            mm.get("0123abcd", namespace="n")
        # the whole id is always itself; the block shows such twins whole
        assert mm.get(twins[1], namespace="n").id == twins[1]
        assert mm.short_ids([twins[0]], namespace="n") == {twins[0]: twins[0]}
        # a too-short or non-hex reference is taken as it is (and then not found)
        assert mm.resolve_id("0123", namespace="n") == "0123"
        # another namespace's memory is never reached by a handle
        assert mm.resolve_id("0123abcd", namespace="other") == "0123abcd"
    finally:
        mm.close()


def test_holds_cjk_is_one_query_on_both_databases(on_both: MemoryManager) -> None:
    """The multilingual view's switch (retrieval/_hybrid_language.py ``_holds_cjk``): SQLite
    through SQLAlchemy's REGEXP, PostgreSQL with its own."""
    mm = on_both
    memories = mm.stores.records.memories
    mm.add("Pizza night on Friday.", namespace="en", memory_type="semantic")
    mm.add("I cycle to work.", namespace="zh", memory_type="semantic")
    assert not memories.holds_cjk("en") and not memories.holds_cjk("zh")
    mm.add("妈妈喜欢百合花。", namespace="zh", memory_type="semantic")
    assert memories.holds_cjk("zh") and not memories.holds_cjk("en")


def test_rest_takes_a_handle_and_answers_a_shared_one_with_a_400(tmp_path: Path) -> None:
    from fastapi.testclient import TestClient

    from hello_memory.interfaces.rest import create_app

    settings = load_settings(environ={}, data_dir=tmp_path / "d",
                             api={"api_keys": {"k": ["n"]}})
    app = create_app(settings)
    auth = {"Authorization": "Bearer k"}
    with TestClient(app) as client:
        r = client.post("/v1/memories", params={"namespace": "n"}, headers=auth,
                        json={"content": "Alice prefers green tea.", "memory_type": "semantic"})
        assert r.status_code == 201, r.text
        full = r.json()["id"]
        got = client.get(f"/v1/memories/{full[:8]}", params={"namespace": "n"}, headers=auth)
        assert got.status_code == 200 and got.json()["id"] == full
        _records_only(app.state.manager, ["0123abcd-0000-4000-8000-000000000001",
                                          "0123abcd-0000-4000-8000-000000000002"])
        shared = client.get("/v1/memories/0123abcd", params={"namespace": "n"}, headers=auth)
        assert shared.status_code == 400
        assert "more than one memory" in shared.json()["detail"]


def test_hex_after_bounds_every_id_a_prefix_starts() -> None:
    from hello_memory.stores.records._memory_queries import hex_after

    assert hex_after("0a9f") == "0aa0" and hex_after("0123abcf") == "0123abd0"
    assert hex_after("19") == "1a" and hex_after("abc-12") == "abd"
    # nothing above an all-f head, and no head at all: no bound
    assert hex_after("ffff") is None and hex_after("") is None and hex_after("-12") is None
    for prefix in ("0123abcd", "0123abcf", "9fffffff", "0a9f-1"):
        after = hex_after(prefix)
        assert after is not None and prefix < after
        assert prefix + "-0000-4000-8000-000000000001" < after
        assert prefix + "ffff" < after


def test_short_ids_of_a_block_match_each_asked_alone(on_both: MemoryManager) -> None:
    """The context block asks the handles of all its lines at once
    (``MemoryManager.short_ids``, one statement): each is what it is asked alone."""
    mm = on_both
    twins = ["0123abcd-0000-4000-8000-000000000001", "0123abcd-0000-4000-8000-000000000002"]
    # a handle ending in f, and the id just above its range
    edge = ["0123abcf-0000-4000-8000-000000000003", "0123abd0-0000-4000-8000-000000000004"]
    high = ["ffffffff-0000-4000-8000-000000000005"]  # no hex bound above it
    _records_only(mm, twins + edge + high)
    # the same handle in another namespace does not lengthen this one's
    mm.stores.records.memories.add_items([MemoryItem(
        content="elsewhere", namespace="other", memory_type=MemoryType.SEMANTIC,
        id="0123abcf-0000-4000-8000-000000000009")])
    working = mm.add("Just said: the train leaves at six.", namespace="n",
                     memory_type="working").id
    odd = ["not-a-uuid", twins[0][:20]]
    ids = [*twins, *edge, *high, working, *odd]
    got = mm.short_ids(ids, namespace="n")
    assert got == {i: mm.short_ids([i], namespace="n")[i] for i in ids}
    assert got[twins[0]] == twins[0] and got[twins[1]] == twins[1]
    assert got[edge[0]] == edge[0][:8] and got[edge[1]] == edge[1][:8]
    assert got[high[0]] == "ffffffff" and got[working] == working[:8]
    assert got["not-a-uuid"] == "not-a-uuid" and got[twins[0][:20]] == twins[0][:20]
    assert mm.short_ids([], namespace="n") == {}


def test_the_handles_statement_seeks_the_key_and_reads_no_namespace(tmp_path: Path) -> None:
    """SQLite's plan for the handles of a block: one seek of the primary key per handle,
    never a scan of the table or of a namespace index (the bounded-work rule: a block's
    handles cost the same at 100 memories and at 100,000)."""
    from sqlalchemy import text

    from hello_memory.stores.records._memory_queries import _ranges_sql

    mm = _open(tmp_path / "d")
    try:
        _records_only(mm, [f"{n:08x}-0000-4000-8000-{n:012x}" for n in range(50)])
        params = {"ns": "n", "lo0": "00000001", "hi0": "00000002", "lo1": "0000002a",
                  "hi1": "0000002b"}
        with mm.stores.records.transaction() as s:
            plan = [row[-1] for row in s.execute(
                text("EXPLAIN QUERY PLAN " + _ranges_sql(2).text), params)]
            found = sorted(s.scalars(_ranges_sql(2), params))
        assert found == ["00000001-0000-4000-8000-000000000001",
                         "0000002a-0000-4000-8000-00000000002a"]
        seeks = [p for p in plan if p.startswith("SEARCH")]
        assert len(seeks) == 2 and all("(id>? AND id<?)" in p for p in seeks), plan
        assert not any(p.startswith("SCAN") for p in plan), plan
    finally:
        mm.close()


def test_list_texts_is_list_items_in_three_columns(on_both: MemoryManager) -> None:
    """MemoryRepository.list_texts (the multilingual view's listing where nothing is
    kept): the ids, types and first characters of what list_items returns, in its
    order, counted in characters on both databases (CJK and a character outside the
    BMP cut where Python cuts them)."""
    from hello_memory.stores.records._memory_queries import ItemFilter

    mm = on_both
    memories = mm.stores.records.memories
    texts = ["妈妈最喜欢百合花，" * 30, "🙂 emoji first " * 20, "plain English note",
             "x" * 50]
    mm.stores.records.memories.add_items([
        MemoryItem(content=t, namespace="n", memory_type=kind)
        for t, kind in zip(texts, (MemoryType.SEMANTIC, MemoryType.EPISODIC,
                                   MemoryType.SEMANTIC, MemoryType.EPISODIC),
                           strict=True)])
    for flt in (ItemFilter(), ItemFilter(memory_types=(MemoryType.SEMANTIC,))):
        want = [(i.id, i.memory_type.value, i.content[:37])
                for i in memories.list_items("n", flt, limit=3, order="-event_time")]
        assert memories.list_texts("n", flt, limit=3, order="-event_time",
                                   chars=37) == want
    assert memories.list_texts("other") == []
