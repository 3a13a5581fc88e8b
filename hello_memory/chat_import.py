"""Import chat history: ChatGPT's ``conversations.json``, Claude's export, or a
generic JSON-lines file, one episodic memory per turn.

>>> from hello_memory.chat_import import import_chats                 # doctest: +SKIP
>>> import_chats(mm, "conversations.json", "chatgpt", namespace="me")  # doctest: +SKIP
{'conversations': 12, 'turns': 340, 'imported': 340, 'skipped': 0, 'left_out': 3}

Each turn keeps its real time as the memory's ``event_time``, its conversation as the
``session_id`` (so search adds neighbouring turns of the same conversation), and its
role, source and conversation title in ``metadata``. A turn's memory id is derived
from the namespace, the source and the turn's own id (or its place in the
conversation), so importing the same file again adds nothing: turns already stored are
skipped. Turns with no text (tool calls, images, system prompts, hidden messages) are
left out and counted.

Formats
  ``chatgpt``: ``conversations.json`` from ChatGPT's data export: a list of
  conversations whose ``mapping`` is a tree of messages; the branch that ends at
  ``current_node`` is imported (the one the user last saw), oldest first.
  ``claude``: ``conversations.json`` from Claude's data export: a list of
  conversations with ``chat_messages`` (``sender`` human / assistant, ``text`` or
  ``content`` blocks, ISO ``created_at``).
  ``jsonl``: one turn per line: ``role``, ``content`` (a string or a list of
  ``{"type": "text", "text": ...}``), ``timestamp`` (ISO 8601, or seconds since the
  epoch), and optionally ``conversation_id`` (or ``session_id``; default: the file's
  name), ``id`` and ``title``.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hello_memory.adapters._common import add_keyed, existing, keyed_item, stable_id
from hello_memory.errors import InvalidInputError
from hello_memory.types import MemoryType
from hello_memory.validation import current_limits, require_namespace

if TYPE_CHECKING:
    from hello_memory.memory.manager import MemoryManager

__all__ = ["FORMATS", "ChatTurn", "import_chats", "read_chats"]

ROLES = {"user": "user", "human": "user", "assistant": "assistant", "ai": "assistant",
         "model": "assistant", "bot": "assistant"}
BATCH = 64


@dataclass(frozen=True)
class ChatTurn:
    """One turn of a conversation, read from an export."""

    conversation: str
    turn_id: str
    role: str
    text: str
    time: datetime | None
    title: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)


def _time(value: Any, where: str) -> datetime | None:
    """ISO 8601 or seconds since the epoch, as aware UTC; None when absent."""
    if value is None or value == "":
        return None
    try:
        if isinstance(value, bool):
            raise TypeError
        if isinstance(value, (int, float)):
            return datetime.fromtimestamp(float(value), tz=timezone.utc)
        text = str(value).strip()
        when = datetime.fromisoformat(text[:-1] + "+00:00" if text.endswith("Z") else text)
    except (TypeError, ValueError, OverflowError, OSError):
        raise InvalidInputError(f"{where}: not a time: {value!r}") from None
    return when.replace(tzinfo=timezone.utc) if when.tzinfo is None else when.astimezone(
        timezone.utc)


def _text_of(content: Any) -> str:
    """The text of a message body: a string, ChatGPT's ``parts`` or content blocks."""
    if isinstance(content, str):
        return content.strip()
    if isinstance(content, Mapping):
        if content.get("content_type") not in (None, "text", "multimodal_text"):
            return ""  # code runs, browsing results, ...: not conversation text
        if "parts" in content:
            return _text_of(content["parts"])
        if content.get("type") in (None, "text") and isinstance(content.get("text"), str):
            return content["text"].strip()
        return ""
    if isinstance(content, list):
        return "\n".join(t for t in (_text_of(p) for p in content) if t).strip()
    return ""


def _load_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except UnicodeDecodeError as exc:
        raise InvalidInputError(f"{path}: not UTF-8 ({exc.reason} at byte {exc.start})"
                                ) from None
    except json.JSONDecodeError as exc:
        raise InvalidInputError(f"{path}: not JSON ({exc.msg}, line {exc.lineno})") from None


def _conversations(data: Any, path: Path, fmt: str) -> list[Mapping[str, Any]]:
    if isinstance(data, Mapping) and isinstance(data.get("conversations"), list):
        data = data["conversations"]
    if not isinstance(data, list) or not all(isinstance(c, Mapping) for c in data):
        raise InvalidInputError(f"{path}: not a {fmt} export (expected a list of "
                                "conversations)")
    return data


def _chatgpt(path: Path) -> Iterator[ChatTurn]:
    for n, conv in enumerate(_conversations(_load_json(path), path, "ChatGPT")):
        conv_id = str(conv.get("conversation_id") or conv.get("id") or f"conversation-{n}")
        mapping = conv.get("mapping")
        if not isinstance(mapping, Mapping):
            raise InvalidInputError(f"{path}: conversation {conv_id} has no 'mapping'")
        title = conv.get("title") or None
        start = _time(conv.get("create_time"), f"{path}: {conv_id}")
        # The branch the user last saw: from current_node up to the root.
        node_id = conv.get("current_node")
        if node_id not in mapping:  # no current node: the last leaf in file order
            leaves = [k for k, v in mapping.items() if not (v or {}).get("children")]
            node_id = leaves[-1] if leaves else None
        branch: list[Mapping[str, Any]] = []
        seen: set[str] = set()
        while node_id is not None and node_id in mapping and node_id not in seen:
            seen.add(node_id)
            node = mapping[node_id] or {}
            branch.append(node)
            node_id = node.get("parent")
        for node in reversed(branch):
            msg = node.get("message")
            if not isinstance(msg, Mapping):
                continue
            role = ROLES.get(str((msg.get("author") or {}).get("role")))
            meta = msg.get("metadata") or {}
            hidden = bool(meta.get("is_visually_hidden_from_conversation"))
            text = "" if role is None or hidden else _text_of(msg.get("content"))
            yield ChatTurn(conv_id, str(msg.get("id") or node.get("id")), role or "other", text,
                           _time(msg.get("create_time"), f"{path}: {conv_id}") or start, title)


def _claude(path: Path) -> Iterator[ChatTurn]:
    for n, conv in enumerate(_conversations(_load_json(path), path, "Claude")):
        conv_id = str(conv.get("uuid") or conv.get("id") or f"conversation-{n}")
        messages = conv.get("chat_messages")
        if not isinstance(messages, list):
            raise InvalidInputError(f"{path}: conversation {conv_id} has no 'chat_messages'")
        title = conv.get("name") or None
        start = _time(conv.get("created_at"), f"{path}: {conv_id}")
        for k, msg in enumerate(messages):
            if not isinstance(msg, Mapping):
                continue
            role = ROLES.get(str(msg.get("sender")))
            text = _text_of(msg.get("content")) if msg.get("content") else ""
            text = text or _text_of(msg.get("text"))
            yield ChatTurn(conv_id, str(msg.get("uuid") or k), role or "other",
                           text if role else "",
                           _time(msg.get("created_at"), f"{path}: {conv_id}") or start, title)


def _jsonl(path: Path) -> Iterator[ChatTurn]:
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except UnicodeDecodeError as exc:
        raise InvalidInputError(f"{path}: not UTF-8 ({exc.reason} at byte {exc.start})"
                                ) from None
    places: dict[str, int] = {}
    for n, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as exc:
            raise InvalidInputError(f"{path}:{n}: not JSON ({exc.msg})") from None
        if not isinstance(row, Mapping) or "role" not in row or "content" not in row:
            raise InvalidInputError(f"{path}:{n}: a turn needs 'role' and 'content'")
        conv = str(row.get("conversation_id") or row.get("session_id") or path.stem)
        place = places[conv] = places.get(conv, -1) + 1
        role = ROLES.get(str(row["role"]).lower())
        yield ChatTurn(conv, str(row.get("id") or place), role or "other",
                       _text_of(row["content"]) if role else "",
                       _time(row.get("timestamp", row.get("time")), f"{path}:{n}"),
                       row.get("title") or None)


FORMATS: dict[str, Callable[[Path], Iterator[ChatTurn]]] = {
    "chatgpt": _chatgpt, "claude": _claude, "jsonl": _jsonl}


def read_chats(path: str | Path, fmt: str) -> list[ChatTurn]:
    """Every turn of an export, in conversation order (the whole file is checked
    before anything is stored)."""
    reader = FORMATS.get(fmt)
    if reader is None:
        raise InvalidInputError(f"unknown chat format {fmt!r}; use one of {', '.join(FORMATS)}")
    path = Path(path)
    if not path.is_file():
        raise InvalidInputError(f"{path}: no such file")
    return list(reader(path))


def _batches(seq: Sequence[ChatTurn], size: int) -> Iterable[Sequence[ChatTurn]]:
    for i in range(0, len(seq), size):
        yield seq[i:i + size]


def import_chats(manager: MemoryManager, path: str | Path, fmt: str, *,
                 namespace: str | None = None, user_id: str | None = None,
                 progress: bool = False, batch_size: int = BATCH) -> dict[str, int]:
    """Store every turn of the export at ``path`` as an episodic memory (module doc).
    Returns counts: conversations, turns read, imported, skipped (already stored),
    left_out (no text). ``progress`` shows a bar on stderr."""
    from tqdm import tqdm

    ns = require_namespace(manager.default_namespace if namespace is None else namespace)
    turns = read_chats(path, fmt)
    kept = [t for t in turns if t.text]
    limit = current_limits().max_content_chars
    counts = {"conversations": len({t.conversation for t in turns}), "turns": len(turns),
              "imported": 0, "skipped": 0, "left_out": len(turns) - len(kept)}
    with tqdm(total=len(kept), desc="import-chats", unit="turn", disable=not progress,
              leave=False) as bar:
        for batch in _batches(kept, batch_size):
            ids = [stable_id("chat-import", ns, fmt, t.conversation, t.turn_id) for t in batch]
            stored = existing(manager, ns, ids)
            items = []
            for memory_id, turn in zip(ids, batch, strict=True):
                if memory_id in stored:
                    continue
                meta: dict[str, Any] = {"role": turn.role, "source": fmt,
                                        "conversation": turn.conversation}
                if turn.title:
                    meta["conversation_title"] = turn.title
                text = turn.text
                if len(text) > limit:
                    text, meta["truncated"] = text[:limit], True
                fields: dict[str, Any] = {"session_id": turn.conversation, "user_id": user_id}
                if turn.time is not None:
                    fields["event_time"] = turn.time
                items.append(keyed_item(memory_id, ns, text, MemoryType.EPISODIC, meta,
                                        **fields))
            add_keyed(manager, items)
            counts["imported"] += len(items)
            counts["skipped"] += len(batch) - len(items)
            bar.update(len(batch))
    return counts
