"""HelloMemoryStore: LangGraph's BaseStore over hello-memory, used by a real StateGraph."""

from __future__ import annotations

import operator
import time
from typing import Annotated, Any, TypedDict

import pytest
from langgraph.config import get_store
from langgraph.graph import END, START, StateGraph
from langgraph.store.base import GetOp, InvalidNamespaceError, PutOp, SearchOp

from hello_memory.errors import InvalidInputError
from hello_memory.interfaces.adapters.langgraph import HelloMemoryStore
from hello_memory.interfaces.aio import AsyncMemoryManager
from hello_memory.memory.manager import MemoryManager


@pytest.fixture
def store(manager: MemoryManager) -> HelloMemoryStore:
    return HelloMemoryStore(manager)


def test_put_get_replace_delete(store: HelloMemoryStore, manager: MemoryManager) -> None:
    ns = ("users", "alice", "memories")
    store.put(ns, "food", {"text": "Alice is allergic to peanuts", "kind": "health"})
    item = store.get(ns, "food")
    assert item is not None
    assert item.value == {"text": "Alice is allergic to peanuts", "kind": "health"}
    assert item.key == "food" and item.namespace == ns
    # a memory of ours, in the joined namespace, searchable by every interface
    hit = manager.search("what can Alice not eat?", namespace="users/alice/memories")[0]
    assert "peanuts" in hit.item.content
    first_created = item.created_at

    time.sleep(0.01)
    store.put(ns, "food", {"text": "Alice is allergic to shellfish", "kind": "health"})
    again = store.get(ns, "food")
    assert again is not None and again.value["text"].endswith("shellfish")
    assert again.created_at == first_created and again.updated_at > first_created
    assert manager.stats("users/alice/memories")["total"] == 1   # replaced, not added

    store.delete(ns, "food")
    assert store.get(ns, "food") is None
    assert manager.stats("users/alice/memories")["total"] == 0
    store.delete(ns, "food")  # deleting a missing key is a no-op


def test_search_query_filter_prefix(store: HelloMemoryStore) -> None:
    store.put(("users", "alice"), "a1", {"text": "Alice lives in Berlin", "kind": "home"})
    store.put(("users", "alice"), "a2", {"text": "Alice plays the cello", "kind": "hobby"})
    store.put(("users", "bob"), "b1", {"text": "Bob lives in Lyon", "kind": "home"})
    store.put(("notes",), "n1", {"text": "Buy milk", "kind": "todo"})

    found = store.search(("users", "alice"), query="where does Alice live?", limit=1)
    assert [r.key for r in found] == ["a1"] and found[0].score is not None

    # a prefix reaches every namespace under it; nothing outside it
    homes = store.search(("users",), query="which city do they live in", limit=10)
    assert {r.key for r in homes} >= {"a1", "b1"} and "n1" not in {r.key for r in homes}
    scores = [r.score or 0.0 for r in homes]
    assert scores == sorted(scores, reverse=True)

    only_home = store.search(("users",), query="who lives where", filter={"kind": "home"})
    assert {r.key for r in only_home} == {"a1", "b1"}
    assert [r.key for r in store.search((), filter={"kind": {"$ne": "home"}}, limit=10)
            ] == ["n1", "a2"]  # no query: newest first
    assert len(store.search((), limit=2)) == 2
    assert [r.key for r in store.search((), limit=2, offset=3)] == ["a1"]


def test_index_false_and_fields(store: HelloMemoryStore, manager: MemoryManager) -> None:
    store.put(("kb",), "secret", {"text": "The vault code is 4711"}, index=False)
    store.put(("kb",), "doc", {"title": "Router manual", "body": "Hold reset for ten seconds",
                               "n": 3}, index=["body"])
    assert store.get(("kb",), "secret") is not None
    assert "secret" not in {r.key for r in store.search(("kb",), query="vault code")}
    assert "secret" in {r.key for r in store.search(("kb",))}
    content = {h.item.content for h in manager.search("reset", namespace="kb")}
    assert "Hold reset for ten seconds" in content


def test_list_namespaces(store: HelloMemoryStore) -> None:
    for ns in [("a", "b", "c"), ("a", "b", "d", "e"), ("a", "c", "f"), ("x", "y/z")]:
        store.put(ns, "k", {"text": "something about " + "/".join(ns)})
    assert store.list_namespaces(prefix=("a", "b"), max_depth=3) == [("a", "b", "c"),
                                                                     ("a", "b", "d")]
    assert store.list_namespaces(suffix=("f",)) == [("a", "c", "f")]
    assert store.list_namespaces(prefix=("a", "*", "c")) == [("a", "b", "c")]
    assert ("x", "y/z") in store.list_namespaces()   # a "/" inside a label survives
    assert store.get(("x", "y/z"), "k") is not None
    assert store.get(("x", "y", "z"), "k") is None
    with pytest.raises(InvalidNamespaceError):
        store.put(("a.b",), "k", {"text": "x"})


def test_batch_and_memories_from_other_interfaces(store: HelloMemoryStore,
                                                  manager: MemoryManager) -> None:
    mem = manager.add("Carol prefers window seats", "semantic", namespace="carol")
    results = store.batch([
        PutOp(("carol",), "k", {"text": "Carol flies to Oslo on Monday"}),
        GetOp(("carol",), "k"),
        GetOp(("carol",), mem.id),
        SearchOp(("carol",), query="seat preference", limit=5),
    ])
    assert results[0] is None and results[1].value["text"].startswith("Carol flies")
    assert results[2].value["content"] == "Carol prefers window seats"
    assert results[3][0].key == mem.id


def test_ttl(manager: MemoryManager) -> None:
    store = HelloMemoryStore(manager, ttl={"default_ttl": None, "refresh_on_read": True})
    store.put(("t",), "short", {"text": "gone soon"}, ttl=0.001)   # 60 ms
    store.put(("t",), "long", {"text": "stays"}, ttl=60)
    store.put(("t",), "forever", {"text": "no ttl"})
    time.sleep(0.2)
    assert store.get(("t",), "short") is None
    assert {r.key for r in store.search(("t",))} == {"long", "forever"}
    assert manager.stats("t")["total"] == 2          # the expired one was deleted
    store.put(("t",), "again", {"text": "expires"}, ttl=0.001)
    time.sleep(0.2)
    assert store.sweep_ttl() == 1


class State(TypedDict):
    user: str
    message: str
    replies: Annotated[list[str], operator.add]


def remember(state: State) -> dict[str, Any]:
    store = get_store()
    if state["message"].startswith("remember:"):
        fact = state["message"].removeprefix("remember:").strip()
        store.put(("memories", state["user"]), str(len(store.search(("memories",
                  state["user"]), limit=100))), {"text": fact})
        return {"replies": [f"noted: {fact}"]}
    return {}


def recall(state: State) -> dict[str, Any]:
    store = get_store()
    found = store.search(("memories", state["user"]), query=state["message"], limit=1)
    return {"replies": [found[0].value["text"] if found else "I don't know"]}


def graph_for(store: HelloMemoryStore) -> Any:
    builder = StateGraph(State)
    builder.add_node("remember", remember)
    builder.add_node("recall", recall)
    builder.add_edge(START, "remember")
    builder.add_edge("remember", "recall")
    builder.add_edge("recall", END)
    return builder.compile(store=store)


def test_state_graph_uses_the_store(store: HelloMemoryStore, manager: MemoryManager) -> None:
    graph = graph_for(store)
    graph.invoke({"user": "dana", "message": "remember: Dana's cat is called Miso",
                  "replies": []})
    graph.invoke({"user": "dana", "message": "remember: Dana works as a pilot", "replies": []})
    out = graph.invoke({"user": "dana", "message": "what is the name of my cat?",
                        "replies": []})
    assert out["replies"] == ["Dana's cat is called Miso"]
    assert manager.stats("memories/dana")["total"] == 2


async def test_state_graph_async(manager: MemoryManager) -> None:
    async with AsyncMemoryManager(manager, max_workers=2) as amm:
        graph = graph_for(HelloMemoryStore(amm))
        await graph.ainvoke({"user": "erin", "message": "remember: Erin speaks Finnish",
                             "replies": []})
        out = await graph.ainvoke({"user": "erin", "message": "which language do I speak?",
                                   "replies": []})
        assert out["replies"][-1] == "Erin speaks Finnish"
        store = HelloMemoryStore(amm)
        await store.aput(("async",), "k", {"text": "written from a coroutine"})
        got = await store.aget(("async",), "k")
        assert got is not None and got.value == {"text": "written from a coroutine"}
        assert await store.alist_namespaces(prefix=("async",)) == [("async",)]


def test_a_bad_replacement_keeps_the_old_item(store: HelloMemoryStore) -> None:
    store.put(("u",), "k", {"text": "the original"})
    with pytest.raises(InvalidInputError):
        store.put(("u",), "k", {"text": "x" * 200_000})     # over limits.max_content_chars
    item = store.get(("u",), "k")
    assert item is not None and item.value == {"text": "the original"}
