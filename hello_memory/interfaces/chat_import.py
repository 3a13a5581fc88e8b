"""Import chat history: ChatGPT's ``conversations.json``, Claude's export, or a
generic JSON-lines file, one episodic memory per turn.

>>> from hello_memory.interfaces.chat_import import import_chats                 # doctest: +SKIP
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

The whole file is checked before anything is stored (issue 28, item 8): it is parsed
(JSON nested at most :data:`MAX_JSON_DEPTH` levels), every turn is read and turned into
the memory it will be (times converted to UTC, text, ids and metadata validated as the
write path validates them), and only then is the first batch written. Any problem is
one :class:`~hello_memory.errors.InvalidInputError` naming the file and the turn (the
CLI's exit 2); nothing of the file is stored.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hello_memory.errors import HelloMemoryError, InvalidInputError
from hello_memory.interfaces.adapters._common import add_keyed, existing, keyed_item, stable_id
from hello_memory.types import MemoryItem, MemoryType
from hello_memory.validation import (
    DEFAULT_LIMITS,
    check_text,
    normalized_length,
    require_namespace,
    validate_time,
)

if TYPE_CHECKING:
    from hello_memory.config import LimitsSettings
    from hello_memory.memory.manager import MemoryManager

__all__ = ["FORMATS", "MAX_JSON_DEPTH", "ChatTurn", "import_chats", "prepare_chats",
           "read_chats"]

ROLES = {"user": "user", "human": "user", "assistant": "assistant", "ai": "assistant",
         "model": "assistant", "bot": "assistant"}
BATCH = 64
# Deeper JSON is refused before it is parsed: an export is nested about ten levels;
# Python's parser would raise RecursionError near 1,000.
MAX_JSON_DEPTH = 100
# A JSON string (skipped whole, brackets inside it do not count; an unterminated one
# runs to the end, so no position is scanned twice) or a bracket.
_TOKENS = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*(?:"|\\?\Z)|[\[\]{}]', re.DOTALL)


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
    where: str = ""  # the file (and line) it was read from, for messages


def _mapping(value: Any) -> Mapping[str, Any]:
    """``value`` when it is a JSON object, else an empty one (a malformed part of an
    export reads as missing, never as an AttributeError)."""
    return value if isinstance(value, Mapping) else {}


def _title(value: Any) -> str | None:
    if value is None or value == "" or isinstance(value, (Mapping, list)):
        return None
    return str(value)


def _key(value: Any) -> str | None:
    """An id from the export as text (None when it is missing or not a scalar)."""
    if value is None or value == "" or isinstance(value, (Mapping, list, bool)):
        return None
    return str(value)


def _time(value: Any, where: str) -> datetime | None:
    """ISO 8601 or seconds since the epoch, as aware UTC; None when absent. A time
    outside what UTC can hold (year 1 at +14:00) is a typed error, like a non-time."""
    if value is None or value == "":
        return None
    try:
        if isinstance(value, (bool, Mapping, list)):
            raise TypeError
        if isinstance(value, (int, float)):
            return datetime.fromtimestamp(float(value), tz=timezone.utc)
        text = str(value).strip()
        when = datetime.fromisoformat(text[:-1] + "+00:00" if text.endswith("Z") else text)
    except (TypeError, ValueError, OverflowError, OSError):
        raise InvalidInputError(f"{where}: not a time: {str(value)[:80]!r}") from None
    if when.tzinfo is None:
        return when.replace(tzinfo=timezone.utc)
    try:
        validate_time("time", when)
    except InvalidInputError as exc:
        raise InvalidInputError(f"{where}: {exc}") from None
    return when.astimezone(timezone.utc)


def _check_depth(text: str, where: str) -> None:
    """Refuse JSON nested more than :data:`MAX_JSON_DEPTH` levels, before parsing it
    (one pass over its strings and brackets, no recursion)."""
    depth = 0
    for match in _TOKENS.finditer(text):
        token = match.group()
        if token in "[{":
            depth += 1
            if depth > MAX_JSON_DEPTH:
                line = text.count("\n", 0, match.start()) + 1
                raise InvalidInputError(f"{where}: JSON nested more than {MAX_JSON_DEPTH} "
                                        f"levels deep (line {line})")
        elif token in "]}":
            depth -= 1


def _parse(text: str, where: str) -> Any:
    _check_depth(text, where)
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise InvalidInputError(f"{where}: not JSON ({exc.msg}, line {exc.lineno})") from None
    except RecursionError:  # not reached below MAX_JSON_DEPTH; kept typed all the same
        raise InvalidInputError(f"{where}: JSON nested too deep") from None


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


def _read_text(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise InvalidInputError(f"{path}: not UTF-8 ({exc.reason} at byte {exc.start})"
                                ) from None
    except OSError as exc:
        raise InvalidInputError(f"{path}: cannot be read ({exc.strerror})") from None


def _load_json(path: Path) -> Any:
    return _parse(_read_text(path), str(path))


def _conversations(data: Any, path: Path, fmt: str) -> list[Mapping[str, Any]]:
    if isinstance(data, Mapping) and isinstance(data.get("conversations"), list):
        data = data["conversations"]
    if not isinstance(data, list) or not all(isinstance(c, Mapping) for c in data):
        raise InvalidInputError(f"{path}: not a {fmt} export (expected a list of "
                                "conversations)")
    return data


def _chatgpt(path: Path) -> Iterator[ChatTurn]:
    for n, conv in enumerate(_conversations(_load_json(path), path, "ChatGPT")):
        conv_id = (_key(conv.get("conversation_id")) or _key(conv.get("id"))
                   or f"conversation-{n}")
        where = f"{path}: conversation {conv_id!r}"
        mapping = conv.get("mapping")
        if not isinstance(mapping, Mapping):
            raise InvalidInputError(f"{path}: conversation {conv_id} has no 'mapping'")
        title = _title(conv.get("title"))
        start = _time(conv.get("create_time"), where)
        # The branch the user last saw: from current_node up to the root.
        node_id = _key(conv.get("current_node"))
        if node_id not in mapping:  # no current node: the last leaf in file order
            leaves = [k for k, v in mapping.items() if not _mapping(v).get("children")]
            node_id = leaves[-1] if leaves else None
        branch: list[Mapping[str, Any]] = []
        seen: set[str] = set()
        while node_id is not None and node_id in mapping and node_id not in seen:
            seen.add(node_id)
            node = _mapping(mapping[node_id])
            branch.append(node)
            node_id = _key(node.get("parent"))
        for k, node in enumerate(reversed(branch)):
            msg = node.get("message")
            if not isinstance(msg, Mapping):
                continue
            role = ROLES.get(str(_mapping(msg.get("author")).get("role")))
            hidden = bool(_mapping(msg.get("metadata")).get("is_visually_hidden_from_conversation"))
            text = "" if role is None or hidden else _text_of(msg.get("content"))
            turn_id = _key(msg.get("id")) or _key(node.get("id")) or str(k)
            yield ChatTurn(conv_id, turn_id, role or "other", text,
                           _time(msg.get("create_time"), f"{where}, message {turn_id!r}")
                           or start, title, where=f"{where}, message {turn_id!r}")


def _claude(path: Path) -> Iterator[ChatTurn]:
    for n, conv in enumerate(_conversations(_load_json(path), path, "Claude")):
        conv_id = _key(conv.get("uuid")) or _key(conv.get("id")) or f"conversation-{n}"
        where = f"{path}: conversation {conv_id!r}"
        messages = conv.get("chat_messages")
        if not isinstance(messages, list):
            raise InvalidInputError(f"{path}: conversation {conv_id} has no 'chat_messages'")
        title = _title(conv.get("name"))
        start = _time(conv.get("created_at"), where)
        for k, msg in enumerate(messages):
            if not isinstance(msg, Mapping):
                continue
            role = ROLES.get(str(msg.get("sender")))
            text = _text_of(msg.get("content")) if msg.get("content") else ""
            text = text or _text_of(msg.get("text"))
            turn_id = _key(msg.get("uuid")) or str(k)
            at = f"{where}, message {k + 1}"
            yield ChatTurn(conv_id, turn_id, role or "other", text if role else "",
                           _time(msg.get("created_at"), at) or start, title, where=at)


def _jsonl(path: Path) -> Iterator[ChatTurn]:
    lines = _read_text(path).splitlines()
    places: dict[str, int] = {}
    for n, line in enumerate(lines, 1):
        if not line.strip():
            continue
        _check_depth(line, f"{path}:{n}")
        try:
            row = json.loads(line)
        except json.JSONDecodeError as exc:
            raise InvalidInputError(f"{path}:{n}: not JSON ({exc.msg})") from None
        except RecursionError:
            raise InvalidInputError(f"{path}:{n}: JSON nested too deep") from None
        if not isinstance(row, Mapping) or "role" not in row or "content" not in row:
            raise InvalidInputError(f"{path}:{n}: a turn needs 'role' and 'content'")
        conv = _key(row.get("conversation_id")) or _key(row.get("session_id")) or path.stem
        place = places[conv] = places.get(conv, -1) + 1
        role = ROLES.get(str(row["role"]).lower())
        yield ChatTurn(conv, _key(row.get("id")) or str(place), role or "other",
                       _text_of(row["content"]) if role else "",
                       _time(row.get("timestamp", row.get("time")), f"{path}:{n}"),
                       _title(row.get("title")), where=f"{path}:{n}")


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
    try:
        return list(reader(path))
    except RecursionError:  # a text part nested deep inside the limit of the parser
        raise InvalidInputError(f"{path}: a message is nested too deep") from None


def _batches(seq: Sequence[Any], size: int) -> Iterable[Sequence[Any]]:
    for i in range(0, len(seq), size):
        yield seq[i:i + size]


def _fit(text: str, limit: int) -> str:
    """``text`` cut to at most ``limit`` characters after NFKC (what the write path
    counts: one raw character can become several)."""
    text = text[:limit]
    while (n := normalized_length(text)) > limit:
        text = text[:max(1, len(text) * limit // n - 1)]
    return text


def prepare_chats(turns: Sequence[ChatTurn], fmt: str, namespace: str, *,
                  user_id: str | None = None, limits: LimitsSettings | None = None
                  ) -> list[MemoryItem]:
    """The validated memory of every turn with text, before anything is stored: ids,
    text, times and metadata checked as the write path checks them
    (``validation.validate_item``, against ``limits``: the settings' ``limits``, default
    their defaults); the first bad turn is an InvalidInputError naming it."""
    ns = require_namespace(namespace)
    if user_id is not None:
        check_text("user_id", user_id)
    limits = limits or DEFAULT_LIMITS
    limit = limits.max_content_chars
    items: list[MemoryItem] = []
    for turn in turns:
        if not turn.text:
            continue
        try:
            check_text("conversation id", turn.conversation)
            check_text("turn id", turn.turn_id)
            meta: dict[str, Any] = {"role": turn.role, "source": fmt,
                                    "conversation": turn.conversation}
            if turn.title:
                meta["conversation_title"] = turn.title
            text = turn.text
            if normalized_length(text) > limit:
                text, meta["truncated"] = _fit(text, limit), True
            fields: dict[str, Any] = {"session_id": turn.conversation, "user_id": user_id}
            if turn.time is not None:
                fields["event_time"] = turn.time
            memory_id = stable_id("chat-import", ns, fmt, turn.conversation, turn.turn_id)
            items.append(keyed_item(memory_id, ns, text, MemoryType.EPISODIC, meta,
                                    limits=limits, **fields))
        except HelloMemoryError as exc:
            where = turn.where or f"conversation {turn.conversation!r}"
            raise InvalidInputError(f"{where}, turn {turn.turn_id!r}: {exc}; nothing of the "
                                    "file was stored") from None
    return items


def import_chats(manager: MemoryManager, path: str | Path, fmt: str, *,
                 namespace: str | None = None, user_id: str | None = None,
                 progress: bool = False, batch_size: int = BATCH,
                 turns: Sequence[ChatTurn] | None = None,
                 progress_file: Any = None) -> dict[str, int]:
    """Store every turn of the export at ``path`` as an episodic memory (module doc).
    Returns counts: conversations, turns read, imported, skipped (already stored),
    left_out (no text). ``progress`` shows a bar on stderr. The whole file is read and
    validated first; a bad file stores nothing. ``turns``: the file's turns when the
    caller has read them already (:func:`read_chats`); ``progress_file``: where the
    bar is written (default stderr)."""
    from tqdm import tqdm

    ns = require_namespace(manager.default_namespace if namespace is None else namespace)
    if turns is None:
        turns = read_chats(path, fmt)
    items = prepare_chats(turns, fmt, ns, user_id=user_id, limits=manager.limits)
    counts = {"conversations": len({t.conversation for t in turns}), "turns": len(turns),
              "imported": 0, "skipped": 0, "left_out": len(turns) - len(items)}
    # the disk guard before the first batch (docs/RELIABILITY.md "Disk space")
    manager.browse.check_disk(sum(8 * len(i.content) + 4096 for i in items))
    with tqdm(total=len(items), desc="import-chats", unit="turn", disable=not progress,
              leave=False, file=progress_file) as bar:
        for batch in _batches(items, batch_size):
            stored = existing(manager, ns, [i.id for i in batch])
            fresh = [i for i in batch if i.id not in stored]
            add_keyed(manager, fresh)
            counts["imported"] += len(fresh)
            counts["skipped"] += len(batch) - len(fresh)
            bar.update(len(batch))
    return counts
