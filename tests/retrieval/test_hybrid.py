"""HybridRetriever end to end: real stores (SQLite, embedded Qdrant, SQLite graph), the
real MiniLM embedder, and the scripted LLM endpoint for planning and reflection."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
from llm.scripted_server import ScriptedLLMServer

from hello_memory.config import RetrievalSettings, load_settings
from hello_memory.errors import InvalidInputError, NamespaceRequiredError
from hello_memory.factory import open_stores
from hello_memory.llm import OpenAICompatClient
from hello_memory.memory.manager import MemoryManager
from hello_memory.memory.working import WorkingMemory
from hello_memory.retrieval.hybrid import HybridRetriever
from hello_memory.retrieval.parts import SearchParts
from hello_memory.text.entities import RuleExtractor

pytestmark = pytest.mark.slow

NOW = datetime(2024, 5, 15, 10, 0, tzinfo=timezone.utc)  # Wednesday
NS = "alice"
LAST_WEEK = NOW - timedelta(days=8)  # Tue 7 May: inside last calendar week
LONG_AGO = NOW - timedelta(days=60)

TURNS = [  # (speaker, text, event time, session)
    ("Alice", "I bought a red mountain bike at the shop downtown.", LAST_WEEK, "s2"),
    ("Bob", "Nice! Where will you ride it?", LAST_WEEK, "s2"),
    ("Alice", "Along the river trail near Lakeside every weekend.", LAST_WEEK, "s2"),
    ("Bob", "I adopted a grey kitten named Pixel.", LONG_AGO, "s1"),
    ("Alice", "Cats are lovely, I prefer dogs though.", LONG_AGO, "s1"),
    ("Bob", "My sister Carol moved to Berlin for work.", LONG_AGO, "s1"),
    ("Alice", "I bought a new laptop for programming.", LONG_AGO, "s1"),
    ("Bob", "The deployment of version 2.3 failed because of the database migration.",
     LONG_AGO, "s1"),
]


class Clock:
    def __call__(self) -> datetime:
        return NOW


@pytest.fixture(scope="module")
def manager(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MemoryManager]:
    from hello_memory.embedding import SentenceTransformerEmbedder

    data: Path = tmp_path_factory.mktemp("hybrid")
    settings = load_settings(environ={}, data_dir=data)
    mm = MemoryManager(open_stores(settings, embedder=SentenceTransformerEmbedder()),
                       working=WorkingMemory(clock=Clock()), extractor=RuleExtractor(),
                       clock=Clock())
    mm.add_many([{"content": f"{s}: {t}", "namespace": NS, "event_time": when,
                  "session_id": session, "importance": 0.5,
                  "metadata": {"speaker": s, "persons": ["Alice", "Bob"]}}
                 for s, t, when, session in TURNS])
    mm.add("Pixel is Bob's grey kitten", memory_type="semantic", namespace=NS, importance=0.5)
    mm.add("Alice bought a red mountain bike", namespace="other", importance=0.5)
    yield mm
    mm.close()


@pytest.fixture(scope="module")
def retriever(manager: MemoryManager) -> Iterator[HybridRetriever]:
    with HybridRetriever(manager, clock=Clock()) as r:
        yield r


def contents(hits: list) -> list[str]:
    return [h.item.content for h in hits]


def test_default_search_finds_and_explains(retriever: HybridRetriever) -> None:
    hits = retriever.retrieve("What bike did Alice buy?", 3, namespace=NS)
    assert hits[0].item.content.startswith("Alice: I bought a red mountain bike")
    top = hits[0]
    assert {"semantic", "lexical"} <= set(top.views)
    assert top.views["lexical"].rank == 1 and top.views["lexical"].score > 0
    text = retriever.explain(top)
    assert "semantic" in text and "lexical" in text and top.item.id in text
    assert all(h.item.namespace == NS for h in hits)  # "other" never leaks in
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)


def test_each_view_alone_and_empty_views(retriever: HybridRetriever) -> None:
    lex = retriever.retrieve("Pixel kitten", 5, namespace=NS, views=["lexical"],
                           neighbor_weight=0.0)
    assert lex and all(set(h.views) == {"lexical"} for h in lex)
    sem = retriever.retrieve("a small pet cat", 5, namespace=NS, views=["semantic"],
                           neighbor_weight=0.0)
    assert any("kitten" in c for c in contents(sem))
    # no person, entity, location or time in the question: the symbolic view is empty
    assert retriever.retrieve("what is nice", 5, namespace=NS, views=["symbolic"]) == []
    # no entity known to the graph: empty, not noise
    assert retriever.retrieve("how are things", 5, namespace=NS, views=["graph"]) == []
    # a query whose terms are all stopwords finds nothing lexically
    assert retriever.retrieve("what is the", 5, namespace=NS, views=["lexical"]) == []


def test_symbolic_time_view_is_calendar_true(retriever: HybridRetriever) -> None:
    hits = retriever.retrieve("what happened last week", 10, namespace=NS, views=["symbolic"],
                            neighbor_weight=0.0)
    assert hits and all(h.item.session_id == "s2" for h in hits)
    assert len(hits) == 3
    zh = retriever.retrieve("上周发生了什么", 10, namespace=NS, views=["symbolic"])
    assert {h.id for h in zh} == {h.id for h in hits}
    # the same words resolved against another reference time select another week
    later = retriever.retrieve("what happened last week", 10, namespace=NS, views=["symbolic"],
                             reference_time=NOW + timedelta(days=30))
    assert later == []


def test_symbolic_person_view_prefers_the_speaker(retriever: HybridRetriever) -> None:
    hits = retriever.retrieve("What did Bob say?", 10, namespace=NS, views=["symbolic"],
                            neighbor_weight=0.0)
    assert hits and all(h.item.metadata.get("speaker") == "Bob"
                        or "Bob" in h.item.content for h in hits)
    assert hits[0].item.metadata.get("speaker") == "Bob"


def test_graph_view_reaches_semantic_memories(retriever: HybridRetriever) -> None:
    hits = retriever.retrieve("Tell me about Pixel", 5, namespace=NS, views=["graph"],
                            neighbor_weight=0.0)
    assert contents(hits) == ["Pixel is Bob's grey kitten"]
    assert hits[0].views["graph"].score > 0


def test_neighbouring_turns_get_context(manager: MemoryManager) -> None:
    plain = HybridRetriever(manager, clock=Clock(),
                            settings=RetrievalSettings(neighbor_weight=0.0))
    ctx = HybridRetriever(manager, clock=Clock(), settings=RetrievalSettings(neighbor_weight=0.5))
    q = "Where will Alice ride her new bike?"
    with plain, ctx:
        a = {h.id: h for h in plain.retrieve(q, 10, namespace=NS, touch=False)}
        b = {h.id: h for h in ctx.retrieve(q, 10, namespace=NS, touch=False)}
    assert all(h.context == 0 for h in a.values())
    answer = next(h for h in b.values() if "river trail" in h.item.content)
    assert answer.context > 0  # its neighbours (the bike turns) lent it relevance
    assert "neighbouring" in ctx.explain(answer)


def test_filters_and_types(retriever: HybridRetriever, manager: MemoryManager) -> None:
    only_sem = retriever.retrieve("kitten", 5, namespace=NS, memory_types=["semantic"])
    assert only_sem and all(h.memory_type.value == "semantic" for h in only_sem)
    in_s1 = retriever.retrieve("bought", 5, namespace=NS, session_id="s1")
    assert in_s1 and all(h.item.session_id == "s1" for h in in_s1)
    recent = retriever.retrieve("bought", 5, namespace=NS,
                              time_range=(NOW - timedelta(days=30), None))
    assert recent and all(h.item.event_time >= NOW - timedelta(days=30) for h in recent)
    manager.add("Alice is drafting a bike-trip packing list", memory_type="working",
                namespace=NS)
    hits = retriever.retrieve("bike trip packing list", 10, namespace=NS)
    drafted = next(h for h in hits if "packing list" in h.item.content)
    assert set(drafted.views) == {"working"} and drafted.memory_type.value == "working"
    assert all("working" not in h.views for h in retriever.retrieve(
        "bike trip packing list", 3, namespace=NS, memory_types=["episodic"]))


def test_bad_input_is_a_typed_error(retriever: HybridRetriever) -> None:
    with pytest.raises(NamespaceRequiredError):
        retriever.retrieve("bike", namespace="")
    with pytest.raises(InvalidInputError):
        retriever.retrieve("   ", namespace=NS)
    with pytest.raises(InvalidInputError):
        retriever.retrieve("bike", namespace=NS, views=["semantic", "telepathy"])
    with pytest.raises(InvalidInputError):
        retriever.retrieve("bike", namespace=NS, memory_types=["perceptual"])  # not configured
    with pytest.raises(InvalidInputError):
        retriever.retrieve("bike", namespace=NS, time_range=(datetime(2024, 1, 1), None))
    with pytest.raises(InvalidInputError):
        HybridRetriever(retriever.stores,
                        settings=RetrievalSettings(view_weights={"semantics": 1.0}))


def test_keyword_fallback_without_embeddings(manager: MemoryManager) -> None:
    with HybridRetriever(manager, use_embeddings=False, clock=Clock()) as r:
        hits = r.retrieve("grey kitten Pixel", 3, namespace=NS)
    assert hits and "semantic" not in hits[0].views
    assert "Pixel" in hits[0].item.content


def test_llm_planning_and_reflection(manager: MemoryManager, llm_server: ScriptedLLMServer,
                                     llm: OpenAICompatClient) -> None:
    q = "What did Alice buy and what did Bob adopt?"

    def script_plan() -> None:
        llm_server.reply(json.dumps({"question_type": "multi", "key_entities": ["Alice", "Bob"],
                                     "required_info": [{"info_type": "purchase"},
                                                       {"info_type": "pet"}],
                                     "minimal_queries_needed": 2}))
        llm_server.reply(json.dumps({"queries": ["Alice purchase", "Bob adopted pet"]}))

    script_plan()
    with HybridRetriever(manager, llm=llm, clock=Clock()) as r:
        plan = r.plan(q)
    assert plan.queries == (q, "Alice purchase", "Bob adopted pet")
    assert [i.info_type for i in plan.information.required_info] == ["purchase", "pet"]
    script_plan()
    # round 1: incomplete, one gap query; round 2: complete
    llm_server.reply(json.dumps({"assessment": "incomplete", "coverage_percentage": 60,
                                 "missing_info": ["where Carol lives"]}))
    llm_server.reply(json.dumps({"queries": ["Carol moved to which city"]}))
    llm_server.reply(json.dumps({"assessment": "complete", "coverage_percentage": 100}))
    with HybridRetriever(manager, llm=llm, clock=Clock()) as r:
        hits = r.retrieve(q, 10, namespace=NS)
    assert llm_server.pending == 0 and len(llm_server.requests) == 7  # plan twice + 3
    berlin = next(h for h in hits if "Berlin" in h.item.content)
    assert "Carol moved to which city" in berlin.queries
    bike = next(h for h in hits if "mountain bike" in h.item.content)
    assert bike.queries[0] == q
    # per-call switches: no LLM request at all
    before = len(llm_server.requests)
    with HybridRetriever(manager, llm=llm, clock=Clock()) as r:
        r.retrieve(q, 5, namespace=NS, enable_planning=False, enable_reflection=False)
    assert len(llm_server.requests) == before


def test_reflection_is_bounded_and_survives_garbage(manager: MemoryManager,
                                                    llm_server: ScriptedLLMServer,
                                                    llm: OpenAICompatClient) -> None:
    settings = RetrievalSettings(max_reflection_rounds=1)
    q = "What did Bob adopt?"
    for _ in range(2):  # planning, then targeted queries: malformed, and again after repair
        llm_server.reply("not json at all")
        llm_server.reply("still not json")
    llm_server.reply(json.dumps({"assessment": "incomplete"}))
    llm_server.reply(json.dumps({"queries": ["grey kitten"]}))
    with HybridRetriever(manager, llm=llm, settings=settings, clock=Clock()) as r:
        hits = r.retrieve(q, 5, namespace=NS)
    assert any("kitten" in c for c in contents(hits))
    assert llm_server.pending == 0  # one round only: no second completeness check
    assert llm.stats.fallbacks == 2 and llm.stats.repairs == 2


def test_neighbours_follow_writes_between_searches(manager: MemoryManager) -> None:
    """A turn added (or forgotten) after a search is a neighbour (or not) in the next."""
    ns = "fresh"
    first = manager.add_many([
        {"content": "Fay: I planted three apple trees in the orchard.", "namespace": ns,
         "session_id": "o", "event_time": LAST_WEEK},
    ])
    q = "apple trees in the orchard"
    with HybridRetriever(manager, clock=Clock(),
                         settings=RetrievalSettings(neighbor_weight=1.0)) as r:
        assert all(h.context == 0 for h in r.retrieve(q, 5, namespace=ns, touch=False))
        later = manager.add_many([
            {"content": "Gus: Which variety did you choose?", "namespace": ns,
             "session_id": "o", "event_time": LAST_WEEK + timedelta(minutes=1)},
        ])
        hits = {h.id: h for h in r.retrieve(q, 5, namespace=ns, touch=False)}
        # its only neighbour, the first turn, lends it weight 1.0 x its fused score
        assert hits[later[0].id].context == pytest.approx(hits[first[0].id].fused)
        assert hits[later[0].id].context > 0
        assert manager.remove(later[0].id, namespace=ns)
        assert all(h.context == 0 for h in r.retrieve(q, 5, namespace=ns, touch=False))


def test_neighbours_obey_the_callers_filters(manager: MemoryManager) -> None:
    ns = "filters"
    manager.add_many([
        {"content": "Dana: I finally repaired the old tractor engine.", "namespace": ns,
         "session_id": "t", "importance": 0.9, "event_time": LAST_WEEK},
        {"content": "Eli: That sounds like hard work.", "namespace": ns,
         "session_id": "t", "importance": 0.1, "event_time": LAST_WEEK},
    ])
    with HybridRetriever(manager, clock=Clock(),
                         settings=RetrievalSettings(neighbor_weight=1.0)) as r:
        everything = r.retrieve("tractor engine repair", 5, namespace=ns)
        important = r.retrieve("tractor engine repair", 5, namespace=ns, min_importance=0.5)
    assert any(h.item.content.startswith("Eli") and h.context > 0 for h in everything)
    assert [h.item.content[:4] for h in important] == ["Dana"]


def test_a_retriever_built_from_parts_needs_no_manager(manager: MemoryManager) -> None:
    """Issue 31: the retriever takes SearchParts (retrieval/parts.py), not the facade;
    the manager lends the same parts, and bare stores are parts with none of them."""
    query = "What bike did Alice buy?"
    parts = SearchParts(manager.stores, working=manager.working, extractor=RuleExtractor(),
                        clock=Clock())
    with HybridRetriever(parts) as from_parts, \
            HybridRetriever(manager, clock=Clock()) as from_manager:
        assert from_parts.parts is parts and from_manager.parts is manager.search_parts
        assert [h.id for h in from_parts.retrieve(query, 3, namespace=NS, touch=False)] == \
            [h.id for h in from_manager.retrieve(query, 3, namespace=NS, touch=False)]
    with HybridRetriever(manager.stores, clock=Clock()) as bare:
        assert bare.parts.working is None and bare.llm is None
        assert bare.retrieve(query, 3, namespace=NS, touch=False)
        with pytest.raises(InvalidInputError, match="per-type recipe needs the memory types"):
            bare.retrieve(query, 3, namespace=NS, recipe="per-type")
        with pytest.raises(InvalidInputError, match="perceptual"):
            bare.retrieve(query, 3, namespace=NS, memory_types=["perceptual"])
