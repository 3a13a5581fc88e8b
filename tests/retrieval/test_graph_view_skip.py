"""The graph view is not run on a namespace whose graph links no memory (a store of
conversation turns: episodic memories feed no graph), and runs again as soon as a
write links one (HybridRetriever._graph_empty, kept per write generation; issue 27).
Real stores and models; nothing here asserts a timing."""

from __future__ import annotations

from pathlib import Path

import pytest

from hello_memory.config import load_settings
from hello_memory.memory.manager import MemoryManager
from hello_memory.retrieval.fusion import ViewResult
from hello_memory.retrieval.registry import FunctionView, register_view, registered_views
from hello_memory.retrieval.views import ViewRequest
from hello_memory.stores.bundle import Stores

pytestmark = pytest.mark.slow

NS = "g"
QUESTION = "Where does Anna's husband work?"


def test_the_graph_view_runs_once_the_graph_links_a_memory(
        tmp_path: Path, request: pytest.FixtureRequest) -> None:
    runs: list[str] = []
    graph = registered_views()["graph"]

    def counted(stores: Stores, req: ViewRequest) -> ViewResult:
        runs.append(req.namespace)
        return graph.rank(stores, req)

    # the graph view, counted: wrapped in the registry (retrieval/registry.py)
    register_view(FunctionView("graph", counted, weight=graph.weight), replace=True)
    request.addfinalizer(lambda: register_view(graph, replace=True))
    mm = MemoryManager.open(load_settings(environ={}, data_dir=tmp_path,
                                          semantic={"extractor": "rules"}))
    try:
        mm.add_many([{"content": c, "namespace": NS, "memory_type": "episodic"} for c in (
            "Anna and I had lunch by the river.", "Tom fixed the fence on Sunday.")])
        before = mm.search(QUESTION, namespace=NS)
        assert runs == []  # nothing links: the view is not run
        assert all("graph" not in h.views for h in before)
        mm.add("Anna is married to Tom.", "semantic", namespace=NS)
        mm.add("Tom works at Shell in The Hague.", "semantic", namespace=NS)
        after = mm.search(QUESTION, namespace=NS)
        assert runs == [NS]  # the write is seen by the next search
        by_graph = [h for h in after if "graph" in h.views]
        assert any("Shell" in h.item.content for h in by_graph)
        mm.remove(next(h.id for h in after if "Shell" in h.item.content), namespace=NS)
        mm.remove(next(h.id for h in after if "married" in h.item.content), namespace=NS)
        mm.search(QUESTION, namespace=NS)
        assert runs == [NS]  # nothing links again: not run again
    finally:
        mm.close()
