"""Chat-history import (issue 17, part 7): ChatGPT, Claude and JSON-lines exports we
wrote ourselves (tests/data/chats), one episodic memory per turn."""

from __future__ import annotations

import json
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from hello_memory.chat_import import import_chats, read_chats
from hello_memory.cli import app
from hello_memory.errors import InvalidInputError
from hello_memory.memory.manager import MemoryManager
from hello_memory.stores.records import ItemFilter

CHATS = Path(__file__).parent.parent / "data" / "chats"

pytestmark = pytest.mark.slow  # the real embedding model


def turns(manager: MemoryManager, ns: str) -> list[Any]:
    return manager.stores.records.memories.list_items(ns, ItemFilter())


def test_chatgpt_export(manager: MemoryManager) -> None:
    report = import_chats(manager, CHATS / "chatgpt.json", "chatgpt", namespace="me")
    # system prompt (hidden), the regenerated branch and the tool call are not imported
    assert report == {"conversations": 2, "turns": 7, "imported": 5, "skipped": 0,
                      "left_out": 2}
    items = turns(manager, "me")
    assert [i.content for i in items] == [
        "I'm flying to Lisbon on May 20th with my wife Ana.",
        "Lovely! Lisbon in late May is warm. Shall I suggest neighbourhoods?",
        "Yes please, somewhere quiet: Ana hates noise.",
        "I'm vegetarian, what can I cook with chickpeas?",
        "Try a chana masala or roasted chickpeas."]
    first = items[0]
    assert first.memory_type.value == "episodic"
    assert first.event_time == datetime.fromtimestamp(1714550460, tz=timezone.utc)
    assert first.session_id == "c0ffee00-0000-4000-8000-000000000001"
    assert first.metadata == {"role": "user", "source": "chatgpt",
                              "conversation": first.session_id,
                              "conversation_title": "Trip planning"}
    assert items[1].metadata["role"] == "assistant"
    # the turns are memories like any other: the one search finds them
    hit = manager.search("who is travelling to Portugal?", top_k=1, namespace="me")[0]
    assert "Lisbon" in hit.item.content

    again = import_chats(manager, CHATS / "chatgpt.json", "chatgpt", namespace="me")
    assert again["imported"] == 0 and again["skipped"] == 5
    assert len(turns(manager, "me")) == 5


def test_claude_export(manager: MemoryManager) -> None:
    report = import_chats(manager, CHATS / "claude.json", "claude", namespace="me",
                          user_id="u1")
    assert report == {"conversations": 2, "turns": 4, "imported": 3, "skipped": 0,
                      "left_out": 1}   # the image-only turn
    items = turns(manager, "me")
    assert items[0].content.startswith("My tomatoes keep splitting")
    assert items[0].metadata["role"] == "user" and items[1].metadata["role"] == "assistant"
    assert items[0].user_id == "u1"
    assert items[-1].event_time == datetime(2024, 6, 10, 10, 0, 5, tzinfo=timezone.utc)
    assert items[-1].session_id == "5e1f0000-0000-4000-8000-00000000000b"
    assert import_chats(manager, CHATS / "claude.json", "claude",
                        namespace="me")["skipped"] == 3


def test_jsonl_and_namespaces(manager: MemoryManager, tmp_path: Path) -> None:
    report = import_chats(manager, CHATS / "chats.jsonl", "jsonl", namespace="support")
    assert report == {"conversations": 2, "turns": 5, "imported": 4, "skipped": 0,
                      "left_out": 1}   # the system line
    items = turns(manager, "support")
    assert {i.session_id for i in items} == {"support-1", "support-2"}
    assert items[2].event_time == datetime.fromtimestamp(1709460000, tz=timezone.utc)
    assert items[1].content == "Sorry! Order 4711 left the warehouse on Feb 28th."
    # the same file into another namespace is a second, separate copy
    assert import_chats(manager, CHATS / "chats.jsonl", "jsonl",
                        namespace="other")["imported"] == 4
    # a turn appended to the file later is the only one a rerun adds
    grown = tmp_path / "chats.jsonl"
    grown.write_text((CHATS / "chats.jsonl").read_text() + json.dumps(
        {"conversation_id": "support-2", "role": "user", "content": "Thanks!",
         "timestamp": 1709460100}) + "\n")
    assert import_chats(manager, grown, "jsonl", namespace="support")["imported"] == 1
    again = import_chats(manager, grown, "jsonl", namespace="support")
    assert again["skipped"] == 5


@pytest.mark.parametrize("body, fmt, message", [
    ("{}", "chatgpt", "expected a list of conversations"),
    ('[{"title": "x"}]', "chatgpt", "has no 'mapping'"),
    ('[{"uuid": "x"}]', "claude", "has no 'chat_messages'"),
    ('{"role": "user"}\n', "jsonl", "needs 'role' and 'content'"),
    ('{"role": "user", "content": "hi", "timestamp": "yesterday"}\n', "jsonl", "not a time"),
    ("not json", "claude", "not JSON"),
])
def test_bad_exports_store_nothing(manager: MemoryManager, tmp_path: Path, body: str,
                                   fmt: str, message: str) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text(body)
    with pytest.raises(InvalidInputError, match=message):
        import_chats(manager, bad, fmt, namespace="x")
    assert manager.stats("x")["total"] == 0
    with pytest.raises(InvalidInputError, match="unknown chat format"):
        read_chats(bad, "whatsapp")


def test_cli_import_chats(tmp_path: Path) -> None:
    runner = CliRunner()
    data = tmp_path / "data"

    def cli(*args: str) -> Any:
        return runner.invoke(app, ["--data-dir", str(data), *args])

    first = cli("import-chats", str(CHATS / "claude.json"), "--format", "claude", "-n", "me")
    assert first.exit_code == 0, first.output
    assert "imported 3, skipped 0" in first.stdout
    again = cli("import-chats", str(CHATS / "claude.json"), "--format", "claude", "-n", "me",
                "--json")
    assert json.loads(again.stdout)["skipped"] == 3
    assert cli("import-chats", str(CHATS / "claude.json"), "--format", "nope").exit_code == 2
    assert cli("import-chats", str(tmp_path / "missing.json")).exit_code == 3
