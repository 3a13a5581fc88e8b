"""ProgressiveLoader (index → timeline → full) on a real MemoryManager and MiniLM."""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest

from hello_memory.config import load_settings
from hello_memory.errors import InvalidInputError
from hello_memory.factory import open_stores
from hello_memory.memory.manager import MemoryManager
from hello_memory.memory.scoring import ScoreBreakdown, SearchHit, ViewHit
from hello_memory.memory.working import WorkingMemory
from hello_memory.retrieval.hybrid import MULTILINGUAL_SCAN
from hello_memory.retrieval.progressive import (
    IndexLayer,
    ProgressiveLoader,
    TimelineLayer,
    TokenMetrics,
    available_tokens,
    hit_relevance,
    is_detail_seeking,
    optimize_context,
    topic_key,
)
from hello_memory.text.tokens import default_token_counter
from hello_memory.types import MemoryItem

pytestmark = pytest.mark.slow

NOW = datetime(2024, 6, 1, 12, 0, tzinfo=timezone.utc)
NS = "proj"
COUNT = default_token_counter().count

BROAD = "deployment of version 2.3"
# Related to the deploy-23 topic but no perfect match (relevance well below 1).
PARAPHRASE = "shipping the new billing version"
DETAIL_EN = "what exactly did we change to fix the deployment migration"
DETAIL_ZH = "具体是怎么修复的"
IRRELEVANT = "quantum chromodynamics lattice simulation on GPUs"
MIGRATION_FIX = ("We fixed the deployment migration by adding a default value to the new "
                 "invoices.currency column.")
POOL_FIX = "修复数据库连接池泄漏：在 finally 块中关闭连接，并把连接池上限从 20 调到 50。"


def ago(days: int) -> datetime:
    return NOW - timedelta(days=days)


CORPUS: list[dict[str, Any]] = [
    # One session (topic "deploy-23"), English.
    dict(content="We deployed version 2.3 of the billing service to production.",
         session_id="deploy-23", event_time=ago(10)),
    dict(content="The deployment of version 2.3 was rolled back after a database migration "
                 "error.", session_id="deploy-23", event_time=ago(9)),
    dict(content=MIGRATION_FIX, session_id="deploy-23", event_time=ago(8)),
    dict(content="Version 2.3.1 of the billing service was deployed to production "
                 "successfully.", session_id="deploy-23", event_time=ago(7)),
    # A metadata topic ("db-pool"), Chinese, one of them in working memory.
    dict(content="数据库连接池泄漏导致服务超时，排查发现连接没有归还。",
         metadata={"topic": "db-pool"}, event_time=ago(5)),
    dict(content=POOL_FIX, metadata={"topic": "db-pool"}, event_time=ago(4)),
    dict(content="数据库连接池修复后，服务超时告警消失。", metadata={"topic": "db-pool"},
         event_time=ago(3)),
    dict(content="正在观察数据库连接池的监控指标。", memory_type="working",
         metadata={"topic": "db-pool"}, event_time=NOW),
    # No topic, no session: its own topic.
    dict(content="Alice prefers green tea in the afternoon.", memory_type="semantic",
         event_time=ago(20)),
    dict(content="Quarterly planning notes: the team agreed to spend the next three months on "
                 "reliability work, on-call rotation changes, better dashboards for the "
                 "billing pipeline, and a written incident review process for every outage "
                 "longer than fifteen minutes, with owners assigned per service.",
         event_time=ago(30)),
]


@pytest.fixture(scope="module")
def embedder():
    from hello_memory.embedding import SentenceTransformerEmbedder

    return SentenceTransformerEmbedder()


@pytest.fixture
def mm(tmp_path: Path, embedder) -> Iterator[MemoryManager]:
    settings = load_settings(environ={}, data_dir=tmp_path / "data")
    m = MemoryManager(open_stores(settings, embedder=embedder),
                      working=WorkingMemory(clock=lambda: NOW), clock=lambda: NOW)
    m.add_many([{"memory_type": "episodic", "importance": 0.5, "namespace": NS, **e}
                for e in CORPUS])
    yield m
    m.close()


@pytest.fixture
def loader(mm: MemoryManager) -> ProgressiveLoader:
    return ProgressiveLoader(mm)


def all_items(mm: MemoryManager) -> list[MemoryItem]:
    return mm.stores.records.memories.list_items(NS) + mm.working.list(NS)


def check_accounting(memories: list[dict[str, Any]], metrics: TokenMetrics) -> None:
    """Layer counts are exactly the tokens of what was handed out (plus the index)."""
    timeline = sum(COUNT(m["content"]) for m in memories if m["layer"] == "timeline")
    full = sum(COUNT(m["content"]) for m in memories if m["layer"] == "full")
    assert (metrics.layer2_tokens, metrics.layer3_tokens) == (timeline, full)
    assert metrics.total_tokens == metrics.layer1_tokens + timeline + full


# --- TokenMetrics ------------------------------------------------------------------
def test_token_metrics_savings_math() -> None:
    m = TokenMetrics(layer1_tokens=100, layer2_tokens=200, layer3_tokens=300)
    m.calculate_savings(1000)
    assert (m.total_tokens, m.estimated_savings_percent) == (600, 40.0)
    m.calculate_savings(500)  # used more than "everything": never negative
    assert m.estimated_savings_percent == 0.0
    m.calculate_savings(0)
    assert m.estimated_savings_percent == 0.0
    one = TokenMetrics(layer1_tokens=1)
    one.calculate_savings(3)
    assert one.estimated_savings_percent == 66.7


# --- layers ------------------------------------------------------------------------
def test_topic_keys_metadata_then_session_then_id(mm: MemoryManager) -> None:
    keys = {i.content: topic_key(i) for i in all_items(mm)}
    assert keys[MIGRATION_FIX] == "deploy-23"
    assert keys[POOL_FIX] == "db-pool"
    alice = next(i for i in all_items(mm) if i.content.startswith("Alice"))
    assert keys[alice.content] == alice.id


def test_index_layer_groups_hits_into_topics(mm: MemoryManager) -> None:
    index = IndexLayer(mm)
    topics = index.find_relevant_topics("数据库连接池", namespace=NS, threshold=0.5)
    assert topics and topics[0].key == "db-pool"
    top = topics[0]
    assert top.relevance == max(hit_relevance(h, "数据库连接池") for h in top.hits)
    assert all(topic_key(h.item) == "db-pool" for h in top.hits)
    line = index.render(top)
    assert re.fullmatch(r"\[db-pool\] .+ · \d+ memor(y|ies) · latest \d{4}-\d{2}-\d{2}", line)
    assert "\n" not in line
    everything = index.find_relevant_topics("数据库连接池", namespace=NS, threshold=0.0)
    assert len(everything) >= len(topics)
    assert [t.relevance for t in everything] == sorted((t.relevance for t in everything),
                                                       reverse=True)


def test_timeline_layer_most_recent_entries_of_the_topic(mm: MemoryManager) -> None:
    [topic] = IndexLayer(mm).find_relevant_topics(BROAD, namespace=NS, threshold=0.5)
    timeline = TimelineLayer(mm)
    recent = timeline.recent(topic, namespace=NS)
    assert [i.event_time for i in recent] == [ago(7), ago(8), ago(9)]
    line = timeline.render(recent[1])
    assert line.startswith(f"{ago(8).date().isoformat()} episodic: We fixed the deployment")
    assert line.endswith("column.")  # short enough: not cut
    short = TimelineLayer(mm, content_tokens=8).render(recent[1])
    assert short.endswith("…") and COUNT(short) < COUNT(line)


# --- the loader ----------------------------------------------------------------------
def test_irrelevant_query_returns_nothing_but_the_index_cost(loader: ProgressiveLoader) -> None:
    memories, metrics = loader.load_relevant_context(IRRELEVANT, namespace=NS)
    assert memories == []
    # The seed charges the index the loader scanned even when no topic is relevant.
    assert metrics.layer2_tokens == metrics.layer3_tokens == 0
    assert metrics.total_tokens == metrics.layer1_tokens
    assert metrics.estimated_savings_percent > 0


def test_empty_namespace_costs_nothing(loader: ProgressiveLoader) -> None:
    memories, metrics = loader.load_relevant_context(BROAD, namespace="nobody")
    assert memories == [] and metrics == TokenMetrics()


def test_broad_query_stops_at_the_timeline(loader: ProgressiveLoader) -> None:
    memories, metrics = loader.load_relevant_context(BROAD, namespace=NS)
    assert len(memories) == 3
    assert {m["layer"] for m in memories} == {"timeline"}
    assert {m["topic"] for m in memories} == {"deploy-23"}
    assert [m["event_time"] for m in memories] == [ago(7), ago(8), ago(9)]
    assert set(memories[0]) == {"id", "type", "layer", "content", "topic", "relevance",
                                "event_time"}
    assert all(re.match(r"\d{4}-\d{2}-\d{2} episodic: ", m["content"]) for m in memories)
    assert metrics.layer1_tokens > 0 and metrics.layer3_tokens == 0
    assert loader.last_index.startswith("[deploy-23] ")
    # A topic that is one memory's own id shows a short handle, not the whole UUID (its
    # token count varied enough from id to id to eat the savings of this small corpus).
    alone = [i for i in all_items(loader.manager) if topic_key(i) == i.id]
    assert alone and all(f"[{i.id[:8]}] " in loader.last_index and i.id not in
                         loader.last_index for i in alone)
    assert COUNT(loader.last_index) == metrics.layer1_tokens
    check_accounting(memories, metrics)
    available = sum(COUNT(i.content) for i in all_items(loader.manager))
    assert metrics.estimated_savings_percent == round(
        (available - metrics.total_tokens) / available * 100, 1) > 0


@pytest.mark.parametrize(("query", "topic", "expected"), [
    (DETAIL_EN, "deploy-23", MIGRATION_FIX),
    (DETAIL_ZH, "db-pool", POOL_FIX),
    ("数据库连接池泄漏具体是怎么修复的", "db-pool", POOL_FIX),
], ids=["en", "zh", "zh-long"])
def test_detail_seeking_query_loads_full_memories(loader: ProgressiveLoader, query: str,
                                                  topic: str, expected: str) -> None:
    memories, metrics = loader.load_relevant_context(query, namespace=NS)
    full = [m for m in memories if m["layer"] == "full"]
    assert full and metrics.layer3_tokens > 0
    assert all(m["topic"] == topic for m in full)
    assert expected in [m["content"] for m in full]
    # A memory loaded in full replaces its own timeline line: no duplicates.
    ids = [m["id"] for m in memories]
    assert len(ids) == len(set(ids))
    check_accounting(memories, metrics)


def test_high_relevance_topics_load_in_full_when_timeline_is_not_enough(
        mm: MemoryManager) -> None:
    class Skeptic(ProgressiveLoader):
        def sufficient_context(self, memories: Any, query: str) -> bool:
            return False

    [topic] = IndexLayer(mm).find_relevant_topics(PARAPHRASE, namespace=NS, threshold=0.5)
    assert topic.key == "deploy-23" and topic.relevance < 0.99
    memories, _ = Skeptic(mm, high_relevance_threshold=topic.relevance - 0.01
                          ).load_relevant_context(PARAPHRASE, namespace=NS)
    full = [m for m in memories if m["layer"] == "full"]
    assert full and {m["topic"] for m in full} == {"deploy-23"}
    memories, _ = Skeptic(mm, high_relevance_threshold=topic.relevance + 0.01
                          ).load_relevant_context(PARAPHRASE, namespace=NS)
    assert len(memories) == 3 and {m["layer"] for m in memories} == {"timeline"}


def test_thresholds_come_from_the_constructor(mm: MemoryManager) -> None:
    strict = ProgressiveLoader(mm, relevance_threshold=0.95, high_relevance_threshold=0.95)
    assert strict.load_relevant_context(PARAPHRASE, namespace=NS)[0] == []
    assert ProgressiveLoader(mm).load_relevant_context(PARAPHRASE, namespace=NS)[0] != []
    for bad in ({"relevance_threshold": 0.9, "high_relevance_threshold": 0.5},
                {"relevance_threshold": -0.1}, {"timeline_entries": 0},
                {"default_max_tokens": -1}, {"standing_share": 1.5},
                {"standing_min_importance": -1}, {"standing_limit": -1}):
        with pytest.raises(InvalidInputError):
            ProgressiveLoader(mm, **bad)
    with pytest.raises(InvalidInputError):
        ProgressiveLoader(mm).load_relevant_context(BROAD, -1, namespace=NS)


def test_budget_is_never_exceeded(loader: ProgressiveLoader) -> None:
    budgets = [*range(0, 120, 3), *range(120, 3001, 97), 3000]
    for query in (BROAD, DETAIL_EN, DETAIL_ZH, IRRELEVANT):
        for budget in budgets:
            memories, metrics = loader.load_relevant_context(query, budget, namespace=NS)
            assert metrics.total_tokens <= budget, (query, budget)
            check_accounting(memories, metrics)


def test_tiny_budget_returns_only_what_fits(loader: ProgressiveLoader) -> None:
    memories, metrics = loader.load_relevant_context(DETAIL_EN, 10, namespace=NS)
    assert metrics.total_tokens <= 10
    assert sum(COUNT(m["content"]) for m in memories) <= 10 - metrics.layer1_tokens
    assert loader.load_relevant_context(DETAIL_EN, 0, namespace=NS)[1] == TokenMetrics(
        estimated_savings_percent=100.0)


def test_layer_summary_and_manual_tracking(loader: ProgressiveLoader) -> None:
    _, metrics = loader.load_relevant_context(DETAIL_EN, namespace=NS)
    summary = loader.get_layer_summary()
    assert summary["total_tokens"] == metrics.total_tokens > 0
    assert sum(summary[f"layer{n}"]["percent"] for n in (1, 2, 3)) == pytest.approx(100, abs=0.2)
    assert summary["estimated_savings_percent"] == metrics.estimated_savings_percent
    assert all(summary[f"layer{n}"]["description"] for n in (1, 2, 3))

    loader.reset_metrics()
    assert loader.get_token_metrics() == TokenMetrics()
    assert loader.get_layer_summary()["layer1"]["percent"] == 0.0
    for layer, tokens in ((1, 150), (2, 600), (3, 1200), (3, 50)):
        loader.track_token_usage(layer, tokens)
    m = loader.get_token_metrics()
    assert (m.layer1_tokens, m.layer2_tokens, m.layer3_tokens, m.total_tokens) == (
        150, 600, 1250, 2000)
    m.layer1_tokens = 0  # a copy: the loader's metrics are untouched
    assert loader.get_token_metrics().layer1_tokens == 150
    assert loader.get_layer_summary()["layer3"]["percent"] == 62.5
    bad: list[tuple[Any, Any]] = [(0, 1), (4, 1), (True, 1), (1, -1), (1, 1.5)]
    for layer, tokens in bad:
        with pytest.raises(InvalidInputError):
            loader.track_token_usage(layer, tokens)


def test_sufficient_context_heuristics(loader: ProgressiveLoader) -> None:
    one = [{"content": "x"}]
    assert not loader.sufficient_context([], "anything")
    assert loader.sufficient_context(one, "what happened")
    assert loader.sufficient_context(one * 3, "what happened")
    for query in ("Give me the details", "quote it verbatim", "What EXACTLY failed?",
                  "请给出详细步骤", "原文是什么", "具体是怎么修复的"):
        assert is_detail_seeking(query), query
        assert not loader.sufficient_context(one * 3, query)
    assert not is_detail_seeking("what was the exact-ish date")  # whole words only


# --- optimize_context ------------------------------------------------------------------
def test_optimize_context_whole_items_under_budget(mm: MemoryManager) -> None:
    [hit] = mm.search("Alice tea", top_k=1, namespace=NS)
    big = "a long paragraph about databases " * 20
    items: list[Any] = ["short note", big, "", {"id": "x", "content": "修复连接池"},
                        {"id": "x", "content": "another text, same id"}, "short note", hit,
                        "tiny"]
    plan = optimize_context(items, 30)
    assert plan.tokens <= 30
    def text(item: Any) -> str:
        return item if isinstance(item, str) else (
            item["content"] if isinstance(item, dict) else item.item.content)

    assert plan.tokens == sum(COUNT(text(i)) for i in plan.included)
    assert plan.included == ["short note", {"id": "x", "content": "修复连接池"}, hit, "tiny"]
    reasons = {repr(item)[:20]: why for item, why in plan.left_out}
    assert list(reasons.values()) == ["over budget", "empty", "duplicate", "duplicate"]
    for budget in range(0, 60):
        assert optimize_context(items, budget).tokens <= budget
    assert optimize_context(items, 0).included == []
    with pytest.raises(InvalidInputError):
        optimize_context(items, -1)
    with pytest.raises(InvalidInputError):
        optimize_context([42], 10)  # type: ignore[list-item]


# --- relevance gate, bounded reads, standing facts, exclusions (issue 13) ------------
def test_hit_relevance_reads_absolute_evidence() -> None:
    item = MemoryItem(content="Alice is allergic to peanuts.", namespace=NS)
    # The per-type recipe: the breakdown's parts are absolute.
    assert hit_relevance(SearchHit(item, 0.5, ScoreBreakdown(similarity=0.4, graph=0.2))) == 0.4
    # The hybrid engine: breakdown.similarity is relative to the query's best hit (the
    # top hit gets 1.0 however poor), so the views' evidence is read instead.
    relative = ScoreBreakdown(similarity=1.0)
    weak = SearchHit(item, 0.9, relative, fused=0.016, views={"semantic": ViewHit(1, 0.2)})
    assert hit_relevance(weak) == pytest.approx(0.2)
    assert hit_relevance(weak, "quantum chromodynamics") == pytest.approx(0.2)
    assert hit_relevance(weak, "what is Alice allergic to?") == 1.0  # every query term
    lexical = SearchHit(item, 0.9, relative, fused=0.016, views={"lexical": ViewHit(1, 7.5)})
    assert hit_relevance(lexical) == 0.0  # a raw BM25 score is no absolute evidence
    assert hit_relevance(lexical, "peanuts and cashews") == pytest.approx(0.5)
    graph = SearchHit(item, 0.9, relative, fused=0.01, views={"graph": ViewHit(1, 0.5)})
    assert hit_relevance(graph) == 0.5  # a neighbour of a named entity
    turn = SearchHit(item, 0.9, relative, fused=0.01, views={"working": ViewHit(1, 1.04)})
    assert hit_relevance(turn) == 1.0  # clipped
    neighbour = SearchHit(item, 0.3, relative, context=0.004)  # found through its session
    assert hit_relevance(neighbour) == 0.0


class CallLog:
    """The memory repository with every call recorded (name, positional args, keywords)."""

    def __init__(self, inner: Any) -> None:
        self.inner, self.calls = inner, []

    def __getattr__(self, name: str) -> Any:
        target = getattr(self.inner, name)
        if not callable(target):
            return target

        def call(*args: Any, **kwargs: Any) -> Any:
            self.calls.append((name, args, kwargs))
            return target(*args, **kwargs)
        return call


@pytest.mark.parametrize("query", [BROAD, DETAIL_EN, IRRELEVANT])
def test_per_call_reads_are_bounded(mm: MemoryManager, monkeypatch: pytest.MonkeyPatch,
                                    query: str) -> None:
    """No read of the whole namespace: the search, one LIMIT query per topic, the
    standing facts with a LIMIT, and the stored token total."""
    log = CallLog(mm.stores.records.memories)
    monkeypatch.setattr(mm.stores.records, "memories", log)
    loader = ProgressiveLoader(mm, standing_share=0.2)
    loader.load_relevant_context(query, namespace=NS)
    # the search's own reads: the records of its candidates and of its hits
    # (``released``: copies here, read again where records are kept per database
    # write generation), sessions, the multilingual
    # view's switch (one EXISTS query, retrieval/_hybrid_language.py _holds_cjk), the
    # status switch of its vector filters (one EXISTS query by index seeks,
    # _hybrid_views.py _all_active) and the write generation its caches are kept by (a
    # counter, no query; pinned for the search, which reads nothing here)
    reads = [(name, kwargs) for name, _, kwargs in log.calls
             if name not in ("record_access", "get_items", "released", "session_orders",
                             "holds_cjk", "holds_inactive", "generation", "pinned")]
    assert reads, "the loader reads through the record store"
    for name, kwargs in reads:
        if name in ("list_items", "list_ids") and kwargs.get("limit") == MULTILINGUAL_SCAN:
            # the search's multilingual view reads a small namespace that holds
            # Chinese text whole (retrieval/_hybrid_language.py), at most MULTILINGUAL_SCAN,
            # kept until the namespace's next write
            assert mm.stores.records.memories.holds_cjk(NS)
            continue
        assert name in ("namespace_totals", "recent_by_topic", "list_items"), name
        if name == "list_items":
            assert kwargs["limit"] <= 3 and kwargs["order"] == "-importance"
    # the loader's stored token total, and the search's size check for its
    # multilingual view: two O(1) reads
    assert [n for n, _ in reads].count("namespace_totals") <= 2


def test_savings_baseline_is_the_stored_total(mm: MemoryManager) -> None:
    everything = sum(COUNT(i.content) for i in all_items(mm))
    assert available_tokens(mm, NS) == everything
    fact = mm.add("Alice's passport number is stored in the vault.", "semantic", namespace=NS)
    assert available_tokens(mm, NS) == everything + COUNT(fact.content)
    mm.remove(fact.id, namespace=NS)
    assert available_tokens(mm, NS) == everything


def check_totals(mm: MemoryManager, ns: str = NS) -> None:
    """The stored totals against a recount of the rows (every writer keeps them)."""
    items = mm.stores.records.memories.list_items(ns)
    assert mm.stores.records.memories.namespace_totals(ns) == (
        len(items), sum(COUNT(i.content) for i in items))


def test_every_writer_keeps_the_totals(mm: MemoryManager, tmp_path: Path) -> None:
    check_totals(mm)
    first = mm.add("Carol moved to Lisbon in March.", "episodic", namespace=NS, importance=0.9)
    check_totals(mm)
    mm.update(first.id, namespace=NS, content="Carol moved to Lisbon in March, then Porto.")
    check_totals(mm)
    low = mm.add("It rained a little.", "episodic", namespace=NS, importance=0.05)
    mm.forget("importance", namespace=NS, threshold=0.1)  # soft: status forgotten
    check_totals(mm)
    assert mm.restore([low.id], namespace=NS) == 1
    check_totals(mm)
    mm.forget_ids([low.id], namespace=NS)
    check_totals(mm)
    mm.forget("importance", namespace=NS, threshold=0.1, hard=True)  # deleted
    check_totals(mm)
    mm.consolidate("episodic", "semantic", namespace=NS, importance_threshold=0.85)
    check_totals(mm)
    mm.reindex(namespace=NS)
    check_totals(mm)
    export = tmp_path / "export.jsonl"
    mm.export_jsonl(export, namespace=NS)
    assert mm.import_jsonl(export, namespace="copy")["imported"] > 0
    check_totals(mm, "copy")
    assert mm.stores.records.memories.namespace_totals("copy")[1] == available_tokens(mm, NS) - sum(
        COUNT(i.content) for i in mm.working.list(NS))
    assert mm.remove(first.id, namespace=NS) in (True, False)  # consolidated away, or not
    check_totals(mm)
    mm.clear("copy", confirm=True)
    assert mm.stores.records.memories.namespace_totals("copy") == (0, 0)


STANDING = "Alice is allergic to peanuts and carries an epinephrine pen."


def test_standing_facts_take_a_small_share(mm: MemoryManager) -> None:
    fact = mm.add(STANDING, "semantic", namespace=NS, importance=0.9)
    assert ProgressiveLoader(mm).load_relevant_context(IRRELEVANT, namespace=NS)[0] == []
    loader = ProgressiveLoader(mm, standing_share=0.2)
    memories, metrics = loader.load_relevant_context(IRRELEVANT, namespace=NS)
    assert [(m["id"], m["layer"], m["content"]) for m in memories] == [
        (fact.id, "standing", STANDING)]
    assert metrics.layer3_tokens == COUNT(STANDING)  # full memories, in layer 3
    # With a relevant query they come after the relevant memories.
    memories, metrics = loader.load_relevant_context(BROAD, namespace=NS)
    assert [m["layer"] for m in memories] == ["timeline"] * 3 + ["standing"]
    assert metrics.layer3_tokens == COUNT(STANDING)
    # Only when they fit the share: a budget whose 20% is less than the fact gets none.
    small = 5 * COUNT(STANDING) - 1
    memories, metrics = loader.load_relevant_context(BROAD, small, namespace=NS)
    assert all(m["layer"] != "standing" for m in memories)
    for budget in (0, 10, 40, 100, 400, 2000):
        for query in (BROAD, DETAIL_EN, IRRELEVANT):
            memories, metrics = loader.load_relevant_context(query, budget, namespace=NS)
            assert metrics.total_tokens <= budget
            assert len({m["id"] for m in memories}) == len(memories)  # never twice
            standing = sum(COUNT(m["content"]) for m in memories if m["layer"] == "standing")
            assert standing <= int(budget * 0.2)
    # A standing fact that is relevant anyway is shown once, in its relevant place.
    memories, _ = loader.load_relevant_context("who is allergic to peanuts?", namespace=NS)
    assert [m["layer"] for m in memories if m["id"] == fact.id] == ["timeline"]


def test_exclude_and_working_last(mm: MemoryManager) -> None:
    query = "数据库连接池"
    loader = ProgressiveLoader(mm, relevance_threshold=0.3)
    memories, _ = loader.load_relevant_context(query, namespace=NS)
    watching = next(m for m in memories if m["type"] == "working")
    assert memories.index(watching) == 0  # the newest of its topic, first
    memories, _ = loader.load_relevant_context(query, namespace=NS, working_last=True)
    types = [m["type"] for m in memories]
    assert types[-1] == "working" and "working" not in types[:-1]
    memories, metrics = loader.load_relevant_context(query, namespace=NS,
                                                     exclude={watching["id"]})
    assert watching["id"] not in {m["id"] for m in memories} and memories
    check_accounting(memories, metrics)
    # ``render`` charges what the caller shows (an id prefix here), not the content.
    memories, metrics = loader.load_relevant_context(
        query, 60, namespace=NS, render=lambda e: f"- [{e['id']}] {e['content']}")
    shown = sum(COUNT(f"- [{m['id']}] {m['content']}") for m in memories)
    assert metrics.total_tokens == metrics.layer1_tokens + shown <= 60
    # An index the caller does not show costs nothing.
    memories, metrics = loader.load_relevant_context(query, 60, namespace=NS,
                                                     charge_index=False)
    assert metrics.layer1_tokens == 0 and loader.last_index
    assert metrics.total_tokens == sum(COUNT(m["content"]) for m in memories) <= 60


class _Host:
    """A search host that is not the facade (retrieval/parts.py ``SearchHost``): the
    loader needs a search, a default namespace, the stores and working memory."""

    def __init__(self, mm: MemoryManager) -> None:
        self.stores, self.working, self.default_namespace = mm.stores, mm.working, NS
        self.searches: list[str] = []
        self._mm = mm

    def search(self, query: str, memory_types: Any = None, top_k: int = 5, *,
               namespace: str | None = None) -> list[SearchHit]:
        self.searches.append(query)
        return self._mm.search(query, memory_types, top_k, namespace=namespace)


def test_the_loader_takes_any_search_host(mm: MemoryManager) -> None:
    """Issue 31: the loader names no facade; anything shaped like one will do."""
    host = _Host(mm)
    ours, metrics = ProgressiveLoader(host).load_relevant_context(BROAD)  # host's namespace
    assert host.searches == [BROAD]
    stored = {i.id for i in all_items(mm)}
    assert ours and {m["id"] for m in ours} <= stored
    assert metrics.total_tokens <= 2000
    assert available_tokens(host, None) == available_tokens(mm, NS)
