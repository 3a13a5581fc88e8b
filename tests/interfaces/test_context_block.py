"""The context block is the search (issue 26, failure class 5): POST /v1/context and
``MemoryTool.get_context_for_query`` follow the one search's ranking with the same
reference time and recipe, hold whole memories only, and are never empty when the
search's top hit clears the relevance floor (``retrieval.min_score``)."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
from asgi_client import AsgiApi  # tests/ is on sys.path

from hello_memory.interfaces.rest import create_app
from hello_memory.interfaces.tools.memory_tool import MemoryTool
from hello_memory.memory.manager import MemoryManager
from hello_memory.text.tokens import default_token_counter

from .conftest import make_manager, make_settings

pytestmark = pytest.mark.slow
KEYS = {"key-a": ["alice"]}
A = {"Authorization": "Bearer key-a"}
NS = {"namespace": "alice"}
TZ = timezone(timedelta(hours=1))


@pytest.fixture
def api(tmp_path: Path, embedder: Any) -> Iterator[tuple[AsgiApi, MemoryManager]]:
    settings = make_settings(tmp_path / "data", api={"api_keys": KEYS})
    mm = make_manager(settings, embedder)
    yield AsgiApi(create_app(settings, manager=mm)), mm
    mm.close()


def add(call: AsgiApi, content: str, **extra: Any) -> str:
    r = call("POST", "/v1/memories", params=NS, headers=A, json={"content": content, **extra})
    assert r.status_code == 201, r.text
    return str(r.json()["id"])


def test_the_memory_just_stored_is_in_the_block(api: tuple[AsgiApi, MemoryManager]) -> None:
    # the README's agent loop: store the allergy, then ask for context at once
    call, _ = api
    allergy = add(call, "I'm allergic to peanuts.")
    ctx = call("POST", "/v1/context", params=NS, headers=A,
               json={"query": "Can you suggest a snack for me?", "max_tokens": 300}).json()
    hits = call("POST", "/v1/search", params=NS, headers=A,
                json={"query": "Can you suggest a snack for me?"}).json()["hits"]
    assert hits and hits[0]["id"] == allergy
    # the block shows the id's short handle (MemoryManager.short_ids)
    assert f"[{allergy[:8]}]" in ctx["context"] and "allergic to peanuts" in ctx["context"]


def test_the_block_follows_the_search_order_and_its_reference_time(
        api: tuple[AsgiApi, MemoryManager]) -> None:
    call, _ = api
    said = datetime(2026, 11, 20, 10, tzinfo=TZ).isoformat()
    dentist = add(call, "Dentist appointment on 9 December at 10:15", event_time=said)
    add(call, "Lunch with Marco at the Thai place",
        event_time=datetime(2026, 11, 28, 13, tzinfo=TZ).isoformat())
    add(call, "Bought new running shoes", event_time=datetime(2026, 6, 1, tzinfo=TZ).isoformat())
    asked = datetime(2026, 12, 4, 18, tzinfo=TZ).isoformat()
    body = {"query": "What's on next week?", "reference_time": asked}
    hits = call("POST", "/v1/search", params=NS, headers=A, json=body).json()["hits"]
    assert hits[0]["id"] == dentist
    ctx = call("POST", "/v1/context", params=NS, headers=A,
               json={**body, "max_tokens": 300}).json()
    lines = ctx["context"].splitlines()[1:]
    shown = [h["id"] for h in hits if any(f"[{h['id'][:8]}]" in line for line in lines)]
    assert shown and shown[0] == dentist
    # the block's lines keep the search's order
    order = [next(i for i, line in enumerate(lines) if h[:8] in line) for h in shown]
    assert order == sorted(order)


def test_whole_memories_only_a_long_one_is_skipped_for_the_next_that_fits(
        manager: MemoryManager) -> None:
    tool = MemoryTool(manager, namespace="n")
    long = tool.add("Anna's vegetarian recipes: " + "lentil stew with cumin and lemon, " * 40,
                    "semantic")["id"]
    short = tool.add("Anna is vegetarian and loves spicy food.", "semantic")["id"]
    block = tool.get_context_for_query("What should I cook for Anna?", max_tokens=120)
    assert default_token_counter().count(block) <= 120
    assert f"[{short[:8]}]" in block and f"[{long[:8]}]" not in block
    # every line shown is a whole memory
    for line in block.splitlines()[1:]:
        if line.startswith("- ["):
            memory_id = line[3:line.index("]")]
            assert manager.get(memory_id, namespace="n").content in line


def test_nothing_relevant_gives_an_empty_block(manager: MemoryManager) -> None:
    tool = MemoryTool(manager, namespace="n")
    tool.add("Lunch on Tuesday was ramen.", "episodic", importance=0.2)
    hits = manager.search("What is the boiling point of tungsten?", namespace="n",
                          min_score=manager.retriever.settings.min_score)
    assert hits == []
    assert tool.get_context_for_query("What is the boiling point of tungsten?") == ""


def test_min_score_is_a_typed_4xx(api: tuple[AsgiApi, MemoryManager]) -> None:
    call, _ = api
    r = call("POST", "/v1/search", params=NS, headers=A, json={"query": "x", "min_score": 2})
    assert r.status_code == 422


def test_a_memory_that_fits_beside_the_header_is_always_shown(manager: MemoryManager) -> None:
    # ids are random, and so is the token count of a line that carries one: the block
    # pays the standing facts' header only when it shows standing facts (it once held
    # that room back and left the answer out for about one id in seven)
    counter = default_token_counter()
    for n in range(20):
        tool = MemoryTool(manager, namespace=f"n{n}")
        fact = tool.add("The staging database password rotates every Monday.",
                        "semantic")["id"]
        block = tool.get_context_for_query("when does the staging database password rotate?",
                                           max_tokens=80)
        assert f"[{fact[:8]}]" in block and counter.count(block) <= 80


def test_a_block_reads_its_handles_once(api: tuple[AsgiApi, MemoryManager],
                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """Relevant lines and standing facts are named by handles read in one statement
    for the whole block (docs/PERFORMANCE.md, "Short handles"), standing facts the
    search also found included."""
    call, mm = api
    ids = [add(call, text, memory_type="semantic", importance=0.9) for text in (
        "I'm allergic to peanuts.", "I am vegetarian.", "My sister Ana lives in Porto.")]
    asked: list[list[str]] = []
    short_ids = mm.short_ids

    def counted(memory_ids: Any, **kwargs: Any) -> dict[str, str]:
        asked.append(list(memory_ids))
        return short_ids(memory_ids, **kwargs)

    monkeypatch.setattr(mm, "short_ids", counted)
    ctx = call("POST", "/v1/context", params=NS, headers=A,
               json={"query": "Can you suggest a snack for me?", "max_tokens": 300}).json()
    assert len(asked) == 1 and set(ids) <= set(asked[0])
    assert all(f"[{i[:8]}]" in ctx["context"] for i in ids), ctx["context"]
