"""MemoryTool: both calling styles, full ids, budgets, context blocks, turn capture."""

from __future__ import annotations

import json
import re

import pytest

from hello_memory.errors import InvalidInputError
from hello_memory.interfaces.tools import ACTIONS, MemoryTool
from hello_memory.memory.manager import MemoryManager
from hello_memory.text.tokens import default_token_counter
from hello_memory.types import MemoryStatus, MemoryType

pytestmark = pytest.mark.slow


def test_add_search_update_remove_by_full_id(manager: MemoryManager) -> None:
    tool = MemoryTool(manager, namespace="alice")
    added = tool.run({"action": "add", "content": "Alice is allergic to peanuts.",
                      "memory_type": "semantic", "importance": 0.9})
    assert added["ok"] and len(added["id"]) == 36  # a full UUID, never a prefix
    tool.run({"action": "add", "content": "Alice flew to Lisbon last spring.",
              "memory_type": "episodic"})
    found = tool.run({"action": "search", "query": "what food must Alice avoid?", "top_k": 2})
    assert found["ok"] and found["hits"][0]["id"] == added["id"]
    top = found["hits"][0]  # brief by default: id, text, date, type, score (issue 29)
    assert set(top) == {"id", "text", "date", "type", "score"}
    assert top["score"] > found["hits"][1]["score"] and top["type"] == "semantic"
    full = tool.run({"action": "search", "query": "what food must Alice avoid?",
                     "top_k": 2, "detail": True})["hits"][0]  # the compact full view
    assert full["id"] == top["id"] and set(full["views"]) >= {"semantic"}
    assert full["breakdown"] and full["content"] == top["text"]
    # the brief text says how many hits, not the hits again; detail renders them, ids too
    assert found["text"] == "2 memories: in hits, best first"
    assert added["id"] in tool.run({"action": "search", "query": "what food must Alice avoid?",
                                    "top_k": 2, "detail": True})["text"]
    # the id from search is enough to update and remove
    upd = tool.run({"action": "update", "memory_id": top["id"], "importance": 0.4})
    assert upd["ok"] and manager.get(added["id"], namespace="alice").importance == 0.4
    rem = tool.run({"action": "remove", "memory_id": added["id"]})
    assert rem["ok"] and rem["removed"] is True
    assert manager.stats("alice")["by_type"]["semantic"] == 0
    # an unknown id is an error, as over REST (404) and MCP
    again = tool.run({"action": "remove", "memory_id": added["id"]})
    assert not again["ok"] and again["error"]["type"] == "NotFoundError"


def test_function_calling_schemas_and_dispatch(manager: MemoryManager) -> None:
    tool = MemoryTool(manager, namespace="n")
    schemas = tool.schemas()
    names = [s["function"]["name"] for s in schemas]
    # media actions only with perceptual memory on (issue 29): off here
    media = {"add_media_path", "search_media"}
    assert names == [f"memory_{a}" for a in ACTIONS if a not in media]
    search = next(s["function"] for s in schemas if s["function"]["name"] == "memory_search")
    assert search["parameters"]["properties"]["detail"]["default"] is False
    add = next(s["function"] for s in schemas if s["function"]["name"] == "memory_add")
    assert add["parameters"]["required"] == ["content"]
    assert add["parameters"]["additionalProperties"] is False
    assert '"title"' not in json.dumps(schemas)  # pydantic's titles are stripped
    assert all(s["function"]["description"] for s in schemas)
    out = tool.call("memory_add", json.dumps({"content": "The deploy runs on Fridays.",
                                              "memory_type": "semantic"}))
    assert out["ok"]
    assert tool.call("memory_stats", "{}")["by_type"]["semantic"] == 1


def test_invalid_calls_are_reported_and_write_nothing(manager: MemoryManager) -> None:
    tool = MemoryTool(manager, namespace="n")
    cases = [
        tool.run({"action": "fly"}),
        tool.run({"action": "add", "content": "   "}),
        tool.run({"action": "add", "content": "x", "importance": 3}),
        tool.run({"action": "add", "content": "x", "colour": "red"}),
        tool.call("memory_add", "{not json"),
        tool.run({"action": "update", "memory_id": "no-such-id", "importance": 0.2}),
    ]
    assert [c["ok"] for c in cases] == [False] * len(cases)
    assert {c["error"]["type"] for c in cases} >= {"InvalidInputError", "EmptyContentError",
                                                   "NotFoundError"}
    assert manager.stats("n")["total"] == 0
    # the typed methods raise instead
    with pytest.raises(InvalidInputError):
        tool.record_turn("narrator", "hello")


def test_clear_needs_confirm_and_stays_in_its_namespace(manager: MemoryManager) -> None:
    a, b = MemoryTool(manager, namespace="a"), MemoryTool(manager, namespace="b")
    a.add("Memory of a.", "episodic")
    b.add("Memory of b.", "episodic")
    refused = a.run({"action": "clear"})
    assert not refused["ok"] and manager.stats("a")["total"] == 1
    assert a.run({"action": "clear", "confirm": True})["ok"]
    assert manager.stats("a")["total"] == 0 and manager.stats("b")["total"] == 1
    assert b.run({"action": "search", "query": "memory of a"})["hits"] != []
    assert all("of a" not in m["text"]
               for m in b.run({"action": "search", "query": "memory of a"})["hits"])


def test_text_stays_under_the_token_budget(manager: MemoryManager) -> None:
    tool = MemoryTool(manager, namespace="n", token_budget=60)
    manager.add_many([{"content": f"Note {i}: the quarterly report for region {i} is due "
                                  f"on the {i}th and needs three signatures.",
                       "namespace": "n", "memory_type": "episodic"} for i in range(12)])
    out = tool.search("quarterly report", top_k=12, detail=True)  # text renders the hits
    counter = default_token_counter()
    assert counter.count(out["text"]) <= 60
    assert len(out["hits"]) == 12  # the structured part is complete
    assert "more not shown" in out["text"]


def test_summary_forget_restore_consolidate(manager: MemoryManager) -> None:
    tool = MemoryTool(manager, namespace="n")
    keep = tool.add("Bob's birthday is on March 3.", "semantic", 0.9)["id"]
    drop = tool.add("It was cloudy at noon.", "episodic", 0.05)["id"]
    summary = tool.summary()
    assert summary["total"] == 2 and summary["memories"]["semantic"][0]["id"] == keep
    forgot = tool.run({"action": "forget", "strategy": "importance", "threshold": 0.1})
    assert forgot["ids"] == [drop]
    assert manager.stores.records.memories.get_item("n", drop).status is MemoryStatus.FORGOTTEN
    assert manager.restore([drop], namespace="n") == 1
    would = tool.run({"action": "forget", "ids": [drop], "dry_run": True})
    assert would["ids"] == [drop]
    assert manager.stores.records.memories.get_item("n", drop).status is MemoryStatus.ACTIVE
    missing = tool.run({"action": "forget", "ids": [drop, "no-such-id"]})
    assert missing["error"]["type"] == "NotFoundError"
    assert manager.stores.records.memories.get_item("n", drop).status is MemoryStatus.ACTIVE
    by_id = tool.run({"action": "forget", "ids": [drop]})
    assert by_id["ids"] == [drop]
    tool.record_turn("user", "Remember that my train leaves at 7:40 tomorrow!",
                     importance=0.9)
    moved = tool.run({"action": "consolidate", "from_type": "working", "to_type": "episodic",
                      "importance_threshold": 0.8})
    assert moved["ok"] and len(moved["promoted"]) == 1
    assert manager.working.count("n") == 0


def test_context_block_and_turn_capture(manager: MemoryManager) -> None:
    tool = MemoryTool(manager, namespace="n")
    fact = tool.add("The staging database password rotates every Monday.", "semantic")["id"]
    tool.add("Lunch on Tuesday was ramen.", "episodic")
    turn = tool.record_turn("user", "I will be on holiday in Japan next week.")
    item = manager.get(turn["id"], namespace="n")
    assert item.memory_type is MemoryType.WORKING and item.metadata["role"] == "user"
    block = tool.get_context_for_query("when does the staging database password rotate?",
                                       max_tokens=80)
    assert f"[{fact[:8]}]" in block and "rotates every Monday" in block
    assert default_token_counter().count(block) <= 80
    assert tool.get_context_for_query("staging database password", max_tokens=5) == ""


# --- the context block a person agrees with (issue 13) ------------------------------
def test_context_lines_print_date_and_type_once(manager: MemoryManager) -> None:
    tool = MemoryTool(manager, namespace="n")
    fact = tool.add("The staging database password rotates every Monday.", "semantic")["id"]
    tool.add("Lunch on Tuesday was ramen.", "episodic")
    # every hit of the search in the block (no relevance floor): each kind of line
    manager.retriever.settings = manager.retriever.settings.model_copy(
        update={"min_score": 0.0})
    tool.record_turn("user", "The staging database is slow today.")
    block = tool.get_context_for_query("when does the staging database password rotate?")
    header, *lines = block.splitlines()
    [line] = [x for x in lines if fact[:8] in x]
    assert re.fullmatch(rf"- \[{fact[:8]}\] \d{{4}}-\d{{2}}-\d{{2}} semantic: The staging database "
                        r"password rotates every Monday\.", line), line
    assert len(lines) >= 2
    for line in lines:
        assert line.startswith("- ["), line
        assert len(re.findall(r"\d{4}-\d{2}-\d{2}", line)) == 1, line
        assert len(re.findall(r"\b(?:semantic|episodic|working)\b", line)) == 1, line
    assert header == "Relevant memories (id, date, type: content):"


def test_context_leaves_out_the_turn_being_answered(manager: MemoryManager) -> None:
    tool = MemoryTool(manager, namespace="n")
    fact = tool.add("The staging database password rotates every Monday.", "semantic")["id"]
    earlier = tool.record_turn("user", "Remind me about the staging database password.")["id"]
    query = "When does the staging database password rotate?"
    turn = tool.record_turn("user", query)["id"]
    block = tool.get_context_for_query(query)
    assert turn[:8] not in block and query not in block
    lines = block.splitlines()[1:]
    assert fact[:8] in lines[0]  # a stored memory first, never the conversation itself
    assert all(fact[:8] in x or earlier[:8] in x for x in lines)
    # The same text typed with other case and spacing is the same turn.
    assert turn[:8] not in tool.get_context_for_query("  when does the STAGING database "
                                                  "password rotate? ")


@pytest.mark.parametrize("query", ["Can you suggest a snack for my flight?",
                                   "What food should I avoid?"])
def test_context_keeps_standing_facts_in_view(manager: MemoryManager, query: str) -> None:
    tool = MemoryTool(manager, namespace="n")
    allergy = tool.add("The user is allergic to peanuts.", "semantic")["id"]
    for note in ("Lunch on Tuesday was ramen.", "The team standup moved to 9:30.",
                 "We flew to Lisbon for the conference last spring.",
                 "The printer on the third floor is out of toner."):
        tool.add(note, "episodic")
    tool.add("The deploy pipeline runs on Fridays.", "semantic")
    block = tool.get_context_for_query(query)
    assert f"[{allergy[:8]}]" in block and "allergic to peanuts" in block
    counter = default_token_counter()
    assert counter.count(block) <= tool.context_tokens
    # Under a tight budget the standing share stays small and the block within budget.
    tight = tool.get_context_for_query(query, max_tokens=40)
    assert counter.count(tight) <= 40
