"""A new search view is one class plus one registry line (issue 31, item 3): once
registered it runs in the default search and in a recipe that names it, its weight is
accepted in ``retrieval.view_weights``, the REST schema lists the recipe and a request
naming it is answered through ``POST /v1/search``, and ``explain`` shows its rank.
Real stores and the default model; nothing here asserts a timing."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from hello_memory.config import load_settings
from hello_memory.errors import InvalidInputError
from hello_memory.interfaces.rest import create_app
from hello_memory.memory.manager import MemoryManager
from hello_memory.retrieval.fusion import ViewResult, explain
from hello_memory.retrieval.recipes import SearchRecipe, register_recipe, unregister_recipe
from hello_memory.retrieval.registry import (
    BUILT_IN_VIEWS,
    register_view,
    registered_views,
    unregister_view,
    view_names,
)
from hello_memory.retrieval.views import ViewRequest
from hello_memory.stores.bundle import Stores

pytestmark = pytest.mark.slow

NS = "v"
KEY = "registry-test"


class Shortest:
    """A made-up view: the memories that hold a word of the question, shortest first."""

    name = "shortest"
    weight = 0.7
    needs_vectors = False
    shared_ranks = True

    def __init__(self) -> None:
        self.runs = 0

    def rank(self, stores: Stores, req: ViewRequest) -> ViewResult:
        self.runs += 1
        words = {w.lower() for w in req.analysis.keywords}
        items = [i for i in stores.records.memories.list_items(req.namespace, limit=500)
                 if words & set(i.content.lower().replace(".", " ").split())]
        items.sort(key=lambda i: (len(i.content), i.id))
        return [(i.id, 1.0 / len(i.content)) for i in items[: req.limit]]


@pytest.fixture
def shortest() -> Iterator[Shortest]:
    view = register_view(Shortest())  # the one registry line
    register_recipe(SearchRecipe(name="shortest-only", views=("shortest",),
                                 neighbor_weight=0.0))
    try:
        assert isinstance(view, Shortest)
        yield view
    finally:
        unregister_recipe("shortest-only")
        unregister_view("shortest")
    assert view_names() == BUILT_IN_VIEWS


def _manager(data: Path, **retrieval: object) -> MemoryManager:
    return MemoryManager.open(load_settings(environ={}, data_dir=data,
                                            semantic={"extractor": "rules"},
                                            retrieval=retrieval))


def test_a_made_up_view_in_python_recipes_settings_rest_and_explain(
        tmp_path: Path, shortest: Shortest) -> None:
    mm = _manager(tmp_path, view_weights={"shortest": 2.0})  # settings accept its name
    try:
        mm.add_many([{"content": c, "namespace": NS, "memory_type": "episodic"} for c in (
            "The blue kettle broke again this morning, so we ordered a new one online.",
            "Kettle descaled.",
            "We walked along the harbour after dinner.")])
        # its own recipe: only its ranking
        hits = mm.search("When was the kettle descaled?", recipe="shortest-only",
                         namespace=NS, touch=False)
        assert [h.item.content for h in hits][:2] == [
            "Kettle descaled.",
            "The blue kettle broke again this morning, so we ordered a new one online."]
        assert all(set(h.views) == {"shortest"} for h in hits)
        # the default search runs every registered view: it votes beside the others
        runs = shortest.runs
        top = mm.search("When was the kettle descaled?", namespace=NS, touch=False)[0]
        assert shortest.runs == runs + 1
        assert top.views["shortest"].rank == 1
        assert "shortest  rank   1" in explain(top)
        # through REST: the schema lists the recipe, a request naming it is answered
        settings = load_settings(environ={}, data_dir=tmp_path,
                                 api={"api_keys": {KEY: [NS]}})
        with TestClient(create_app(settings, manager=mm)) as client:
            schema = client.get("/openapi.json").json()
            enums = [p["recipe"]["enum"] for p in (
                c.get("properties", {}) for c in schema["components"]["schemas"].values())
                if "recipe" in p and "enum" in p["recipe"]]
            assert enums and all("shortest-only" in e for e in enums)
            r = client.post("/v1/search", params={"namespace": NS},
                            headers={"Authorization": f"Bearer {KEY}"},
                            json={"query": "kettle descaled", "recipe": "shortest-only"})
            assert r.status_code == 200, r.text
            assert r.json()["hits"][0]["views"] == {
                "shortest": {"rank": 1, "score": pytest.approx(1 / 16, abs=1e-6)}}
            bad = client.post("/v1/search", params={"namespace": NS},
                              headers={"Authorization": f"Bearer {KEY}"},
                              json={"query": "kettle", "recipe": "longest-only"})
            assert bad.status_code == 422 and "unknown search recipe" in bad.text
    finally:
        mm.close()


def test_a_weight_for_an_unregistered_view_is_refused(tmp_path: Path) -> None:
    with pytest.raises(InvalidInputError, match="unknown view"):
        _manager(tmp_path, view_weights={"shortest": 2.0}).close()


def test_the_registry_refuses_what_it_cannot_run() -> None:
    class NoRank:
        name = "norank"
        weight = 1.0
        needs_vectors = False
        shared_ranks = True

    with pytest.raises(InvalidInputError, match="not a view"):
        register_view(NoRank())  # type: ignore[arg-type]
    with pytest.raises(InvalidInputError, match="already registered"):
        register_view(registered_views()["lexical"])
    with pytest.raises(InvalidInputError, match="built-in"):
        unregister_view("graph")
    reserved = Shortest()
    reserved.name = "multilingual"  # the retriever's own re-reading (registry.RESERVED)
    with pytest.raises(InvalidInputError, match="must match"):
        register_view(reserved)
    reserved.name = "working"  # working memory's view is registered (memory_views.py)
    with pytest.raises(InvalidInputError, match="already registered"):
        register_view(reserved)
    with pytest.raises(InvalidInputError, match="unregistered view"):
        register_recipe(SearchRecipe(name="ghost", views=("ghost",)))
    assert view_names() == BUILT_IN_VIEWS
