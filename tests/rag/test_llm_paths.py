"""MQE, HyDE and grounded answers against the scripted OpenAI-compatible server."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from llm.scripted_server import ScriptedLLMServer

from hello_memory.config import RagSettings, load_settings
from hello_memory.factory import open_stores
from hello_memory.llm import OpenAICompatClient
from hello_memory.memory.manager import MemoryManager
from hello_memory.rag import RAGPipeline

from .corpus import write_corpus

pytestmark = pytest.mark.slow


@pytest.fixture
def client(llm_server: ScriptedLLMServer) -> Iterator[OpenAICompatClient]:
    with OpenAICompatClient(llm_server.base_url, "m", max_retries=0, backoff=0.0) as c:
        yield c


@pytest.fixture(scope="module")
def corpus_manager(embedder: Any, tmp_path_factory: pytest.TempPathFactory
                   ) -> Iterator[MemoryManager]:
    """One ingested corpus for the module (read-only for the tests)."""
    base = tmp_path_factory.mktemp("llm-kb")
    mm = MemoryManager(open_stores(load_settings(environ={}, data_dir=base / "data"),
                                   embedder=embedder))
    write_corpus(base / "docs")
    RAGPipeline.from_manager(mm).ingest([base / "docs"], namespace="kb")
    yield mm
    mm.close()


@pytest.fixture
def kb(corpus_manager: MemoryManager, client: OpenAICompatClient) -> RAGPipeline:
    return RAGPipeline.from_manager(corpus_manager, llm=client,
                                    settings=RagSettings(mqe_variants=2))


def test_mqe_and_hyde_variants_are_searched_and_fused(kb: RAGPipeline,
                                                      llm_server: ScriptedLLMServer) -> None:
    llm_server.reply(json.dumps({"queries": ["tomato plant light requirements",
                                             "hours of sun for tomatoes", "extra one"]}))
    llm_server.reply("Tomato plants grow best with six to eight hours of direct sunlight.")
    hits = kb.search("what do my red fruit plants need?", namespace="kb", top_k=5)
    assert "Tomatoes need six hours" in hits[0].content
    views = {name for h in hits for name in h.views}
    assert {"query:dense", "mqe1:dense", "mqe1:bm25", "mqe2:dense", "hyde:dense",
            "hyde:bm25"} <= views
    assert not any(name.startswith("mqe3") for name in views)  # capped at mqe_variants
    assert len(llm_server.requests) == 2
    mqe_prompt = llm_server.requests[0].body["messages"][-1]["content"]
    assert "Write 2 different search queries" in mqe_prompt
    assert "red fruit plants" in llm_server.requests[1].body["messages"][-1]["content"]


def test_switches_and_malformed_answers_fall_back(kb: RAGPipeline,
                                                  llm_server: ScriptedLLMServer) -> None:
    hits = kb.search("sourdough starter", namespace="kb", mqe=False, hyde=False)
    assert llm_server.requests == [] and hits
    assert all(name.startswith("query:") for h in hits for name in h.views)
    llm_server.reply("Here are the queries:\n\n")  # MQE: nothing usable in it
    llm_server.fail(500)                            # HyDE fails
    hits = kb.search("sourdough starter", namespace="kb")
    assert hits and "sourdough" in hits[0].content
    assert all(name.startswith("query:") for h in hits for name in h.views)
    assert len(llm_server.requests) == 2  # plain lines: never a JSON repair round trip


def test_mqe_answers_are_read_line_by_line_or_as_json() -> None:
    from hello_memory.rag.search import parse_queries

    assert parse_queries("Here are three queries:\n1. tomato sunlight\n- \"sun hours\"\n"
                         "* light for tomatoes\n") == [
        "tomato sunlight", "sun hours", "light for tomatoes"]
    assert parse_queries('{"queries": ["a b", " ", "c"]}') == ["a b", "c"]
    assert parse_queries('["x", 3]') == ["x"]
    assert parse_queries("") == []


@pytest.mark.parametrize("calls", [3, 2, 1, 0])
def test_llm_call_budget_of_ask(corpus_manager: MemoryManager, client: OpenAICompatClient,
                                llm_server: ScriptedLLMServer, calls: int) -> None:
    """rag.llm_calls caps what one ask costs: the answer first, then HyDE, then MQE;
    each step is one request (MQE needs no JSON repair)."""
    kb = RAGPipeline.from_manager(corpus_manager, llm=client,
                                  settings=RagSettings(mqe_variants=2, llm_calls=calls))
    if calls >= 3:
        llm_server.reply("espresso machine guarantee period\nwarranty length")
    if calls >= 2:
        llm_server.reply("The espresso machine comes with a two year warranty.")
    if calls >= 1:
        llm_server.reply("Two years [1].")
    answer = kb.ask("how long is the espresso machine warranty?", namespace="kb")
    assert len(llm_server.requests) == calls
    prompts = [r.body["messages"][-1]["content"] for r in llm_server.requests]
    assert [p.split()[0] for p in prompts] == ["Write", "Write", "Passages:"][3 - calls:]
    views = {name.split(":")[0] for p in answer.passages for name in p.views}
    assert ("mqe1" in views) == (calls >= 3) and ("hyde" in views) == (calls >= 2)
    assert answer.used_llm == (calls >= 1)
    assert "two years" in answer.text.lower()
    if calls == 0:
        assert "rag.llm_calls is 0" in answer.text
    # the per-call argument overrides the setting
    llm_server.reply("Two years [1].")
    assert kb.ask("how long is the espresso machine warranty?", namespace="kb",
                  llm_calls=1).used_llm
    assert len(llm_server.requests) == calls + 1


def test_ask_answers_with_numbered_citations(kb: RAGPipeline,
                                             llm_server: ScriptedLLMServer) -> None:
    llm_server.reply(json.dumps({"queries": []}))
    llm_server.reply("The espresso machine warranty lasts two years.")
    llm_server.reply("The warranty lasts two years [1].")
    answer = kb.ask("how long is the espresso machine warranty?", namespace="kb",
                    max_context_tokens=300)
    assert answer.used_llm and answer.text == "The warranty lasts two years [1]."
    assert [c.number for c in answer.citations] == [1]
    assert answer.citations[0].source.endswith("warranty.pdf")
    prompt = llm_server.requests[-1].body["messages"]
    assert "[1] " in prompt[-1]["content"] and "two years" in prompt[-1]["content"]
    assert "cite" in prompt[0]["content"].lower()
    assert answer.context_tokens <= 300


def test_ask_falls_back_to_passages_when_the_llm_fails(kb: RAGPipeline,
                                                       llm_server: ScriptedLLMServer) -> None:
    kb.settings = kb.settings.model_copy(update={"mqe": False, "hyde": False})
    llm_server.fail(503)
    answer = kb.ask("when is the zeppelin launch?", namespace="kb")
    assert not answer.used_llm and "zeppelin" in answer.text
    assert answer.citations and answer.citations[0].heading_path == "Quarterly Plan"
