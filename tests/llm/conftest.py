"""Fixtures for the LLM client tests: a scripted local chat endpoint."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from .scripted_server import ScriptedLLMServer


@pytest.fixture
def llm_server() -> Iterator[ScriptedLLMServer]:
    """A started :class:`ScriptedLLMServer`; fails the test if it got an unscripted
    request."""
    with ScriptedLLMServer() as server:
        yield server
        assert server.unscripted == 0, "the client sent a request nothing was scripted for"
