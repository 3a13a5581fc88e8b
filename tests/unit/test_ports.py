"""The narrow ports (hello_memory/ports/, issue 31 item 1): every backend of the
default install provides each operation its port lists, under the same parameter
names, and the check itself catches a backend that does not."""

from __future__ import annotations

import inspect
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Protocol

import pytest

from hello_memory.embedding import SentenceTransformerEmbedder
from hello_memory.embedding.batching import CoalescingEmbedder
from hello_memory.errors import InvalidInputError
from hello_memory.llm.openai_compat import OpenAICompatClient
from hello_memory.memory.episodic import payload_filters
from hello_memory.ports import (
    AuditPort,
    Between,
    DocumentRecordsPort,
    EmbedderPort,
    EntityExtractorPort,
    GraphPort,
    LLMPort,
    MemoryRecordsPort,
    OutboxPort,
    RecordsPort,
    VectorFilter,
    VectorIndexPort,
)
from hello_memory.stores.graph.sqlite import SQLiteGraphStore
from hello_memory.stores.records import (
    AuditRepository,
    DocumentRepository,
    ItemFilter,
    MemoryRepository,
    OutboxRepository,
    RecordStore,
)
from hello_memory.stores.vector.base import Range
from hello_memory.stores.vector.edge import QdrantEdgeVectorStore
from hello_memory.stores.vector.qdrant import QdrantVectorStore
from hello_memory.text.entities import RuleExtractor
from hello_memory.types import MemoryStatus, MemoryType

_PROTOCOL_BASES = {object, Protocol}


def port_members(port: type) -> dict[str, Any]:
    """The public members a Protocol declares (methods, properties, annotated
    attributes), its own and its bases'."""
    members: dict[str, Any] = {}
    for klass in reversed(port.__mro__):
        if klass in _PROTOCOL_BASES or klass.__module__ == "typing":
            continue
        for name in getattr(klass, "__annotations__", {}):
            if not name.startswith("_"):
                members[name] = None  # a plain attribute
        for name, value in vars(klass).items():
            if not name.startswith("_"):
                members[name] = value
    return members


def _own_parameters(backend: type, name: str) -> list[inspect.Parameter]:
    raw = inspect.getattr_static(backend, name)
    params = list(inspect.signature(getattr(backend, name)).parameters.values())
    # a plain function looked up on the class still has its self
    return params if isinstance(raw, (staticmethod, classmethod)) else params[1:]


def _signature_problems(name: str, wanted: list[inspect.Parameter],
                        got: list[inspect.Parameter]) -> list[str]:
    problems: list[str] = []
    by_name = {p.name: p for p in got}
    got_kinds = {p.kind for p in got}
    positional = [p.name for p in got if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    want_positional = [p.name for p in wanted
                       if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    if positional[:len(want_positional)] != want_positional:
        problems.append(f"{name}: positional parameters {positional}, the port has "
                        f"{want_positional}")
    for param in wanted:
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            if param.kind not in got_kinds:
                problems.append(f"{name}: no {param}")
            continue
        have = by_name.get(param.name)
        if have is None:
            problems.append(f"{name}: no parameter {param.name!r}")
        elif param.kind == param.KEYWORD_ONLY and have.kind not in (
                have.KEYWORD_ONLY, have.POSITIONAL_OR_KEYWORD):
            problems.append(f"{name}: {param.name!r} cannot be passed by keyword")
        elif param.default is not param.empty and have.default is have.empty:
            problems.append(f"{name}: {param.name!r} has no default")
    wanted_names = {p.name for p in wanted}
    for extra in got:
        if (extra.name not in wanted_names and extra.default is extra.empty
                and extra.kind not in (extra.VAR_POSITIONAL, extra.VAR_KEYWORD)):
            problems.append(f"{name}: extra parameter {extra.name!r} without a default")
    return problems


def conformance_problems(port: type, backend: type, instance: object | None = None
                         ) -> list[str]:
    """What ``backend`` lacks of ``port``: a missing member, a method that is not one,
    or a method whose parameters (names, kinds, defaults) do not take the port's calls.
    ``instance`` (optional) supplies attributes set in ``__init__``."""
    problems: list[str] = []
    for name, member in port_members(port).items():
        if member is None or isinstance(member, property):
            if not (hasattr(backend, name) or (instance is not None and hasattr(instance, name))):
                problems.append(f"{name}: missing attribute")
            continue
        if not callable(getattr(backend, name, None)):
            problems.append(f"{name}: missing method")
            continue
        wanted = list(inspect.signature(member).parameters.values())[1:]
        problems += _signature_problems(name, wanted, _own_parameters(backend, name))
    return problems


BACKENDS: list[tuple[type, type]] = [
    (MemoryRecordsPort, MemoryRepository),
    (DocumentRecordsPort, DocumentRepository),
    (OutboxPort, OutboxRepository),
    (AuditPort, AuditRepository),
    (VectorIndexPort, QdrantEdgeVectorStore),
    (VectorIndexPort, QdrantVectorStore),
    (GraphPort, SQLiteGraphStore),
    (EmbedderPort, SentenceTransformerEmbedder),
    (EmbedderPort, CoalescingEmbedder),
    (EntityExtractorPort, RuleExtractor),
    (LLMPort, OpenAICompatClient),
]


@pytest.mark.parametrize(("port", "backend"), BACKENDS,
                         ids=[f"{p.__name__}-{b.__name__}" for p, b in BACKENDS])
def test_backend_satisfies_its_port(port: type, backend: type) -> None:
    assert port_members(port), f"{port.__name__} declares nothing"
    assert conformance_problems(port, backend) == []


def test_record_store_satisfies_the_records_port(tmp_path: Path) -> None:
    store = RecordStore(f"sqlite:///{tmp_path / 'records.db'}")
    assert conformance_problems(RecordsPort, RecordStore, store) == []
    store.open()  # the engine property raises until then
    try:
        assert isinstance(store, RecordsPort)  # runtime_checkable: members by name
    finally:
        store.close()


def test_the_check_fails_for_a_backend_missing_a_method() -> None:
    class HalfGraph:
        def open(self) -> None: ...
        def close(self) -> None: ...

    problems = conformance_problems(GraphPort, HalfGraph)
    assert "find_entities: missing method" in problems
    assert "neighbors: missing method" in problems
    assert not isinstance(HalfGraph(), GraphPort)


def test_the_check_fails_for_a_renamed_or_stricter_parameter() -> None:
    class OddExtractor:
        def extract(self, content: str, namespace: str, strict: bool) -> object: ...

    problems = conformance_problems(EntityExtractorPort, OddExtractor)
    assert any("'text'" in p for p in problems), problems
    assert any("'strict'" in p for p in problems), problems


def test_the_check_fails_for_a_missing_property() -> None:
    class Nameless:
        dimension = 3

        def embed(self, texts: list[str]) -> None: ...
        def embed_query(self, text: str) -> None: ...

    assert conformance_problems(EmbedderPort, Nameless) == ["name: missing attribute"]


def test_vector_filter_is_typed_and_checked() -> None:
    flt = VectorFilter.where(memory_type=("episodic", "semantic"), status="active",
                             importance=Between(gte=0.5))
    assert flt.conditions["importance"] == Between(gte=0.5, lte=None)
    merged = flt.and_(VectorFilter.where(event_time=Between(lte=datetime(2024, 1, 1))))
    assert set(merged.conditions) == {"memory_type", "status", "importance", "event_time"}
    assert not VectorFilter() and merged
    with pytest.raises(InvalidInputError):
        VectorFilter.where(namespace="a")  # the namespace is never a payload condition
    with pytest.raises(InvalidInputError):
        VectorFilter.where(memory_type=())
    with pytest.raises(InvalidInputError):
        flt.and_(VectorFilter.where(status="deleted"))
    with pytest.raises(InvalidInputError):
        Between()
    with pytest.raises(InvalidInputError):
        Between(gte=2.0, lte=1.0)
    with pytest.raises(InvalidInputError):
        Between(gte=1.0, lte=datetime(2024, 1, 1))
    with pytest.raises(InvalidInputError):
        Between(gte=float("nan"))


def test_vector_filter_conditions_are_checked_when_built() -> None:
    """A condition no backend answers the same way is refused at once, not by one
    backend's engine at query time."""
    for bad in ({"kind": None}, {"kind": ("a", 1)}, {"kind": (True, False)},
                {"imp": float("inf")}, {"at": b"2024"}, {"": "x"}):
        with pytest.raises(InvalidInputError):
            VectorFilter(bad)
    with pytest.raises(TypeError):
        VectorFilter([("kind", "note")])  # type: ignore[arg-type]
    assert Between(gte=datetime(2024, 1, 2),  # a naive bound is read as UTC
                   lte=datetime(2024, 1, 2, 1, tzinfo=timezone.utc)).gte is not None
    with pytest.raises(InvalidInputError):
        Between(gte=datetime(2024, 1, 2), lte=datetime(2024, 1, 1, tzinfo=timezone.utc))


def test_vector_filter_of_converts_the_mapping_form() -> None:
    at = datetime(2024, 5, 1, tzinfo=timezone.utc)
    flt = VectorFilter.of({"kind": ["fact", "todo"], "n": {3}, "status": "active",
                           "imp": Range(gte=0.5), "at": at})
    assert flt == VectorFilter.where(kind=("fact", "todo"), n=(3,), status="active",
                                     imp=Between(gte=0.5), at=Between(gte=at, lte=at))
    assert Range is Between  # the one range type, under its old name too
    assert VectorFilter.of(flt) is flt
    with pytest.raises(InvalidInputError):
        VectorFilter.of({"kind": []})  # any of no values
    with pytest.raises(TypeError):
        VectorFilter.of([("kind", "note")])  # type: ignore[arg-type]


def test_payload_filters_translate_an_item_filter_into_a_vector_filter() -> None:
    since, until = datetime(2024, 1, 1, tzinfo=timezone.utc), datetime(2024, 2, 1,
                                                                      tzinfo=timezone.utc)
    flt = payload_filters(ItemFilter(memory_types=(MemoryType.EPISODIC,),
                                     user_id="u1", since=since, until=until,
                                     min_importance=0.4))
    assert flt == VectorFilter.where(memory_type=("episodic",), status="active",
                                     user_id="u1", event_time=Between(gte=since, lte=until),
                                     importance=Between(gte=0.4))
    assert payload_filters(ItemFilter(status=None)) == VectorFilter()
    # a condition every point meets is left out: every type the memory collection
    # holds, and the status where the caller knows the namespace holds active ones only
    both = ItemFilter(memory_types=(MemoryType.SEMANTIC, MemoryType.EPISODIC))
    assert payload_filters(both) == VectorFilter.where(status="active")
    assert payload_filters(both, all_active=True) == VectorFilter()
    forgotten = ItemFilter(status=MemoryStatus.FORGOTTEN)
    assert payload_filters(forgotten, all_active=True) == VectorFilter.where(status="forgotten")
