"""Opening and replay happen in ``MemoryManager.open``, not in ``__init__`` (issue 31,
a thin facade): building a manager on stores sets attributes only; the index work a
crash left pending is replayed by ``open`` (``Stores.open`` with the graph links in
place), by an explicit ``resume()`` or by the manager's first write, and the graph
links are those of ``text/links.py`` ``GraphLinks`` (docs/ARCHITECTURE.md, "The write
path")."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from hello_memory.config import Settings, load_settings
from hello_memory.factory import build_embedder, open_stores
from hello_memory.memory.manager import MemoryManager
from hello_memory.stores.bundle import MEMORY_COLLECTION, Stores
from hello_memory.text.entities import RuleExtractor
from hello_memory.text.links import GraphLinks
from hello_memory.types import MemoryItem, MemoryType

NS = "crash"
# what a process wrote to the records before it was killed, unindexed
LEFT = [("Priya Natarajan moved to Berlin for Acme Robotics", MemoryType.SEMANTIC),
        ("The user's husband is Tom Berg", MemoryType.EPISODIC)]


@pytest.fixture(scope="module")
def embedder() -> Any:
    return build_embedder(load_settings(environ={}).embedding)


@pytest.fixture
def settings(tmp_path: Path, embedder: Any) -> Settings:
    """Settings of a data directory whose records hold LEFT with its index work pending."""
    settings = load_settings(environ={}, data_dir=tmp_path / "data",
                             semantic={"extractor": "rules"})
    with open_stores(settings, embedder=embedder) as stores:
        stores.records.memories.add_items(
            [MemoryItem(content=text, namespace=NS, memory_type=t) for text, t in LEFT])
    return settings


@pytest.fixture
def stores(settings: Settings, embedder: Any) -> Iterator[Stores]:
    """The stores opened as a caller building its own manager opens them: no links."""
    s = open_stores(settings, embedder=embedder)
    yield s
    s.close()


def pending(stores: Stores) -> list[int]:
    return [e.seq for e in stores.records.outbox.pending_outbox()]


def left_items(stores: Stores) -> list[MemoryItem]:
    return stores.records.memories.list_items(NS)


def assert_replayed(stores: Stores) -> None:
    """Every row applied, LEFT searchable, and the graph holds the links GraphLinks
    gives for each left memory (the semantic one's entities, the role link of both)."""
    assert pending(stores) == []
    assert stores.vectors.count(MEMORY_COLLECTION, namespace=NS) >= len(LEFT)
    links = GraphLinks(RuleExtractor())
    for item in left_items(stores):
        entities, _ = links(item)
        assert entities, item.content
        found = stores.graph.find_entities(NS, [e.name for e in entities])
        assert {e.name for e in found} == {e.name for e in entities}
    assert {i.id for i in left_items(stores)} <= stores.graph.memory_ids(NS)


def test_constructing_a_manager_on_stores_does_no_replay(stores: Stores) -> None:
    rows = pending(stores)
    assert len(rows) == len(LEFT)
    mentions = stores.records.mention_times
    mm = MemoryManager(stores, extractor=RuleExtractor(), times_from_text=not mentions)
    # attributes only: nothing applied, nothing installed into the stores
    assert pending(stores) == rows
    assert stores.extractor is None and stores.records.mention_times is mentions
    assert stores.vectors.count(MEMORY_COLLECTION, namespace=NS) == 0
    assert stores.graph.memory_ids(NS) == set()
    assert mm.resumed is False


def test_resume_replays_with_the_links_in_place(stores: Stores) -> None:
    mentions = stores.records.mention_times
    mm = MemoryManager(stores, extractor=RuleExtractor(), times_from_text=not mentions)
    assert mm.resume() == len(LEFT)
    assert mm.resumed is True
    assert stores.extractor is mm.extract_links  # the manager's GraphLinks, installed
    assert stores.records.mention_times is (not mentions)  # the manager's setting
    assert_replayed(stores)
    assert mm.resume() == 0  # again: nothing left


def test_the_first_write_replays(stores: Stores) -> None:
    mm = MemoryManager(stores, extractor=RuleExtractor())
    assert mm.search("Where does Priya live?", namespace=NS) == []  # a read replays nothing
    assert len(pending(stores)) == len(LEFT)
    mm.add("Alice Meyer plays chess in Lisbon", "semantic", namespace=NS)
    assert mm.resumed is True
    assert_replayed(stores)
    assert mm.search("Where does Priya live?", namespace=NS, top_k=1)[0].item.content == LEFT[0][0]


def test_apply_outbox_replays_with_links_installed_and_install_replays_nothing(
        stores: Stores) -> None:
    links = GraphLinks(RuleExtractor())
    stores.install_extractor(links)
    assert len(pending(stores)) == len(LEFT)  # installing replays nothing
    assert stores.apply_outbox() == len(LEFT)
    assert_replayed(stores)


def test_open_replays(settings: Settings, embedder: Any) -> None:
    with MemoryManager.open(settings, embedder=embedder) as mm:
        assert isinstance(mm.stores.extractor, GraphLinks)
        assert_replayed(mm.stores)
        assert mm.resume() == 0  # Stores.open replayed: nothing left for resume
        hit = mm.search("Who is my husband?", namespace=NS, top_k=1)[0]
        assert hit.item.content == LEFT[1][0]


def test_the_links_are_those_the_add_path_extracted_before() -> None:
    """GraphLinks gives what services/ingest.py ``extract_links`` gave: a semantic
    memory's entities and relations, the user's names and role links of any stored text
    memory, nothing for working memory."""
    links = GraphLinks(RuleExtractor())
    semantic = MemoryItem(content="Priya Natarajan moved to Berlin for Acme Robotics",
                          namespace=NS, memory_type=MemoryType.SEMANTIC)
    entities, relations = links(semantic)
    assert {e.name for e in entities} == {"Priya Natarajan", "Berlin", "Acme Robotics"}
    assert relations == list(RuleExtractor().extract(semantic.content, NS).relations)

    episodic = MemoryItem(content="My name is Sofia Chen. The user's husband is Tom Berg",
                          namespace=NS, memory_type=MemoryType.EPISODIC)
    entities, relations = links(episodic)
    assert [(e.name, e.type) for e in entities] == [
        ("the user", "self"), ("Sofia Chen", "person"), ("role:the user:husband", "role"),
        ("Tom Berg", "person")]
    by_id = {e.id: e.name for e in entities}
    assert [(by_id[r.source_id], r.type, by_id[r.target_id]) for r in relations] == [
        ("the user", "named", "Sofia Chen"), ("role:the user:husband", "is", "Tom Berg")]

    working = MemoryItem(content="The user's husband is Tom Berg", namespace=NS,
                         memory_type=MemoryType.WORKING)
    assert links(working) == ((), ())
