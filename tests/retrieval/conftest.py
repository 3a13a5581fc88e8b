"""Fixtures for the retrieval tests: the scripted LLM endpoint and an LLM client on it."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from llm.scripted_server import ScriptedLLMServer

from hello_memory.llm import OpenAICompatClient


@pytest.fixture
def llm_server() -> Iterator[ScriptedLLMServer]:
    with ScriptedLLMServer() as server:
        yield server
        assert server.unscripted == 0, "the retriever sent an LLM request nothing was scripted for"


@pytest.fixture
def llm(llm_server: ScriptedLLMServer) -> Iterator[OpenAICompatClient]:
    with OpenAICompatClient(llm_server.base_url, "scripted", timeout=2.0, max_retries=0,
                            backoff=0.0) as client:
        yield client
