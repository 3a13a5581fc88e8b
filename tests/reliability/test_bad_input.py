"""Bad input across the public API, one table row each: every row raises a typed
error (a HelloMemoryError subclass) whose message says what is wrong, and every store
is unchanged afterwards (counts, vector ids, graph stats and a content hash of every
record). Rows with a documented normalisation instead are tested at the bottom."""

from __future__ import annotations

import json
import math
import socket
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from hello_memory.config import load_settings
from hello_memory.errors import (
    BackendUnavailableError,
    ConfigError,
    DimensionMismatchError,
    EmptyContentError,
    HelloMemoryError,
    InvalidImportanceError,
    InvalidInputError,
    NamespaceRequiredError,
    NotFoundError,
    UnknownConfigKeyError,
    VectorError,
)
from hello_memory.llm import LLMError, OpenAICompatClient, call_or_fallback
from hello_memory.memory.manager import MemoryManager
from hello_memory.stores.bundle import DENSE, MEMORY_COLLECTION
from hello_memory.stores.graph import Neo4jGraphStore
from hello_memory.stores.vector import QdrantVectorStore
from hello_memory.types import VectorPoint

from .support import all_items, fingerprint, make_manager

pytestmark = pytest.mark.slow

NOW = datetime(2025, 1, 1, tzinfo=timezone.utc)
NAMESPACES = ["alpha", "beta"]


@dataclass(frozen=True)
class Ctx:
    mm: MemoryManager
    tmp: Path
    alpha_id: str      # a stored memory of "alpha"
    beta_id: str       # a stored memory of "beta"


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _import_lines(ctx: Ctx, name: str, data: bytes) -> Any:
    path = ctx.tmp / name
    path.write_bytes(data)
    return ctx.mm.import_jsonl(path, namespace="alpha")


def _good_line(content: str) -> bytes:
    return (json.dumps({"id": "0d1c2b3a-0000-4000-8000-000000000001", "namespace": "alpha",
                        "content": content, "memory_type": "episodic",
                        "event_time": NOW.isoformat()}) + "\n").encode()


def _qdrant_unreachable(ctx: Ctx) -> None:
    QdrantVectorStore(url=f"http://127.0.0.1:{_closed_port()}", timeout=2).open()


def _bolt_unreachable(ctx: Ctx) -> None:
    Neo4jGraphStore(f"bolt://127.0.0.1:{_closed_port()}", user=None,
                    connection_timeout=2).open()


class Person(BaseModel):
    name: str
    age: int


def _llm_garbage(ctx: Ctx) -> None:
    from llm.scripted_server import ScriptedLLMServer  # tests/ is on sys.path

    with ScriptedLLMServer() as server, OpenAICompatClient(
            server.base_url, "m", timeout=5, max_retries=0, backoff=0) as client:
        server.reply("%%% not json at all {{{")
        server.reply("still <<garbage>>")  # the one repair request gets garbage too
        client.complete_json([{"role": "user", "content": "who?"}], Person)


def _wrong_dimension(ctx: Ctx) -> None:
    ctx.mm.stores.vectors.upsert(MEMORY_COLLECTION, [VectorPoint(
        id="0d1c2b3a-0000-4000-8000-00000000000f", vectors={DENSE: [0.1] * 17},
        payload={"namespace": "alpha"})])


def _nan_vector(ctx: Ctx) -> None:
    dim = ctx.mm.stores.embedder.dimension
    ctx.mm.stores.vectors.upsert(MEMORY_COLLECTION, [VectorPoint(
        id="0d1c2b3a-0000-4000-8000-00000000000e", vectors={DENSE: [math.nan] * dim},
        payload={"namespace": "alpha"})])


naive = datetime(2024, 1, 1)  # noqa: DTZ001 - the bad input under test
A = "alpha"
Row = tuple[str, Callable[[Ctx], Any], type[BaseException], str]
ROWS: list[Row] = [
    # content
    ("empty content", lambda c: c.mm.add("", namespace=A), EmptyContentError, "empty"),
    ("whitespace content", lambda c: c.mm.add(" \n\t ", namespace=A), EmptyContentError,
     "whitespace"),
    ("10 MB content", lambda c: c.mm.add("x" * 10_000_000, namespace=A), InvalidInputError,
     "RAG"),
    ("int content", lambda c: c.mm.add(42, namespace=A), InvalidInputError, "must be a str"),
    ("None content", lambda c: c.mm.add(None, namespace=A), InvalidInputError, "NoneType"),
    ("bytes content", lambda c: c.mm.add(b"caf\xc3\xa9", namespace=A), InvalidInputError,
     "bytes"),
    ("list content", lambda c: c.mm.add(["a"], namespace=A), InvalidInputError, "list"),
    ("invalid UTF-8 (lone surrogate)",
     lambda c: c.mm.add(b"bad \xff".decode("utf-8", "surrogateescape"), namespace=A),
     InvalidInputError, "Unicode"),
    # importance
    ("importance above 1", lambda c: c.mm.add("x", importance=1.5, namespace=A),
     InvalidImportanceError, "[0, 1]"),
    ("importance below 0", lambda c: c.mm.add("x", importance=-0.01, namespace=A),
     InvalidImportanceError, "-0.01"),
    ("importance NaN", lambda c: c.mm.add("x", importance=math.nan, namespace=A),
     InvalidImportanceError, "nan"),
    ("importance inf", lambda c: c.mm.add("x", importance=math.inf, namespace=A),
     InvalidImportanceError, "inf"),
    ("importance str", lambda c: c.mm.add("x", importance="high", namespace=A),
     InvalidImportanceError, "high"),
    ("importance bool", lambda c: c.mm.add("x", importance=True, namespace=A),
     InvalidImportanceError, "True"),
    # memory type
    ("unknown memory type", lambda c: c.mm.add("x", "procedural", namespace=A),
     InvalidInputError, "unknown memory type 'procedural'"),
    ("perceptual through add", lambda c: c.mm.add("x", "perceptual", namespace=A),
     InvalidInputError, "perceptual.add"),
    ("search unknown type", lambda c: c.mm.search("x", ["bogus"], namespace=A),
     InvalidInputError, "unknown memory type"),
    # namespaces
    ("empty namespace", lambda c: c.mm.add("x", namespace=""), NamespaceRequiredError,
     "namespace"),
    ("blank namespace", lambda c: c.mm.add("x", namespace="   "), NamespaceRequiredError,
     "namespace"),
    ("NUL in namespace", lambda c: c.mm.add("x", namespace="a\x00b"), InvalidInputError, "NUL"),
    ("int namespace", lambda c: c.mm.add("x", namespace=7), NamespaceRequiredError, "7"),
    ("search without namespace", lambda c: c.mm.search("x", namespace=""),
     NamespaceRequiredError, "namespace"),
    ("clear without namespace", lambda c: c.mm.clear("", confirm=True), NamespaceRequiredError,
     "namespace"),
    # metadata and ids
    ("metadata not a mapping", lambda c: c.mm.add("x", metadata="k=v", namespace=A),
     InvalidInputError, "mapping"),
    ("metadata not JSON", lambda c: c.mm.add("x", metadata={"o": object()}, namespace=A),
     InvalidInputError, "JSON"),
    ("user_id not a str", lambda c: c.mm.add("x", namespace=A, user_id=5), InvalidInputError,
     "user_id"),
    # time
    ("naive event_time", lambda c: c.mm.add("x", namespace=A, event_time=naive),
     InvalidInputError, "timezone-aware"),
    ("event_time as str", lambda c: c.mm.add("x", namespace=A, event_time="2024-01-01"),
     InvalidInputError, "must be a datetime"),
    ("event_time as epoch int", lambda c: c.mm.add("x", namespace=A, event_time=0),
     InvalidInputError, "must be a datetime"),
    ("naive search time_range",
     lambda c: c.mm.search("x", namespace=A, time_range=(naive, None)), InvalidInputError,
     "timezone-aware"),
    # batches: one bad entry stores nothing
    ("bad entry in a batch", lambda c: c.mm.add_many([
        {"content": "fine one", "namespace": A}, {"content": "", "namespace": A},
        {"content": "fine two", "namespace": A}]), EmptyContentError, "empty"),
    ("unknown field in a batch", lambda c: c.mm.add_many([
        {"content": "fine", "namespace": A, "colour": "red"}]), InvalidInputError, "colour"),
    # search
    ("top_k zero", lambda c: c.mm.search("x", top_k=0, namespace=A), InvalidInputError,
     "top_k"),
    ("top_k negative", lambda c: c.mm.search("x", top_k=-3, namespace=A), InvalidInputError,
     "top_k"),
    ("top_k str", lambda c: c.mm.search("x", top_k="5", namespace=A), InvalidInputError, "top_k"),
    ("unknown search filter", lambda c: c.mm.search("x", namespace=A, filters={"colour": 1}),
     InvalidInputError, "colour"),
    ("min_importance above 1", lambda c: c.mm.search("x", namespace=A, min_importance=2),
     InvalidImportanceError, "2"),
    ("empty query", lambda c: c.mm.search("", namespace=A), EmptyContentError, "empty"),
    ("None query", lambda c: c.mm.search(None, namespace=A), InvalidInputError, "NoneType"),
    # update / get
    ("update unknown id", lambda c: c.mm.update("nope", namespace=A, importance=0.5),
     NotFoundError, "nope"),
    ("update across namespaces", lambda c: c.mm.update(c.beta_id, namespace=A, importance=0.5),
     NotFoundError, "alpha"),
    ("update to empty content", lambda c: c.mm.update(c.alpha_id, namespace=A, content=""),
     EmptyContentError, "empty"),
    ("update importance NaN", lambda c: c.mm.update(c.alpha_id, namespace=A,
                                                    importance=math.nan),
     InvalidImportanceError, "nan"),
    ("update nothing", lambda c: c.mm.update(c.alpha_id, namespace=A), InvalidInputError,
     "nothing to update"),
    ("update metadata list", lambda c: c.mm.update(c.alpha_id, namespace=A, metadata=[1]),
     InvalidInputError, "mapping"),
    ("get across namespaces", lambda c: c.mm.get(c.beta_id, namespace=A), NotFoundError,
     "alpha"),
    # forget / consolidate / clear
    ("unknown forget strategy", lambda c: c.mm.forget("lru", namespace=A), InvalidInputError,
     "lru"),
    ("forget threshold above 1", lambda c: c.mm.forget(namespace=A, threshold=2, hard=True),
     InvalidImportanceError, "2"),
    ("forget negative age", lambda c: c.mm.forget("time", namespace=A, max_age_days=-1),
     InvalidInputError, "max_age_days"),
    ("forget negative capacity", lambda c: c.mm.forget("capacity", namespace=A, max_items=-1),
     InvalidInputError, "max_items"),
    ("forget unknown type", lambda c: c.mm.forget(namespace=A, memory_types=["bogus"]),
     InvalidInputError, "bogus"),
    ("consolidate backwards", lambda c: c.mm.consolidate("semantic", "episodic", namespace=A),
     InvalidInputError, "cannot consolidate"),
    ("consolidate threshold NaN", lambda c: c.mm.consolidate(
        "episodic", "semantic", namespace=A, importance_threshold=math.nan),
     InvalidImportanceError, "nan"),
    ("consolidate unknown type", lambda c: c.mm.consolidate("bogus", "semantic", namespace=A),
     InvalidInputError, "bogus"),
    ("clear without confirm", lambda c: c.mm.clear(A), InvalidInputError, "confirm=True"),
    # import
    ("import a bad record after a good one",
     lambda c: _import_lines(c, "bad.jsonl", _good_line("fine") + b'{"id": "x"}\n'),
     InvalidInputError, "bad.jsonl:2"),
    ("import a line that is not JSON",
     lambda c: _import_lines(c, "nojson.jsonl", b"{not json\n"), InvalidInputError,
     "nojson.jsonl:1"),
    # config and endpoints
    ("unknown config key", lambda c: load_settings(environ={}, vectr={"url": "x"}),
     UnknownConfigKeyError, "vectr"),
    ("two vector targets", lambda c: load_settings(
        environ={}, vector={"url": "http://h:1", "location": ":memory:"}), ConfigError,
     "only one"),
    ("unreachable Qdrant url", _qdrant_unreachable, BackendUnavailableError, "127.0.0.1"),
    ("unreachable Bolt endpoint", _bolt_unreachable, BackendUnavailableError, "bolt://"),
    # vectors and stores
    ("wrong vector dimension", _wrong_dimension, DimensionMismatchError, "size 17"),
    ("NaN vector", _nan_vector, VectorError, ""),
    ("vector search without namespace", lambda c: c.mm.stores.vectors.nearest(
        MEMORY_COLLECTION, [0.0] * 384, namespace=""), NamespaceRequiredError, "namespace"),
    ("graph read without namespace", lambda c: c.mm.stores.graph.find_entities("", ["Ann"]),
     NamespaceRequiredError, "namespace"),
    ("record read without namespace", lambda c: c.mm.stores.records.memories.list_items(""),
     NamespaceRequiredError, "namespace"),
    # LLM
    ("LLM answers garbage", _llm_garbage, LLMError, "Person"),
]


@pytest.fixture(scope="module")
def ctx(tmp_path_factory: pytest.TempPathFactory, embedder: Any) -> Iterator[Ctx]:
    tmp = tmp_path_factory.mktemp("bad-input")
    mm = make_manager(tmp / "data", embedder)
    a = mm.add("Alice moved to Lisbon and loves sardines", "semantic", 0.6, {"k": "v"},
               namespace="alpha", event_time=NOW)
    mm.add("The alpha team met on Monday", namespace="alpha", event_time=NOW)
    b = mm.add("Bob keeps a bonsai in Kyoto", "semantic", 0.4, namespace="beta",
               event_time=NOW)
    mm.add("scratch note for alpha", "working", namespace="alpha")
    yield Ctx(mm, tmp, a.id, b.id)
    mm.close()


def test_table_has_enough_rows() -> None:
    assert len(ROWS) >= 40
    assert len({r[0] for r in ROWS}) == len(ROWS)


@pytest.mark.parametrize(("name", "call", "error", "fragment"), ROWS, ids=[r[0] for r in ROWS])
def test_bad_input_is_a_typed_error_and_changes_nothing(
    ctx: Ctx, name: str, call: Callable[[Ctx], Any], error: type[BaseException],
    fragment: str,
) -> None:
    before = fingerprint(ctx.mm, NAMESPACES)
    with pytest.raises(error) as info:
        call(ctx)
    assert isinstance(info.value, HelloMemoryError)
    assert fragment in str(info.value)
    assert fingerprint(ctx.mm, NAMESPACES) == before


def test_import_of_invalid_utf8_is_a_typed_error(ctx: Ctx) -> None:
    before = fingerprint(ctx.mm, NAMESPACES)
    with pytest.raises(InvalidInputError):
        _import_lines(ctx, "latin1.jsonl", _good_line("cafe").replace(b"cafe", b"caf\xe9"))
    assert fingerprint(ctx.mm, NAMESPACES) == before


def test_llm_garbage_degrades_to_the_fallback() -> None:
    from llm.scripted_server import ScriptedLLMServer

    with ScriptedLLMServer() as server, OpenAICompatClient(
            server.base_url, "m", timeout=5, max_retries=0, backoff=0) as client:
        server.reply("nonsense")
        server.reply("more nonsense")
        got = call_or_fallback(client, lambda llm: llm.complete_json(
            [{"role": "user", "content": "who?"}], Person), lambda: Person(name="?", age=0),
            what="test")
    assert got == Person(name="?", age=0)


# --- documented normalisations: accepted, stored exactly as given -------------------
@pytest.mark.parametrize("when", [
    datetime(1970, 1, 1, tzinfo=timezone.utc),
    datetime(1, 1, 1, tzinfo=timezone.utc),
    datetime(9999, 12, 31, 23, 59, tzinfo=timezone.utc),
    datetime(2024, 2, 29, 23, 30, tzinfo=timezone(timedelta(hours=-8))),
], ids=["epoch", "year-1", "far-future", "offset"])
def test_extreme_but_aware_times_are_kept_as_the_same_instant(
    tmp_path: Path, embedder: Any, when: datetime,
) -> None:
    mm = make_manager(tmp_path / "d", embedder)
    try:
        item = mm.add("an event at an unusual time", namespace="t", event_time=when)
        stored = mm.get(item.id, namespace="t")
        assert stored.event_time == when  # same instant (the offset may become UTC)
        assert stored.event_time.utcoffset() is not None
        assert [h.id for h in mm.search("event at an unusual time", namespace="t")] == [item.id]
    finally:
        mm.close()


def test_metadata_keys_become_json_strings(tmp_path: Path, embedder: Any) -> None:
    mm = make_manager(tmp_path / "d", embedder)
    try:
        item = mm.add("numbered metadata keys", namespace="t", metadata={1: "one", "n": [1, 2]})
        assert [i.metadata for i in all_items(mm, "t")] == [{"1": "one", "n": [1, 2]}]
        assert item.id
    finally:
        mm.close()
