"""WorkingMemory: TTL, priority eviction, token budget, TF-IDF + keyword search."""

from __future__ import annotations

import logging
import math
import sys
import threading
from datetime import datetime, timedelta, timezone
from typing import Any

import pytest
from sklearn.feature_extraction.text import TfidfVectorizer

from hello_memory.errors import (
    EmptyContentError,
    InvalidImportanceError,
    InvalidInputError,
    NamespaceRequiredError,
    NotFoundError,
)
from hello_memory.memory.working import WorkingMemory
from hello_memory.text import tokenize
from hello_memory.types import MemoryItem, MemoryType

T0 = datetime(2025, 1, 1, 12, 0, tzinfo=timezone.utc)
HALF_LIFE_MIN = 30.0  # the WORKING profile's half-life


class FakeClock:
    def __init__(self, now: datetime = T0) -> None:
        self.now = now

    def __call__(self) -> datetime:
        return self.now

    def advance(self, minutes: float) -> None:
        self.now += timedelta(minutes=minutes)


class WordCounter:
    """One token per whitespace-separated word: budgets easy to reason about."""

    def count(self, text: str) -> int:
        return len(text.split())


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


def make(clock: FakeClock, content: str, ns: str = "ns", **kw: Any) -> MemoryItem:
    kw.setdefault("event_time", clock.now)
    return MemoryItem(content=content, namespace=ns, **kw)


def wm_with(clock: FakeClock, **kw: Any) -> WorkingMemory:
    kw.setdefault("ttl_minutes", 24 * 60)
    return WorkingMemory(clock=clock, **kw)


def ids(hits: list[Any]) -> list[str]:
    return [h.item.id for h in hits]


# --- scoring formula -------------------------------------------------------------------
def test_score_matches_hand_computed_formula(clock: FakeClock) -> None:
    wm = wm_with(clock)
    a = wm.add(make(clock, "alpha beta", importance=0.25))
    b = wm.add(make(clock, "gamma delta", importance=1.0, event_time=T0 + timedelta(minutes=10)))
    clock.advance(45)
    hits = wm.retrieve("ns", "alpha gamma zeta")
    # Every term has df=1, so both documents are (1/√2, 1/√2) on their own two terms and
    # the query is (1/√2, 1/√2) on alpha, gamma ("zeta" is unknown): cosine = 1/2 for
    # each. keyword = 1 of the 3 query terms = 1/3.
    tfidf, kw = 0.5, 1 / 3
    expected = {
        a.id: (0.7 * tfidf + 0.3 * kw) * 0.5 ** (45 / HALF_LIFE_MIN) * (0.8 + 0.4 * 0.25),
        b.id: (0.7 * tfidf + 0.3 * kw) * 0.5 ** (35 / HALF_LIFE_MIN) * (0.8 + 0.4 * 1.0),
    }
    assert ids(hits) == [b.id, a.id]
    for hit in hits:
        assert hit.score == pytest.approx(expected[hit.item.id], abs=1e-9)
        assert hit.breakdown.similarity == pytest.approx(tfidf, abs=1e-9)
        assert hit.breakdown.keyword == pytest.approx(kw, abs=1e-9)


def test_score_identical_text_and_independent_tfidf(clock: FakeClock) -> None:
    wm = wm_with(clock)
    docs = ["the deploy failed on friday", "deploy the cache on monday", "lunch was pizza"]
    items = [wm.add(make(clock, d, importance=0.5)) for d in docs]
    clock.advance(15)
    # Query identical to a document: cosine 1, every query term found.
    [top, *_] = wm.retrieve("ns", "the deploy failed on friday")
    assert top.item.id == items[0].id
    assert top.score == pytest.approx(1.0 * 0.5 ** (15 / HALF_LIFE_MIN) * 1.0, abs=1e-9)
    # Unequal document frequencies: cosine computed by a separate vectorizer.
    ref = TfidfVectorizer(tokenizer=lambda t: tokenize(t, remove_stopwords=True),
                          lowercase=False, token_pattern=None)
    matrix = ref.fit_transform(docs)
    query = "deploy friday"
    cosine = (matrix @ ref.transform([query]).T).toarray().ravel()
    hits = {h.item.id: h for h in wm.retrieve("ns", query, top_k=10)}
    assert set(hits) == {items[0].id, items[1].id}  # "lunch was pizza" shares nothing
    # a shared stopword alone is no evidence: "the" matches two items, ranks none
    only_the = wm.retrieve("ns", "the", top_k=10)
    assert {h.item.id for h in only_the} == {items[0].id, items[1].id}  # keyword match only
    assert all(h.breakdown.similarity == 0 and h.breakdown.keyword == 1 for h in only_the)
    kws = [1.0, 0.5]  # {deploy, friday} ∩ doc terms
    for i in (0, 1):
        expected = (0.7 * cosine[i] + 0.3 * kws[i]) * 0.5 ** (15 / HALF_LIFE_MIN) * 1.0
        assert hits[items[i].id].score == pytest.approx(expected, abs=1e-9)


def test_relevance_beats_importance(clock: FakeClock) -> None:
    wm = wm_with(clock)
    vip = wm.add(make(clock, "quarterly budget spreadsheet", importance=1.0))
    low = wm.add(make(clock, "the deploy failed on friday", importance=0.0))
    hits = wm.retrieve("ns", "deploy")
    assert ids(hits) == [low.id]
    assert vip.id not in ids(hits)


def test_more_relevant_ranks_first_and_top_k(clock: FakeClock) -> None:
    wm = wm_with(clock)
    one = wm.add(make(clock, "kafka consumer lag", importance=1.0))
    both = wm.add(make(clock, "kafka broker restart fixed consumer lag spike", importance=0.0))
    hits = wm.retrieve("ns", "kafka broker restart")
    assert ids(hits) == [both.id, one.id]
    assert ids(wm.retrieve("ns", "kafka broker restart", top_k=1)) == [both.id]


def test_ties_go_to_newer_event(clock: FakeClock) -> None:
    wm = wm_with(clock)
    # Future event times count as "now" (recency 1), so both score exactly the same.
    old = wm.add(make(clock, "deploy", event_time=T0 + timedelta(hours=1)))
    new = wm.add(make(clock, "deploy", event_time=T0 + timedelta(hours=2)))
    hits = wm.retrieve("ns", "deploy")
    assert hits[0].score == hits[1].score
    assert ids(hits) == [new.id, old.id]


# --- capacity, token budget -------------------------------------------------------------
def test_capacity_evicts_lowest_importance_not_oldest(clock: FakeClock) -> None:
    wm = wm_with(clock, capacity=3)
    oldest = wm.add(make(clock, "first", importance=0.9))
    low = wm.add(make(clock, "second", importance=0.2))
    mid = wm.add(make(clock, "third", importance=0.6))
    new = wm.add(make(clock, "fourth", importance=0.1))
    assert wm.count("ns") == 3
    assert wm.get("ns", low.id) is None
    assert [i.id for i in wm.list("ns")] == [oldest.id, mid.id, new.id]


def test_capacity_eviction_uses_decay(clock: FakeClock) -> None:
    wm = wm_with(clock, capacity=2)
    faded = wm.add(make(clock, "old but important", importance=0.9))
    clock.advance(4 * HALF_LIFE_MIN)  # priority 0.9 / 16 = 0.056
    fresh = wm.add(make(clock, "fresh and minor", importance=0.1))  # priority 0.1
    newest = wm.add(make(clock, "newest"))
    assert wm.get("ns", faded.id) is None
    assert {i.id for i in wm.list("ns")} == {fresh.id, newest.id}


def test_token_budget_evicts_lowest_priority(clock: FakeClock) -> None:
    wm = wm_with(clock, token_budget=10, token_counter=WordCounter())
    keep = wm.add(make(clock, "w1 w2 w3 w4", importance=0.9))
    drop = wm.add(make(clock, "w1 w2 w3 w4", importance=0.1))
    assert wm.tokens("ns") == 8
    last = wm.add(make(clock, "w1 w2 w3 w4", importance=0.5))
    assert wm.tokens("ns") == 8
    assert [i.id for i in wm.list("ns")] == [keep.id, last.id]
    assert wm.get("ns", drop.id) is None


def test_update_growing_content_evicts_others(clock: FakeClock) -> None:
    wm = wm_with(clock, token_budget=10, token_counter=WordCounter())
    other = wm.add(make(clock, "a b c d", importance=1.0))
    grown = wm.add(make(clock, "x y", importance=0.0))
    wm.update("ns", grown.id, content="x y z w v u t")  # 7 + 4 > 10
    assert wm.get("ns", other.id) is None
    assert wm.tokens("ns") == 7


def test_oversize_item_is_refused_and_nothing_evicted(clock: FakeClock) -> None:
    wm = wm_with(clock, token_budget=10, token_counter=WordCounter())
    wm.add(make(clock, "a b c d e f g h i"))
    with pytest.raises(InvalidInputError, match="token_budget"):
        wm.add(make(clock, " ".join(["w"] * 11)))
    assert wm.count("ns") == 1 and wm.tokens("ns") == 9
    with pytest.raises(InvalidInputError):
        wm.add_many([make(clock, "ok"), make(clock, " ".join(["w"] * 11))])
    assert wm.count("ns") == 1


def test_readding_an_id_replaces_it(clock: FakeClock) -> None:
    wm = wm_with(clock, capacity=2)
    a = wm.add(make(clock, "one"))
    b = wm.add(make(clock, "two"))
    wm.add(make(clock, "one again", id=a.id))
    assert wm.count("ns") == 2 and wm.get("ns", b.id) is not None
    assert wm.get("ns", a.id).content == "one again"  # type: ignore[union-attr]


# --- TTL --------------------------------------------------------------------------------
def test_ttl_expiry_with_injected_clock(clock: FakeClock) -> None:
    wm = WorkingMemory(ttl_minutes=10, clock=clock)
    a = wm.add(make(clock, "deploy alpha"))
    clock.advance(5)
    b = wm.add(make(clock, "deploy beta"))
    clock.advance(5.5)  # a is 10.5 min old, b 5.5
    assert wm.expire() == 1
    assert wm.get("ns", a.id) is None
    assert [i.id for i in wm.list("ns")] == [b.id]
    assert wm.count("ns") == 1
    assert ids(wm.retrieve("ns", "deploy")) == [b.id]
    clock.advance(5)
    # Expired items disappear from reads even without expire().
    assert wm.count("ns") == 0 and wm.list("ns") == [] and wm.retrieve("ns", "deploy") == []
    assert wm.tokens("ns") == 0 and wm.namespaces() == []
    assert wm.expire() == 0


def test_expire_covers_all_namespaces(clock: FakeClock) -> None:
    wm = WorkingMemory(ttl_minutes=1, clock=clock)
    wm.add(make(clock, "x", ns="a"))
    wm.add(make(clock, "y", ns="b"))
    wm.add(make(clock, "z", ns="b"))
    assert wm.namespaces() == ["a", "b"]
    clock.advance(2)
    assert wm.expire() == 3
    assert wm.namespaces() == []


def test_update_and_access_do_not_extend_ttl(clock: FakeClock) -> None:
    wm = WorkingMemory(ttl_minutes=10, clock=clock)
    a = wm.add(make(clock, "note"))
    clock.advance(8)
    wm.update("ns", a.id, content="note edited")
    wm.record_access("ns", [a.id])
    clock.advance(3)
    assert wm.get("ns", a.id) is None


class TickingClock(FakeClock):
    """A live clock: every reading is one second later than the previous one."""

    def __call__(self) -> datetime:
        self.now += timedelta(seconds=1)
        return self.now


@pytest.mark.parametrize("ttl_seconds", range(1, 16))
def test_live_clock_cannot_expire_an_item_mid_operation(ttl_seconds: int) -> None:
    # With a live clock an item can expire between two cache calls of one operation
    # (TTLCache's `in` and `del`, say); every TTL here puts that moment somewhere else.
    clock = TickingClock()
    wm = WorkingMemory(ttl_minutes=ttl_seconds / 60, capacity=1, clock=clock)
    first = wm.add(make(clock, "deploy one"))
    wm.add(make(clock, "deploy two"))  # evicts "one" unless it has expired
    assert wm.get("ns", first.id) is None
    second = wm.add(make(clock, "deploy three"))
    for _ in range(ttl_seconds + 2):
        wm.retrieve("ns", "deploy")
        wm.record_access("ns", [second.id])
    for _ in range(ttl_seconds + 2):
        fourth = wm.add(make(clock, "deploy four"))
        wm.remove("ns", fourth.id)
    assert wm.count("ns") == 0


# --- keyword fallback -------------------------------------------------------------------
def test_keyword_fallback_when_tfidf_fit_fails(
    clock: FakeClock, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    def fail(self: Any, raw_documents: Any, y: Any = None) -> Any:
        raise ValueError("empty vocabulary; perhaps the documents only contain stop words")

    monkeypatch.setattr(TfidfVectorizer, "fit_transform", fail)
    wm = wm_with(clock)
    hit_item = wm.add(make(clock, "the deploy failed on friday", importance=0.5))
    wm.add(make(clock, "lunch was pizza"))
    clock.advance(30)
    with caplog.at_level(logging.DEBUG, logger="hello_memory.memory.working"):
        hits = wm.retrieve("ns", "deploy on monday")  # terms {deploy, monday}
    assert ids(hits) == [hit_item.id]
    assert hits[0].breakdown.similarity == 0.0
    assert hits[0].score == pytest.approx(0.3 * 0.5 * 0.5 * 1.0, abs=1e-9)
    assert "keyword matching only" in caplog.text


def test_empty_vocabulary_returns_nothing_without_error(clock: FakeClock) -> None:
    wm = wm_with(clock)
    wm.add(make(clock, "!!!"))
    wm.add(make(clock, "？？"))
    assert wm.retrieve("ns", "!!!") == []
    assert wm.retrieve("ns", "deploy") == []


def test_stopword_only_query_uses_all_tokens(clock: FakeClock) -> None:
    wm = wm_with(clock)
    item = wm.add(make(clock, "to be or not to be"))
    wm.add(make(clock, "deploy failed"))
    [hit] = wm.retrieve("ns", "not to")
    assert hit.item.id == item.id
    assert hit.breakdown.keyword == 1.0


# --- filters, namespaces ----------------------------------------------------------------
def test_filters_apply_before_scoring(clock: FakeClock) -> None:
    wm = wm_with(clock)
    early = wm.add(make(clock, "deploy one", importance=0.2, user_id="u1", session_id="s1"))
    mid = wm.add(make(clock, "deploy two", importance=0.6, user_id="u2", session_id="s1",
                      event_time=T0 + timedelta(minutes=10)))
    late = wm.add(make(clock, "deploy three", importance=0.9, user_id="u1", session_id="s2",
                       event_time=T0 + timedelta(minutes=20)))
    clock.advance(30)

    def found(**kw: Any) -> set[str]:
        return set(ids(wm.retrieve("ns", "deploy", top_k=10, **kw)))

    assert found() == {early.id, mid.id, late.id}
    assert found(min_importance=0.6) == {mid.id, late.id}
    assert found(user_id="u1") == {early.id, late.id}
    assert found(session_id="s1") == {early.id, mid.id}
    assert found(user_id="u1", session_id="s1") == {early.id}
    assert found(time_range=(T0 + timedelta(minutes=5), None)) == {mid.id, late.id}
    assert found(time_range=(None, T0 + timedelta(minutes=10))) == {early.id, mid.id}
    assert found(time_range=(T0 + timedelta(minutes=5), T0 + timedelta(minutes=15))) == {mid.id}
    assert found(user_id="nobody") == set()
    # top_k counts after filtering: the best filtered item is still returned.
    assert ids(wm.retrieve("ns", "deploy", top_k=1, user_id="u2")) == [mid.id]


def test_namespace_isolation(clock: FakeClock) -> None:
    wm = wm_with(clock)
    a1 = wm.add(make(clock, "deploy failed", ns="a"))
    wm.add(make(clock, "deploy failed", ns="a"))
    b1 = wm.add(make(clock, "deploy failed", ns="b"))
    assert ids(wm.retrieve("b", "deploy")) == [b1.id]
    assert wm.count("a") == 2 and wm.count("b") == 1 and wm.count("c") == 0
    assert wm.get("b", a1.id) is None
    assert wm.remove("b", a1.id) is False
    with pytest.raises(NotFoundError):
        wm.update("b", a1.id, content="x")
    assert wm.clear("a") == 2
    assert wm.count("a") == 0 and wm.retrieve("a", "deploy") == []
    assert wm.count("b") == 1 and ids(wm.retrieve("b", "deploy")) == [b1.id]
    assert wm.namespaces() == ["b"]


def test_capacity_is_per_namespace(clock: FakeClock) -> None:
    wm = wm_with(clock, capacity=2)
    for ns in ("a", "b"):
        wm.add(make(clock, "one", ns=ns))
        wm.add(make(clock, "two", ns=ns))
    wm.add(make(clock, "three", ns="a"))
    assert wm.count("a") == 2 and wm.count("b") == 2


# --- update, remove, access ---------------------------------------------------------------
def test_update_reindexes_content(clock: FakeClock) -> None:
    wm = wm_with(clock)
    item = wm.add(make(clock, "deploy failed"))
    wm.add(make(clock, "lunch pizza"))
    assert wm.retrieve("ns", "kafka") == []
    old_hash = item.content_hash
    new = wm.update("ns", item.id, content="kafka consumer lag", importance=0.9)
    assert new.content_hash != old_hash and new.importance == 0.9
    assert ids(wm.retrieve("ns", "kafka")) == [item.id]
    assert wm.retrieve("ns", "deploy") == []
    assert wm.get("ns", item.id) is new


def test_update_rejects_bad_changes_and_keeps_item(clock: FakeClock) -> None:
    wm = wm_with(clock)
    item = wm.add(make(clock, "deploy failed", importance=0.3))
    with pytest.raises(InvalidImportanceError):
        wm.update("ns", item.id, importance=1.5)
    with pytest.raises(EmptyContentError):
        wm.update("ns", item.id, content="  ")
    with pytest.raises(InvalidInputError, match="unknown"):
        wm.update("ns", item.id, colour="red")
    with pytest.raises(InvalidInputError, match="cannot change"):
        wm.update("ns", item.id, namespace="other")
    with pytest.raises(InvalidInputError, match="cannot change"):
        wm.update("ns", item.id, memory_type=MemoryType.SEMANTIC)
    with pytest.raises(NotFoundError):
        wm.update("ns", "missing", content="x")
    kept = wm.get("ns", item.id)
    assert kept is not None and kept.importance == 0.3 and kept.content == "deploy failed"
    assert ids(wm.retrieve("ns", "deploy")) == [item.id]


def test_remove(clock: FakeClock) -> None:
    wm = wm_with(clock)
    item = wm.add(make(clock, "deploy failed"))
    other = wm.add(make(clock, "deploy ok"))
    assert wm.remove("ns", item.id) is True
    assert wm.remove("ns", item.id) is False
    assert wm.count("ns") == 1 and ids(wm.retrieve("ns", "deploy")) == [other.id]


def test_record_access(clock: FakeClock) -> None:
    wm = wm_with(clock)
    a = wm.add(make(clock, "x"))
    b = wm.add(make(clock, "y"))
    clock.advance(3)
    wm.record_access("ns", [a.id, "unknown-id"])
    clock.advance(2)
    wm.record_access("ns", [a.id])
    got_a, got_b = wm.get("ns", a.id), wm.get("ns", b.id)
    assert got_a is not None and got_b is not None
    assert got_a.access_count == 2 and got_a.last_access == T0 + timedelta(minutes=5)
    assert got_b.access_count == 0 and got_b.last_access is None
    wm.record_access("other-ns", [a.id])
    assert got_a.access_count == 2
    with pytest.raises(InvalidInputError):
        wm.record_access("ns", a.id)


def test_add_forces_working_type_and_list_order(clock: FakeClock) -> None:
    wm = wm_with(clock)
    first = wm.add(make(clock, "one", memory_type=MemoryType.EPISODIC))
    clock.advance(1)
    second = wm.add(make(clock, "two"))
    assert first.memory_type is MemoryType.WORKING
    assert [i.id for i in wm.list("ns")] == [first.id, second.id]
    assert first.content_hash is not None


# --- bad input ------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("overrides", "error"),
    [
        ({"content": ""}, EmptyContentError),
        ({"content": "   \n"}, EmptyContentError),
        ({"importance": 1.5}, InvalidImportanceError),
        ({"importance": math.nan}, InvalidImportanceError),
        ({"importance": -0.1}, InvalidImportanceError),
        ({"namespace": ""}, NamespaceRequiredError),
        ({"event_time": datetime(2025, 1, 1)}, InvalidInputError),  # naive
    ],
)
def test_bad_items_raise_and_add_nothing(
    clock: FakeClock, overrides: dict[str, Any], error: type[Exception]
) -> None:
    wm = wm_with(clock)
    wm.add(make(clock, "existing"))
    fields: dict[str, Any] = {"content": "fine", "namespace": "ns", "event_time": clock.now}
    fields.update(overrides)
    with pytest.raises(error):
        wm.add(MemoryItem(**fields))
    with pytest.raises(error):
        wm.add_many([make(clock, "good one"), MemoryItem(**fields)])
    assert wm.count("ns") == 1


@pytest.mark.parametrize(
    ("namespace", "query", "kw", "error"),
    [
        ("ns", "deploy", {"top_k": 0}, InvalidInputError),
        ("ns", "deploy", {"top_k": True}, InvalidInputError),
        ("ns", "deploy", {"top_k": 2.0}, InvalidInputError),
        ("ns", "", {}, EmptyContentError),
        ("", "deploy", {}, NamespaceRequiredError),
        ("ns", "deploy", {"min_importance": 2}, InvalidImportanceError),
        ("ns", "deploy", {"time_range": (T0 + timedelta(days=1), T0)}, InvalidInputError),
        ("ns", "deploy", {"time_range": (datetime(2025, 1, 1), None)}, InvalidInputError),
    ],
)
def test_bad_search_input(
    clock: FakeClock, namespace: str, query: str, kw: dict[str, Any], error: type[Exception]
) -> None:
    wm = wm_with(clock)
    wm.add(make(clock, "deploy failed"))
    with pytest.raises(error):
        wm.retrieve(namespace, query, **kw)


def test_bad_constructor_arguments() -> None:
    for kw in ({"capacity": 0}, {"token_budget": 0}, {"ttl_minutes": 0},
               {"ttl_minutes": math.inf}, {"capacity": 2.5}):
        with pytest.raises(InvalidInputError):
            WorkingMemory(**kw)


def test_non_item_rejected(clock: FakeClock) -> None:
    wm = wm_with(clock)
    with pytest.raises(InvalidInputError):
        wm.add("just a string")  # type: ignore[arg-type]
    with pytest.raises(NamespaceRequiredError):
        wm.count("")
    assert wm.namespaces() == []


# --- languages, threads -----------------------------------------------------------------
def test_chinese_and_english(clock: FakeClock) -> None:
    wm = wm_with(clock)
    zh = wm.add(make(clock, "我喜欢蓝牙耳机"))
    en = wm.add(make(clock, "The deploy failed on Friday"))
    assert ids(wm.retrieve("ns", "蓝牙耳机")) == [zh.id]
    assert ids(wm.retrieve("ns", "deploy")) == [en.id]
    assert ids(wm.retrieve("ns", "FRIDAY")) == [en.id]
    assert wm.retrieve("ns", "蓝牙耳机")[0].breakdown.keyword == 1.0


def test_thread_safety_smoke() -> None:
    # Switch threads as often as CPython allows, so unlocked check-then-act code
    # (creating a namespace, evicting, refitting) would interleave and lose items.
    old_interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    wm = WorkingMemory(capacity=1000, token_budget=1_000_000)
    errors: list[BaseException] = []
    start = threading.Barrier(4)

    def worker(n: int) -> None:
        try:
            start.wait()
            for i in range(50):
                ns = f"ns{i % 5}"
                wm.add(MemoryItem(content=f"thread {n} note {i} deploy", namespace=ns))
                wm.retrieve(ns, "deploy note", top_k=3)
        except BaseException as exc:  # collected and asserted below
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(4)]
    try:
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    finally:
        sys.setswitchinterval(old_interval)
    assert errors == []
    assert [wm.count(f"ns{k}") for k in range(5)] == [40] * 5
    assert sum(len(wm.retrieve(f"ns{k}", "deploy", top_k=500)) for k in range(5)) == 200
