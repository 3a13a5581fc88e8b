"""The three stores + real embedder together: write path, persistence, replay (the
records, and the SQL graph tables with them, in SQLite and in PostgreSQL)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest
from typer.testing import CliRunner

from hello_memory.config import Settings, load_settings
from hello_memory.errors import EmptyContentError, NamespaceRequiredError
from hello_memory.factory import open_stores
from hello_memory.stores.bundle import DENSE, MEMORY_COLLECTION, Stores
from hello_memory.stores.graph import Neo4jGraphStore, SQLiteGraphStore
from hello_memory.stores.records import ItemFilter
from hello_memory.text.bm25 import BM25_VECTOR
from hello_memory.types import Entity, MemoryItem, Relation

pytestmark = pytest.mark.slow


def capitalised_words(item: MemoryItem) -> tuple[Sequence[Entity], Sequence[Relation]]:
    """A tiny rule extractor: capitalised words are entities, chained in order."""
    names = [w.strip(".,;") for w in item.content.split() if w[:1].isupper()]
    ents = [Entity(item.namespace, n, "name") for n in dict.fromkeys(names)]
    pairs = zip(ents, ents[1:], strict=False)
    rels = [Relation(item.namespace, a.id, b.id, "next_to") for a, b in pairs]
    return ents, rels


@pytest.fixture(scope="module")
def embedder():
    from hello_memory.embedding import SentenceTransformerEmbedder

    e = SentenceTransformerEmbedder()
    assert e.dimension == 384
    return e


def settings_for(tmp_path: Path, **kw) -> Settings:
    return load_settings(environ={}, data_dir=tmp_path / "data", **kw)


@pytest.fixture
def stores(tmp_path: Path, embedder, records_url: str) -> Iterator[Stores]:
    s = open_stores(settings_for(tmp_path, records={"url": records_url}), embedder=embedder,
                    extractor=capitalised_words)
    yield s
    s.close()


FACTS = [
    "Alice moved from Paris to Berlin for a robotics job.",
    "Bob is allergic to peanuts.",
    "The quarterly tax report is due on April 15.",
]


def dense(stores: Stores, ns: str, query: str, limit: int) -> list[tuple[str, float]]:
    """(content, cosine) of the nearest memories of ``ns``: the dense index the search
    engine's semantic view reads, joined to the records."""
    qv = stores.embedder.embed_query(query)
    hits = stores.vectors.nearest(MEMORY_COLLECTION, qv.tolist(), namespace=ns, using=DENSE,
                                 limit=limit)
    items = {i.id: i for i in stores.records.memories.get_items(ns, [h.id for h in hits])}
    return [(items[h.id].content, h.score) for h in hits if h.id in items]


def test_add_and_search_rank_by_meaning(stores: Stores) -> None:
    stores.add([MemoryItem(content=c, namespace="u1") for c in FACTS])
    hits = dense(stores, "u1", "Which city does Alice live in?", 3)
    assert hits[0][0] == FACTS[0]
    assert hits[0][1] > hits[-1][1]
    assert dense(stores, "u1", "food allergy", 1)[0][0] == FACTS[1]


def test_namespaces_do_not_leak(stores: Stores) -> None:
    stores.add([MemoryItem(content=FACTS[0], namespace="alice")])
    stores.add([MemoryItem(content=FACTS[1], namespace="bob")])
    assert [c for c, _ in dense(stores, "alice", "peanuts allergy", 10)] == [FACTS[0]]
    with pytest.raises(NamespaceRequiredError):
        dense(stores, "", "anything", 10)


def test_bad_item_in_batch_writes_nothing_anywhere(stores: Stores) -> None:
    with pytest.raises(EmptyContentError):
        stores.add([MemoryItem(content="fine", namespace="u1"),
                    MemoryItem(content="  ", namespace="u1")])
    assert stores.records.memories.count_items("u1") == 0
    assert stores.vectors.count(MEMORY_COLLECTION, namespace="u1") == 0
    assert stores.graph.stats("u1").entities == 0


def test_graph_is_fed_and_cleaned_through_outbox(stores: Stores) -> None:
    [item] = stores.add([MemoryItem(content="Alice met Bob in Berlin.", namespace="g")])
    st = stores.graph.stats("g")
    assert (st.entities, st.relations, st.mentions) == (3, 2, 3)
    alice = stores.graph.find_entities("g", ["alice"])
    reached = stores.graph.neighbors("g", [alice[0].id], max_hops=2)
    assert {h.name for h in reached} == {"Alice", "Bob", "Berlin"}
    assert stores.records.memories.delete_items("g", [item.id]) == 1
    assert stores.apply_outbox() == 1
    assert stores.graph.stats("g").entities == 0
    assert stores.vectors.count(MEMORY_COLLECTION, namespace="g") == 0


def test_everything_survives_a_restart(tmp_path: Path, embedder, records_url: str) -> None:
    settings = settings_for(tmp_path, records={"url": records_url})
    with open_stores(settings, embedder=embedder, extractor=capitalised_words) as s:
        s.add([MemoryItem(content=c, namespace="p") for c in FACTS])
    with open_stores(settings, embedder=embedder) as s:
        assert s.records.memories.count_items("p") == 3
        assert s.vectors.count(MEMORY_COLLECTION, namespace="p") == 3
        assert s.graph.stats("p").entities > 0
        assert dense(s, "p", "peanut allergy", 1)[0][0] == FACTS[1]


def test_pending_outbox_is_replayed_on_open(tmp_path: Path, embedder, records_url: str) -> None:
    """A process that died after the record commit but before indexing: the next
    open makes the memory searchable."""
    settings = settings_for(tmp_path, records={"url": records_url})
    with open_stores(settings, embedder=embedder) as s:
        s.records.memories.add_items([MemoryItem(content=FACTS[2], namespace="crash")])
        assert s.vectors.count(MEMORY_COLLECTION, namespace="crash") == 0
    with open_stores(settings, embedder=embedder, extractor=capitalised_words) as s:
        assert s.records.outbox.pending_outbox() == []
        assert dense(s, "crash", "tax deadline", 1)[0][0] == FACTS[2]


def test_replay_without_an_extractor_waits_for_first_use(tmp_path: Path, embedder) -> None:
    """Opened without an extractor (a MemoryManager built on the stores installs its
    own before its first write), the bundle keeps the "memory" replay for its first
    write, apply_outbox or replay_deferred."""
    settings = settings_for(tmp_path)
    with open_stores(settings, embedder=embedder) as s:
        s.records.memories.add_items([MemoryItem(content=FACTS[2], namespace="crash")])
    with open_stores(settings, embedder=embedder) as s:
        assert len(s.records.outbox.pending_outbox()) == 1
        assert dense(s, "crash", "tax deadline", 1) == []  # not indexed yet
        s.add([MemoryItem(content=FACTS[0], namespace="crash")])
        assert s.records.outbox.pending_outbox() == []
        assert dense(s, "crash", "tax deadline", 1)[0][0] == FACTS[2]


def test_factory_builds_the_bolt_graph_backend(tmp_path: Path, embedder,
                                               falkordb_bolt_url: str) -> None:
    settings = settings_for(tmp_path, graph={"provider": "neo4j", "uri": falkordb_bolt_url,
                                             "user": None})
    with open_stores(settings, embedder=embedder, extractor=capitalised_words) as s:
        assert isinstance(s.graph, Neo4jGraphStore)
        s.graph.clear("bolt-ns")
        s.add([MemoryItem(content="Carol visited Tokyo.", namespace="bolt-ns")])
        assert s.graph.stats("bolt-ns").entities == 2
        s.graph.clear("bolt-ns")
    with open_stores(settings_for(tmp_path / "other"), embedder=embedder) as s:
        assert isinstance(s.graph, SQLiteGraphStore)


def test_cli_demo_persists_across_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from hello_memory.interfaces.cli import app

    monkeypatch.chdir(tmp_path)
    runner = CliRunner()
    first = runner.invoke(app, ["demo"])
    assert first.exit_code == 0, first.output
    assert "Stored 8 memories" in first.output
    assert "Berlin" in first.output
    second = runner.invoke(app, ["demo"])
    assert second.exit_code == 0, second.output
    assert "Found 8 memories stored by an earlier run" in second.output
    assert (tmp_path / ".hello_memory" / "records.db").exists()
    with open_stores(load_settings(environ={})) as s:
        assert s.records.memories.count_items("demo", ItemFilter(status=None)) == 8


def bm25(stores: Stores, ns: str, query: str, limit: int = 10) -> list[str]:
    """Contents of the BM25 index's best matches (the engine's lexical view reads it)."""
    sparse = stores.lexical.query(query)
    if sparse is None:
        return []
    hits = stores.vectors.nearest(MEMORY_COLLECTION, sparse, namespace=ns, using=BM25_VECTOR,
                                 limit=limit)
    items = {i.id: i for i in stores.records.memories.get_items(ns, [h.id for h in hits])}
    return [items[h.id].content for h in hits if h.id in items]


def test_bm25_finds_exact_terms_dense_misses(stores: Stores) -> None:
    texts = ["Order 984233: the left earbud crackles.",
             "Order 771205 shipped to Lisbon yesterday.",
             "用户的订单984233已经退款。",
             "The weather in Berlin was lovely."]
    stores.add([MemoryItem(content=t, namespace="lex") for t in texts])
    assert set(bm25(stores, "lex", "984233", 5)) == {texts[0], texts[2]}
    assert bm25(stores, "lex", "Lisbon shipped", 1)[0] == texts[1]
    assert bm25(stores, "lex", "shipping to lisbon", 1)[0] == texts[1]  # stemmed
    assert bm25(stores, "lex", "the a of", 5) == []  # stopwords-only query
    assert bm25(stores, "other", "984233") == []  # namespaced
    # idf: a rarer shared term outranks a common one
    stores.add([MemoryItem(content=f"Order {n} is pending." , namespace="lex")
                for n in range(100000, 100005)])
    assert bm25(stores, "lex", "order Berlin", 1)[0] == texts[3]
