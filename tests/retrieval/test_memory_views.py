"""Working and perceptual memory vote through the view protocol (issue 31, item 3;
retrieval/memory_views.py): registered like every view, run only for the memory types
they serve, beside the views they run with; every view gets the caller's one filter
(``ViewRequest.flt``) and the search checks its query, types and min_importance once.
Real stores and the default model; nothing here asserts a timing."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

import numpy as np
import pytest

from hello_memory.config import load_settings
from hello_memory.errors import InvalidImportanceError, InvalidInputError
from hello_memory.memory.episodic import payload_filters
from hello_memory.memory.manager import MemoryManager
from hello_memory.retrieval.fusion import ViewResult
from hello_memory.retrieval.memory_views import PerceptualView, WorkingView
from hello_memory.retrieval.planning import analyze_query
from hello_memory.retrieval.registry import (
    BUILT_IN_VIEWS,
    MEMORY_VIEWS,
    STORED_TYPES,
    View,
    register_view,
    registered_views,
    runs_with,
    served_types,
    unregister_view,
    view_names,
)
from hello_memory.retrieval.views import ViewRequest
from hello_memory.stores.bundle import Stores
from hello_memory.stores.records import ItemFilter
from hello_memory.types import MemoryStatus, MemoryType

pytestmark = pytest.mark.slow

NS = "mv"


@dataclass
class Counted:
    """A registered view wrapped to record the requests it gets (its protocol
    attributes, the optional ones too, are the wrapped view's)."""

    inner: View
    requests: list[ViewRequest] = field(default_factory=list)

    def __getattr__(self, name: str) -> object:
        return getattr(self.inner, name)

    @property
    def name(self) -> str:
        return self.inner.name

    @property
    def weight(self) -> float:
        return self.inner.weight

    @property
    def needs_vectors(self) -> bool:
        return self.inner.needs_vectors

    @property
    def shared_ranks(self) -> bool:
        return self.inner.shared_ranks

    def rank(self, stores: Stores, req: ViewRequest) -> ViewResult:
        self.requests.append(req)
        return self.inner.rank(stores, req)


@pytest.fixture
def counted() -> Iterator[dict[str, Counted]]:
    views = {n: Counted(registered_views()[n]) for n in ("semantic", "working")}
    for view in views.values():
        register_view(view, replace=True)  # type: ignore[arg-type]
    try:
        yield views
    finally:
        for view in views.values():
            register_view(view.inner, replace=True)


@pytest.fixture
def mm(tmp_path: Path) -> Iterator[MemoryManager]:
    manager = MemoryManager.open(load_settings(environ={}, data_dir=tmp_path,
                                               semantic={"extractor": "rules"}))
    manager.add("Sofia booked the train to the airport for Friday.", "episodic",
                importance=0.8, namespace=NS, user_id="sofia")
    manager.add("Sofia is comparing train times to the airport right now.", "working",
                importance=0.6, namespace=NS, user_id="sofia", session_id="s1")
    manager.add("Tom is checking airport parking prices.", "working", importance=0.2,
                namespace=NS, user_id="tom", session_id="s1")
    try:
        yield manager
    finally:
        manager.close()


def test_working_and_perceptual_memory_are_registered_views() -> None:
    views = registered_views()
    assert tuple(views)[: len(BUILT_IN_VIEWS) + len(MEMORY_VIEWS)] == BUILT_IN_VIEWS + MEMORY_VIEWS
    assert isinstance(views["working"], WorkingView) and isinstance(views["working"], View)
    assert isinstance(views["perceptual"], PerceptualView)
    assert served_types(views["working"]) == (MemoryType.WORKING,)
    assert served_types(views["perceptual"]) == (MemoryType.PERCEPTUAL,)
    assert served_types(views["semantic"]) == STORED_TYPES
    assert runs_with(views["working"]) == ("semantic", "lexical")
    assert runs_with(views["perceptual"]) == ("semantic",)
    assert runs_with(views["lexical"]) is None
    # they run beside the chosen views: a recipe or a search cannot choose them
    assert view_names() == BUILT_IN_VIEWS
    with pytest.raises(InvalidInputError, match="built-in"):
        unregister_view("working")
    with pytest.raises(InvalidInputError, match="already registered"):
        register_view(WorkingView())


def test_the_request_carries_the_one_filter_and_derives_the_vector_form() -> None:
    flt = ItemFilter(memory_types=STORED_TYPES, status=MemoryStatus.ACTIVE, user_id="u",
                     since=datetime(2024, 1, 1, tzinfo=timezone.utc), min_importance=0.4)
    req = ViewRequest("ns", ["where?"], [np.zeros(3, dtype=np.float32)],
                      analyze_query("where?", datetime(2024, 6, 1, tzinfo=timezone.utc)), flt)
    assert req.flt is flt
    assert req.filters == payload_filters(flt)
    assert req.filters is req.filters  # derived once per request
    assert req.question == "where?"  # the first query unless given
    with pytest.raises(AttributeError):
        req.filters = {}  # type: ignore[misc]  # read-only: the filter is ``flt``


def test_working_memory_votes_through_the_registry(mm: MemoryManager,
                                                   counted: dict[str, Counted]) -> None:
    semantic, working = counted["semantic"], counted["working"]
    only = mm.search("train to the airport", ["working"], namespace=NS, touch=False)
    # a search of working memory alone runs its view and no view of the text collection
    assert len(working.requests) == 1 and semantic.requests == []
    assert [h.item.content for h in only][0].startswith("Sofia is comparing")
    assert all(h.memory_type == MemoryType.WORKING and set(h.views) == {"working"}
               for h in only)
    both = mm.search("train to the airport", namespace=NS, touch=False)
    assert len(working.requests) == 2 and len(semantic.requests) == 1
    assert {h.memory_type for h in both} == {MemoryType.WORKING, MemoryType.EPISODIC}
    # episodic only: working memory's view serves no type searched, it is not run
    mm.search("train to the airport", ["episodic"], namespace=NS, touch=False)
    assert len(working.requests) == 2 and len(semantic.requests) == 2
    # without a view it runs with (semantic, lexical) it is not run either
    mm.search("train to the airport", namespace=NS, views=["graph"], touch=False)
    assert len(working.requests) == 2


def test_every_view_gets_the_callers_filter(mm: MemoryManager,
                                            counted: dict[str, Counted]) -> None:
    since = datetime(2000, 1, 1, tzinfo=timezone.utc)
    hits = mm.search("airport", namespace=NS, touch=False, session_id="s1",
                     filters={"min_importance": 0.5}, time_range=(since, None))
    assert [h.item.content for h in hits] == [
        "Sofia is comparing train times to the airport right now."]
    for view in counted.values():
        flt = view.requests[-1].flt
        assert (flt.session_id, flt.min_importance, flt.since) == ("s1", 0.5, since)
        assert view.requests[-1].question == "airport"
    # the namespace holds active memories only: the vector form leaves the status out
    req = counted["semantic"].requests[-1]
    assert req.all_active and "status" not in req.filters.conditions
    assert req.filters == payload_filters(req.flt, all_active=True)


def test_the_search_checks_its_arguments_once_with_the_facades_errors(
        mm: MemoryManager) -> None:
    for search in (mm.search, mm.retriever.retrieve):
        with pytest.raises(InvalidImportanceError, match="finite number in"):
            search("airport", namespace=NS, min_importance=2)
        with pytest.raises(InvalidInputError, match="unknown memory type 'bogus'; use one of"):
            search("airport", memory_types=["bogus"], namespace=NS)
        with pytest.raises(InvalidInputError, match="query"):
            search("", namespace=NS)
    # the types come first, as they always did through the facade
    with pytest.raises(InvalidInputError, match="unknown memory type"):
        mm.search("", ["bogus"], namespace=NS)
