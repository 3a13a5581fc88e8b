"""Facts that update and conversation extraction with an LLM (issue 15, parts 2 and 4),
against the scripted HTTP server: one structured decision per add, the rules when the
answer fails or does not validate (nothing lost), and remember_conversation /
record_turn with and without the LLM."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest

from hello_memory.config import RetrievalSettings, load_settings
from hello_memory.errors import InvalidInputError
from hello_memory.factory import open_stores
from hello_memory.interfaces.tools.memory_tool import MemoryTool
from hello_memory.llm import OpenAICompatClient
from hello_memory.memory.manager import MemoryManager
from hello_memory.text.entities import RuleExtractor
from hello_memory.types import MemoryType

from .scripted_server import ScriptedLLMServer, ScriptedResponse

T0 = datetime(2023, 1, 10, tzinfo=timezone.utc)
T1 = datetime(2024, 3, 5, tzinfo=timezone.utc)
NS = "people"
# Searches here run without LLM planning and reflection: every LLM request the server
# sees is a supersede decision or an extraction.
NO_LLM_SEARCH = RetrievalSettings(enable_planning=False, enable_reflection=False)


@pytest.fixture(scope="module")
def embedder() -> Any:
    from hello_memory.embedding import SentenceTransformerEmbedder

    return SentenceTransformerEmbedder()


@pytest.fixture
def llm(llm_server: ScriptedLLMServer) -> Iterator[OpenAICompatClient]:
    with OpenAICompatClient(llm_server.base_url, "scripted", timeout=5.0, max_retries=0,
                            backoff=0.0) as client:
        yield client


def make(data: Path, embedder: Any, llm: Any, **kw: Any) -> MemoryManager:
    settings = load_settings(environ={}, data_dir=data)
    return MemoryManager(open_stores(settings, embedder=embedder), extractor=RuleExtractor(),
                         llm=llm, retrieval=NO_LLM_SEARCH, **kw)


@pytest.fixture
def mm(tmp_path: Path, embedder: Any, llm: OpenAICompatClient) -> Iterator[MemoryManager]:
    m = make(tmp_path / "data", embedder, llm)
    yield m
    m.close()


def decision(action: str, targets: list[int] | None = None) -> str:
    return json.dumps({"action": action, "targets": targets or [], "reason": "scripted"})


def test_the_llm_decides_supersede_against_the_nearest(mm: MemoryManager,
                                                        llm_server: ScriptedLLMServer) -> None:
    # The first memory has nothing to be compared with: no request.
    old = mm.add("Tom lives in Oslo.", namespace=NS, event_time=T0)
    assert llm_server.requests == []
    # Words the rules do not read as a move: the LLM's decision is what supersedes.
    llm_server.reply(decision("SUPERSEDE", [1]))
    new = mm.add("Tom packed up and now has a flat in Bergen.", namespace=NS, event_time=T1)
    assert len(llm_server.requests) == 1
    sent = llm_server.requests[0].body["messages"][-1]["content"]
    assert "Tom lives in Oslo." in sent and "Tom packed up" in sent
    got = mm.get(old.id, namespace=NS)
    assert (got.superseded_by, got.valid_to) == (new.id, T1)
    hits = [h.item.content for h in mm.search("Where does Tom live?", namespace=NS)]
    assert "Tom lives in Oslo." not in hits
    assert "Tom lives in Oslo." in [h.item.content for h in mm.search(
        "Where does Tom live?", namespace=NS, as_of=T0)]
    audit = mm.stores.records.audit.list(NS)
    assert any(a["action"] == "supersede" and a["details"]["by"] == "llm" for a in audit)


def test_add_and_noop(mm: MemoryManager, llm_server: ScriptedLLMServer, tmp_path: Path) -> None:
    first = mm.add("Tom lives in Oslo.", namespace=NS, event_time=T0)
    llm_server.reply(decision("ADD"))
    other = mm.add("Tom plays the cello in an orchestra.", namespace=NS, event_time=T1)
    llm_server.reply(decision("NOOP", [1]))
    same = mm.add("Oslo is where Tom lives.", namespace=NS, event_time=T1)
    assert mm.get(first.id, namespace=NS).valid_to is None
    assert mm.get(other.id, namespace=NS).valid_to is None
    restated = mm.get(same.id, namespace=NS)
    assert restated.superseded_by == first.id and restated.valid_to == restated.valid_from
    assert same.superseded_by == first.id  # the returned item says so too
    hits = [h.item.content for h in mm.search("Where does Tom live?", namespace=NS, top_k=10)]
    assert "Oslo is where Tom lives." not in hits and "Tom lives in Oslo." in hits
    out = tmp_path / "e.jsonl"
    assert mm.export_jsonl(out, namespace=NS) == 3  # kept, out of search only


@pytest.mark.parametrize("bad", [
    ["this is not JSON at all", "still not JSON"],  # invalid, and again after the repair
    [decision("SUPERSEDE", [7])],                   # a candidate that was not shown
    [json.dumps({"action": "REPLACE"}), json.dumps({"verdict": "?"})],  # not the schema
    None,                                           # the endpoint fails
])
def test_a_failing_answer_falls_back_to_the_rules(mm: MemoryManager,
                                                  llm_server: ScriptedLLMServer,
                                                  bad: list[str] | None) -> None:
    old = mm.add("Tom lives in Oslo.", namespace=NS, event_time=T0)
    if bad is None:
        llm_server.fail(500)
    else:
        for answer in bad:
            llm_server.reply(answer)
    new = mm.add("Tom moved from Oslo to Bergen.", namespace=NS, event_time=T1)
    assert llm_server.pending == 0
    # the rules decided: the move supersedes; both memories are stored
    got = mm.get(old.id, namespace=NS)
    assert (got.superseded_by, got.valid_to) == (new.id, T1)
    assert mm.get(new.id, namespace=NS).content == "Tom moved from Oslo to Bergen."
    assert mm.llm is not None and mm.llm.stats.fallbacks == 1


def test_supersede_rules_mode_never_asks(tmp_path: Path, embedder: Any,
                                         llm: OpenAICompatClient,
                                         llm_server: ScriptedLLMServer) -> None:
    with make(tmp_path / "r", embedder, llm, supersede="rules") as mm:
        old = mm.add("Tom lives in Oslo.", namespace=NS, event_time=T0)
        mm.add("Tom moved to Bergen.", namespace=NS, event_time=T1)
        assert mm.get(old.id, namespace=NS).valid_to == T1
    assert llm_server.requests == []


# --- conversation extraction ---------------------------------------------------------------
TURNS = [{"role": "user", "content": "Hi! I just moved to Bergen, and I started at Equinor."},
         {"role": "assistant", "content": "Congratulations on the new job!"}]


def test_remember_conversation_with_the_llm(mm: MemoryManager,
                                            llm_server: ScriptedLLMServer) -> None:
    # the facts are stored through add_many: any supersede decision they need is ADD
    llm_server.default = ScriptedResponse(content=decision("ADD"))
    llm_server.reply(json.dumps({"facts": [
        {"content": "The user moved to Bergen.", "memory_type": "semantic", "importance": 0.7},
        {"content": "The user works at Equinor.", "memory_type": "semantic"},
        {"content": "   "}]}))  # a blank fact is dropped
    stored = mm.remember_conversation(TURNS, namespace=NS, extract=True, session_id="s1")
    assert [m.content for m in stored] == ["The user moved to Bergen.",
                                           "The user works at Equinor."]
    assert all(m.memory_type == MemoryType.SEMANTIC and m.session_id == "s1" for m in stored)
    assert stored[0].metadata == {"source": "conversation"} and stored[0].importance == 0.7
    sent = llm_server.requests[0].body["messages"][-1]["content"]
    assert "I just moved to Bergen" in sent


def test_remember_conversation_falls_back_to_the_turns(mm: MemoryManager,
                                                       llm_server: ScriptedLLMServer) -> None:
    llm_server.reply("no JSON here")
    llm_server.reply("nor here")
    llm_server.default = ScriptedResponse(content=decision("ADD"))  # the turns' decisions
    stored = mm.remember_conversation(TURNS, namespace=NS, extract=True)
    assert [(m.content, m.metadata["role"], m.memory_type) for m in stored] == [
        (TURNS[0]["content"], "user", MemoryType.EPISODIC),
        (TURNS[1]["content"], "assistant", MemoryType.EPISODIC)]


def test_remember_conversation_without_an_llm(tmp_path: Path, embedder: Any) -> None:
    with make(tmp_path / "plain", embedder, None, extract_facts=True) as mm:
        stored = mm.remember_conversation([("user", "I moved to Bergen."),
                                           ("assistant", "Noted.")], namespace=NS)
        assert [m.content for m in stored] == ["I moved to Bergen.", "Noted."]
        assert [m.metadata["role"] for m in stored] == ["user", "assistant"]
        with pytest.raises(InvalidInputError, match="role"):
            mm.remember_conversation([("narrator", "once upon a time")], namespace=NS)


def test_record_turn_extracts_when_enabled(tmp_path: Path, embedder: Any,
                                           llm: OpenAICompatClient,
                                           llm_server: ScriptedLLMServer) -> None:
    with make(tmp_path / "tool", embedder, llm, extract_facts=True) as mm:
        tool = MemoryTool(mm, namespace=NS, session_id="chat")
        llm_server.default = ScriptedResponse(content=decision("ADD"))
        llm_server.reply(json.dumps({"facts": [{"content": "The user is allergic to peanuts."}]}))
        out = tool.record_turn("user", "Careful, I'm allergic to peanuts.")
        assert out["ok"] and len(out["facts"]) == 1
        fact = mm.get(out["facts"][0], namespace=NS)
        assert fact.content == "The user is allergic to peanuts." and fact.session_id == "chat"
        assert mm.get(out["id"], namespace=NS).memory_type == MemoryType.WORKING  # turn kept
        llm_server.fail(500)  # the LLM fails: the turn in working memory is the fallback
        failed = tool.record_turn("user", "I also dislike cilantro.")
        assert failed["ok"] and failed["facts"] == []
    with make(tmp_path / "off", embedder, llm) as mm:  # extraction off: no request
        before = len(llm_server.requests)
        assert MemoryTool(mm, namespace=NS).record_turn("user", "Hello there.")["facts"] == []
        assert len(llm_server.requests) == before
