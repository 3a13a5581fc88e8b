"""Chat-history import (issue 17, part 7): ChatGPT, Claude and JSON-lines exports we
wrote ourselves (tests/data/chats), one episodic memory per turn."""

from __future__ import annotations

import json
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from hello_memory.errors import InvalidInputError
from hello_memory.interfaces.chat_import import import_chats, read_chats
from hello_memory.interfaces.cli import app
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


# --- issue 28, item 8: the whole file is checked before anything is stored -------------
def _turns(n: int, bad_at: int | None = None, bad: str = '"\\ud800 lone surrogate"') -> str:
    """``n`` JSON-lines turns; turn ``bad_at`` (1-based) with ``bad`` as its raw JSON
    content (by default a lone surrogate: it parses, the write path refuses it)."""
    lines = []
    for k in range(1, n + 1):
        content = bad if k == bad_at else json.dumps(f"turn number {k} of the chat")
        lines.append(f'{{"conversation_id": "c", "role": "user", "content": {content}, '
                     f'"timestamp": {1709460000 + k}}}')
    return "\n".join(lines) + "\n"


def test_a_bad_turn_late_in_the_file_stores_nothing(manager: MemoryManager,
                                                    tmp_path: Path) -> None:
    """One bad turn at 200 of 300 (the issue stored the 192 before its batch)."""
    path = tmp_path / "chats.jsonl"
    path.write_text(_turns(300, bad_at=200))
    with pytest.raises(InvalidInputError) as refused:
        import_chats(manager, path, "jsonl", namespace="x")
    assert manager.stats("x")["total"] == 0  # was 192: the batches before turn 200
    assert "chats.jsonl:200" in str(refused.value)
    assert "not valid Unicode" in str(refused.value)
    # and from the CLI: one line, exit 2, the stores not even opened
    data = tmp_path / "cli-data"
    result = CliRunner().invoke(app, ["--data-dir", str(data), "import-chats", str(path)],
                                env={"HELLO_MEMORY_CONFIG": ""})
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert result.exit_code == 2 and len(lines) == 1, result.stderr
    assert ":200" in lines[0] and "nothing of the file was stored" in lines[0]
    assert not data.exists()


DEEP = 5000  # past Python's recursion limit: json.loads raises RecursionError


@pytest.mark.parametrize("body, fmt, message", [
    ("[" * DEEP + "]" * DEEP, "chatgpt", "nested more than 100 levels deep"),
    ('{"role": "user", "content": ' + "[" * DEEP + '"x"' + "]" * DEEP + "}\n", "jsonl",
     "nested more than 100 levels deep"),
    ('[{"uuid": "c", "chat_messages": [{"sender": "human", "text": "hi", '
     '"created_at": "0001-01-01T00:00:00+14:00"}]}]', "claude",
     "outside the representable range once converted to UTC"),
    ('{"role": "user", "content": "hi", "timestamp": "0001-01-01T00:00:00+14:00"}\n',
     "jsonl", "outside the representable range"),
    ('{"role": "user", "content": "hi", "timestamp": 1e300}\n', "jsonl", "not a time"),
    ('{"role": "user", "content": "hi", "timestamp": NaN}\n', "jsonl", "not a time"),
    ('[{"id": "c", "mapping": {"a": {"message": {"author": {"role": "user"}, '
     '"content": {"parts": ["hi"]}, "create_time": -1e20}}}, "current_node": "a"}]',
     "chatgpt", "not a time"),
    ('{"role": "user", "content": "hi", "conversation_id": "\\udc80"}\n', "jsonl",
     "not valid Unicode"),
])
def test_deep_or_impossible_input_is_a_typed_one_line_error(tmp_path: Path, body: str,
                                                            fmt: str, message: str) -> None:
    """Each was exit 1 "unexpected" (RecursionError, OverflowError) or a traceback;
    now one line naming the problem, exit 2, nothing opened or stored."""
    path = tmp_path / "export.json"
    path.write_text(body)
    data = tmp_path / "data"
    result = CliRunner().invoke(app, ["--data-dir", str(data), "import-chats", str(path),
                                      "--format", fmt], env={"HELLO_MEMORY_CONFIG": ""})
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert result.exit_code == 2 and len(lines) == 1, (result.stderr, result.exception)
    assert message in lines[0] and "unexpected" not in lines[0], lines[0]
    assert not data.exists()


def test_malformed_parts_of_an_export_are_never_a_crash(tmp_path: Path) -> None:
    """Parts of the wrong JSON type read as missing (a turn without text is left out),
    never as an AttributeError or TypeError (exit 1)."""
    path = tmp_path / "conversations.json"
    path.write_text(json.dumps([
        {"id": "c1", "title": ["not", "text"], "current_node": ["unhashable"],
         "mapping": {"a": ["not a node"], "b": {"parent": "a", "message": {
             "author": "user", "metadata": ["x"], "content": {"parts": ["hi"]}}}}},
        {"id": "c2", "mapping": {"n": {"message": {"id": "m", "author": {"role": "user"},
                                                    "content": {"parts": ["hello"]},
                                                    "create_time": 1714550460}}}}]))
    turns = read_chats(path, "chatgpt")
    assert [(t.conversation, t.role, t.text) for t in turns] == [
        ("c1", "other", ""), ("c2", "user", "hello")]


def test_a_text_over_the_limit_after_nfkc_is_cut_to_fit(manager: MemoryManager,
                                                         tmp_path: Path) -> None:
    """The limit counts characters after NFKC (U+FDFA becomes 18): a turn within it by
    raw length but over it normalised is cut to fit and marked, not refused."""
    from hello_memory.validation import normalized_length

    limit = manager.limits.max_content_chars
    path = tmp_path / "long.jsonl"
    path.write_text(json.dumps({"role": "user", "content": "\ufdfa" * limit,
                                "timestamp": 1709460000}) + "\n")
    report = import_chats(manager, path, "jsonl", namespace="long")
    assert report["imported"] == 1
    [item] = turns(manager, "long")
    assert item.metadata["truncated"] is True
    assert 0 < normalized_length(item.content) <= limit
