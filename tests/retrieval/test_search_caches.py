"""What the search keeps between calls (issue 27, item 2) changes no result: the record
cache (stores/records/item_cache.py), the multilingual view's namespace listing, the
access bookkeeping off the request path (stores/records/access.py) and the terms
cache of the evidence (held per lexical encoder, weakly). Results are the same with
the caches on and off; every add, update and delete is seen by the next search, also
from another thread while searches run; consolidate counts the accesses of searches
not yet written; the hits a search returns are the caller's to change. Real stores and
models; nothing here asserts a timing."""

from __future__ import annotations

import gc
import threading
import weakref
from collections.abc import Iterator
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest

from hello_memory.config import load_settings
from hello_memory.factory import open_stores
from hello_memory.memory.manager import MemoryManager
from hello_memory.memory.working import WorkingMemory
from hello_memory.retrieval import hybrid
from hello_memory.retrieval.hybrid import MULTILINGUAL_SCAN, HybridRetriever
from hello_memory.stores.records import ItemFilter
from hello_memory.text.bm25 import LexicalEncoder
from hello_memory.text.entities import RuleExtractor
from hello_memory.text.links import STORED_TYPES
from hello_memory.text.people import SELF_ENTITY, role_key

pytestmark = pytest.mark.slow

NOW = datetime(2026, 6, 20, 10, 0, tzinfo=timezone.utc)
NS = "u"
MEMORIES = [
    ("I cycle to work along the canal every morning.", "semantic"),
    ("My sister Anna works at a law firm in Utrecht.", "semantic"),
    ("Went bouldering with Priya last Thursday.", "episodic"),
    ("The dentist appointment is on 9 July at 14:00.", "episodic"),
    ("妈妈最喜欢百合花，每年生日都要买一束。", "semantic"),
    ("姐姐在一家儿童教育基金会当法务顾问。", "semantic"),
    ("Lotte is vegetarian and allergic to peanuts.", "semantic"),
    ("We had pizza with Lotte on Friday.", "episodic"),
]
QUESTIONS = ["How do I get to work?", "Where does Anna work?", "妈妈喜欢什么花？",
             "What did I do last Thursday?", "When is the dentist?",
             "What should I cook for Lotte?", "Which flowers does mum like?", "姐姐做什么工作？"]


def _clock() -> datetime:
    return NOW


@pytest.fixture(scope="module")
def mm(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MemoryManager]:
    from hello_memory.embedding import SentenceTransformerEmbedder

    data: Path = tmp_path_factory.mktemp("caches")
    settings = load_settings(environ={}, data_dir=data)
    manager = MemoryManager(open_stores(settings, embedder=SentenceTransformerEmbedder()),
                            working=WorkingMemory(clock=_clock), extractor=RuleExtractor(),
                            clock=_clock)
    manager.stores.records.memories.access_log.interval = 3600  # flushed by the tests
    for n, (text, kind) in enumerate(MEMORIES):
        manager.add(text, namespace=NS, memory_type=kind,
                    event_time=NOW - timedelta(days=10 - n), importance=0.8)
    yield manager
    manager.close()


def _key(hits: list[Any]) -> list[tuple[Any, ...]]:
    return [(h.id, h.score, h.fused, h.context, tuple(sorted(
        (v, h.views[v].rank, h.views[v].score) for v in h.views)), h.item.content,
        h.item.access_count, h.item.version) for h in hits]


def _race(writer: Any, searcher: Any, stop: threading.Event) -> None:
    """``writer`` on one thread and ``searcher`` on two, until the writer is done."""
    threads = [threading.Thread(target=searcher) for _ in range(2)]
    write = threading.Thread(target=writer)
    for t in [*threads, write]:
        t.start()
    write.join()
    stop.set()
    for t in threads:
        t.join()


def test_results_are_the_same_with_the_caches_on_and_off(mm: MemoryManager) -> None:
    records = mm.stores.records
    assert records.item_cache is not None  # SQLite: this process holds the records
    on = {q: _key(mm.search(q, top_k=5, namespace=NS, touch=False)) for q in QUESTIONS}
    warm = {q: _key(mm.search(q, top_k=5, namespace=NS, touch=False)) for q in QUESTIONS}
    assert any(h[0] for h in on.values()) and warm == on
    assert len(records.item_cache) > 0
    multilingual = {v for q in QUESTIONS for h in mm.search(q, namespace=NS, touch=False)
                    for v in h.views}
    assert "multilingual" in multilingual  # the listing (a namespace under 2,000) ran
    cache, records.item_cache = records.item_cache, None  # read-only while it is off
    try:
        off = {q: _key(mm.search(q, top_k=5, namespace=NS, touch=False)) for q in QUESTIONS}
    finally:
        records.item_cache = cache
    assert off == on


def test_searches_record_accesses_that_reads_and_consolidate_count(mm: MemoryManager
                                                                   ) -> None:
    records = mm.stores.records.memories
    hits = mm.search("How do I get to work?", top_k=1, namespace=NS)
    before = hits[0].item.access_count  # a hit holds the record as read, before this access
    assert records.access_log.pending() > 0
    again = mm.search("How do I get to work?", top_k=1, namespace=NS, touch=False)
    assert again[0].id == hits[0].id and again[0].item.access_count == before + 1
    assert mm.get(hits[0].id, namespace=NS).access_count == before + 1
    records.flush_access()
    assert mm.get(hits[0].id, namespace=NS).access_count == before + 1


def test_consolidate_counts_accesses_not_yet_written(tmp_path: Path) -> None:
    settings = load_settings(environ={}, data_dir=tmp_path / "d")
    manager = MemoryManager.open(settings)
    try:
        manager.stores.records.memories.access_log.interval = 3600
        asked = manager.add("The spare key is under the blue flower pot.", namespace="c",
                            memory_type="episodic", importance=0.9)
        manager.add("The bins go out on Tuesday evenings.", namespace="c",
                    memory_type="episodic", importance=0.9)
        for _ in range(2):
            assert manager.search("where is the spare key?", top_k=1,
                                  namespace="c")[0].id == asked.id
        assert manager.stores.records.memories.access_log.pending() > 0
        report = manager.consolidate("episodic", "semantic", namespace="c",
                                     importance_threshold=0.5, min_access_count=2)
        assert len(report.promoted) == 1  # the memory searched twice, not the other
        assert list(report.merged.values()) == [(asked.id,)]
    finally:
        manager.close()


def test_views_run_in_the_calling_thread_on_the_embedded_store(mm: MemoryManager) -> None:
    """Qdrant Edge runs one call at a time holding the GIL: the views run one after the
    other in the searching thread (no view pool), with the same results as on threads."""
    retriever: HybridRetriever = mm.retriever
    inline = {q: _key(mm.search(q, top_k=5, namespace=NS, touch=False)) for q in QUESTIONS}
    assert retriever._pool is None
    mm.stores.vectors.serial_calls = False  # as on a server backend: views on threads
    try:
        threaded = {q: _key(mm.search(q, top_k=5, namespace=NS, touch=False))
                    for q in QUESTIONS}
        assert retriever._pool is not None
    finally:
        del mm.stores.vectors.serial_calls
    assert threaded == inline


def test_hits_are_the_callers_own(mm: MemoryManager) -> None:
    first = mm.search("Where does Anna work?", top_k=1, namespace=NS, touch=False)[0]
    said = first.item.content
    first.item.metadata["scribbled"] = True
    first.item.content = "changed by the caller"
    again = mm.search("Where does Anna work?", top_k=1, namespace=NS, touch=False)[0]
    assert again.id == first.id and again.item is not first.item
    assert again.item.content == said and "scribbled" not in again.item.metadata


def test_the_multilingual_listing_follows_every_write(mm: MemoryManager) -> None:
    retriever: HybridRetriever = mm.retriever
    records = mm.stores.records.memories
    flt = ItemFilter(memory_types=STORED_TYPES)

    def listing() -> list[tuple[str, str]]:
        return [(i.id, i.content) for i in retriever._listing(NS, flt)]

    def truth() -> list[tuple[str, str]]:
        return [(i.id, i.content) for i in records.list_items(
            NS, flt, limit=MULTILINGUAL_SCAN, order="-event_time")]

    assert listing() == truth()
    added = mm.add("爸爸下个月退休。", namespace=NS, memory_type="semantic", event_time=NOW)
    assert listing() == truth() and listing()[0][0] == added.id
    mm.update(added.id, namespace=NS, content="爸爸下个月正式退休。")
    assert listing() == truth() and listing()[0][1] == "爸爸下个月正式退休。"
    mm.remove(added.id, namespace=NS)
    assert listing() == truth() and added.id not in {m for m, _ in listing()}
    mm.search("妈妈喜欢什么花？", namespace=NS, touch=False)  # the view reads the totals
    assert retriever._kept(NS, ("totals",), lambda: (-1, -1)) == records.namespace_totals(NS)


def test_an_edit_that_brings_chinese_text_is_seen_without_a_new_memory(tmp_path: Path
                                                                       ) -> None:
    settings = load_settings(environ={}, data_dir=tmp_path / "d")
    manager = MemoryManager.open(settings)
    try:
        note = manager.add("Mum likes lilies.", namespace="e", memory_type="semantic")
        manager.add("I cycle to work.", namespace="e", memory_type="semantic")
        retriever: HybridRetriever = manager.retriever
        totals = manager.stores.records.memories.namespace_totals("e")
        assert not retriever._holds_cjk("e", totals)
        manager.update(note.id, namespace="e", content="妈妈最喜欢百合花。")
        totals = manager.stores.records.memories.namespace_totals("e")
        assert retriever._holds_cjk("e", totals)
        hits = manager.search("Which flowers does mum like?", namespace="e", touch=False)
        assert "multilingual" in {v for h in hits for v in h.views}
    finally:
        manager.close()


def test_without_a_write_generation_the_kept_values_follow_the_totals(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Where the stores give no write generation (PostgreSQL records, which other
    processes write), what the retriever keeps is marked by the namespace's totals
    (active memories, their tokens): a write that changes them reads it again, and
    nothing else does (HybridRetriever._kept's fallback)."""
    monkeypatch.setattr(HybridRetriever, "_generation", lambda self, ns, graph=False: None)
    manager = MemoryManager.open(load_settings(environ={}, data_dir=tmp_path / "d"))
    try:
        retriever: HybridRetriever = manager.retriever
        records = manager.stores.records.memories
        note = manager.add("Mum likes lilies.", namespace="t", memory_type="semantic")
        assert not retriever._holds_cjk("t", records.namespace_totals("t"))
        manager.update(note.id, namespace="t", content="妈妈最喜欢百合花。")  # new tokens
        assert retriever._holds_cjk("t", records.namespace_totals("t"))  # read again
        reads: list[str] = []
        role_map = retriever._role_map

        def counted(ns: str) -> dict[str, set[str]]:
            reads.append(ns)
            return role_map(ns)

        monkeypatch.setattr(retriever, "_role_map", counted)
        assert retriever._roles_of("t", ["Tom"]) == []
        assert retriever._roles_of("t", ["Tom"]) == [] and reads == ["t"]  # kept
        manager.add("My husband Tom is a nurse.", namespace="t", memory_type="semantic")
        assert retriever._roles_of("t", ["Tom"]) == ["husband"] and reads == ["t", "t"]
    finally:
        manager.close()


def test_the_people_a_role_links_to_follow_every_write(tmp_path: Path) -> None:
    """Who "my husband" is (the graph's link, read on every search for the user's
    names and roles) is kept until the namespace's records or graph change."""
    settings = load_settings(environ={}, data_dir=tmp_path / "d")
    manager = MemoryManager.open(settings)
    try:
        retriever: HybridRetriever = manager.retriever
        husband = [role_key(SELF_ENTITY, "husband")]

        def linked() -> list[str]:
            kept = retriever._linked_people("p", husband)
            assert kept == retriever._people_one_hop("p", husband)  # as read afresh
            return kept

        assert linked() == []
        fact = manager.add("The user's husband is Lars Eide.", namespace="p",
                           memory_type="semantic")
        assert linked() == ["Lars Eide"] and linked() == ["Lars Eide"]
        assert retriever._roles_of("p", ["Lars"]) == ["husband"]
        manager.update(fact.id, namespace="p", content="The user's husband is Tom Berg.")
        assert linked() == ["Tom Berg"]
        assert retriever._roles_of("p", ["Tom"]) == ["husband"]  # and the other way
        manager.remove(fact.id, namespace="p")
        assert linked() == [] and retriever._roles_of("p", ["Tom"]) == []
    finally:
        manager.close()


def test_searches_see_every_write_made_on_another_thread(tmp_path: Path) -> None:
    """Stress: one thread rewrites a memory, adds and deletes others, while two threads
    search. A search begun after a write returned never shows what the write replaced
    or removed; once the writer stops, the search shows the last write."""
    settings = load_settings(environ={}, data_dir=tmp_path / "d")
    manager = MemoryManager.open(settings)
    errors: list[str] = []
    try:
        code = manager.add("The parcel locker code is 1000.", namespace="s",
                           memory_type="semantic")
        manager.add("The parcel locker is next to the bakery.", namespace="s",
                    memory_type="semantic")
        lock = threading.Lock()
        acked = {"code": 1000}
        gone: set[str] = set()
        stop = threading.Event()

        def writer() -> None:
            for n in range(1001, 1016):
                manager.update(code.id, namespace="s",
                               content=f"The parcel locker code is {n}.")
                with lock:
                    acked["code"] = n
                extra = manager.add(f"The parcel locker note {n}.", namespace="s",
                                    memory_type="semantic")
                manager.search("parcel locker note", namespace="s")  # cached, then gone
                manager.remove(extra.id, namespace="s")
                with lock:
                    gone.add(extra.id)

        def searcher() -> None:
            while not stop.is_set():
                with lock:
                    floor, dead = acked["code"], set(gone)
                for hit in manager.search("what is the parcel locker code?", top_k=10,
                                          namespace="s"):
                    if hit.id in dead:
                        errors.append(f"deleted {hit.item.content!r} found")
                    elif hit.id == code.id and int(hit.item.content.split()[-1][:-1]) < floor:
                        errors.append(f"{hit.item.content!r} after {floor} was written")

        _race(writer, searcher, stop)
        assert not errors, errors[:5]
        last = manager.search("what is the parcel locker code?", top_k=10, namespace="s")
        assert "The parcel locker code is 1015." in [h.item.content for h in last]
        assert not gone & {h.id for h in last}
    finally:
        manager.close()


def test_the_terms_cache_keeps_no_encoder_alive() -> None:
    encoder = LexicalEncoder()
    assert hybrid._memory_terms(encoder, "Anna plays chess") == frozenset(
        encoder.terms("Anna plays chess"))
    assert encoder in hybrid._TERM_CACHES
    ref = weakref.ref(encoder)
    del encoder
    gc.collect()
    assert ref() is None


def test_searches_starting_at_once_share_one_view_pool(
        mm: MemoryManager, monkeypatch: pytest.MonkeyPatch) -> None:
    """The views' pool is made once however many searches start together (it was
    checked and set without a lock: two could make two, and one was never closed)."""
    from concurrent.futures import ThreadPoolExecutor

    made: list[ThreadPoolExecutor] = []

    class Counted(ThreadPoolExecutor):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            threading.Event().wait(0.01)  # a slow start widens the window a race needs
            super().__init__(*args, **kwargs)
            made.append(self)

    monkeypatch.setattr(hybrid, "ThreadPoolExecutor", Counted)
    retriever = HybridRetriever(mm.stores)
    barrier = threading.Barrier(16)
    results: list[object] = []

    def search_start() -> None:
        barrier.wait()
        results.append(retriever._submit(lambda: [("m", 1.0)], True)())

    threads = [threading.Thread(target=search_start) for _ in range(16)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    try:
        assert results == [[("m", 1.0)]] * 16
        assert len(made) == 1
    finally:
        retriever.close()
        for pool in made:
            pool.shutdown(wait=True)
    assert retriever._pool is None


def test_kept_values_are_read_once_per_write_generation(tmp_path: Path) -> None:
    """HybridRetriever._kept_each: each value is read once per write generation of its
    namespace, the missing ones in one call; a value derived from records read before a
    write (``since`` an older generation) is returned but never kept."""
    settings = load_settings(environ={}, data_dir=tmp_path / "d")
    manager = MemoryManager.open(settings)
    try:
        retriever: HybridRetriever = manager.retriever
        manager.add("A first memory.", namespace="k")
        calls: list[list[str]] = []

        def read(keys: Any) -> dict[str, str]:
            calls.append(list(keys))
            return {k: k.upper() for k in keys if k != "none"}

        before = retriever._generation("k")
        assert retriever._kept_each("k", "t", ["a", "b"], read) == {"a": "A", "b": "B"}
        assert retriever._kept_each("k", "t", ["b", "c", "none"], read) == {"b": "B", "c": "C"}
        assert calls == [["a", "b"], ["c", "none"]]
        assert retriever._kept_each("k", "other", ["a"], read) == {"a": "A"}  # its own kind
        manager.add("A second memory.", namespace="k")
        assert retriever._kept_each("k", "t", ["a"], read) == {"a": "A"}
        assert calls[2:] == [["a"], ["a"]]
        assert retriever._kept_each("k", "t", ["d"], read, since=before) == {"d": "D"}
        assert retriever._kept_each("k", "t", ["d"], read) == {"d": "D"}
        assert calls[4:] == [["d"], ["d"]]  # the value read since an older write: not kept
    finally:
        manager.close()


def test_the_session_context_and_saying_when_follow_every_write(tmp_path: Path) -> None:
    """The neighbour context (each session's order) and which candidates say when are
    kept per write generation (issue 27): after every add, edit and delete the search
    gives what it gives with nothing kept (the record cache off)."""
    from hello_memory.embedding import SentenceTransformerEmbedder

    settings = load_settings(environ={}, data_dir=tmp_path / "d")
    manager = MemoryManager(open_stores(settings, embedder=SentenceTransformerEmbedder()),
                            extractor=RuleExtractor(), clock=_clock)  # scores stay put
    records = manager.stores.records
    turns = ["We are planning a trip to Lisbon with Marta.",
             "I booked the flights to Lisbon yesterday.",
             "Marta found a small hotel in Alfama.",
             "We land in Lisbon at noon."]
    questions = ["When do we land in Lisbon?", "When did I book the flights?",
                 "Which hotel did Marta find?", "Who is coming to Lisbon?"]

    def both() -> dict[str, list[tuple[Any, ...]]]:
        on = {q: _key(manager.search(q, top_k=4, namespace="t", touch=False))
              for q in questions}
        again = {q: _key(manager.search(q, top_k=4, namespace="t", touch=False))
                 for q in questions}
        cache, records.item_cache = records.item_cache, None  # nothing kept
        try:
            off = {q: _key(manager.search(q, top_k=4, namespace="t", touch=False))
                   for q in questions}
        finally:
            records.item_cache = cache
        assert on == again == off
        return on

    try:
        added = [manager.add(text, namespace="t", memory_type="episodic", session_id="trip",
                             event_time=NOW - timedelta(days=2, minutes=-10 * n))
                 for n, text in enumerate(turns)]
        first = both()
        assert any(hit[3] > 0 for hits in first.values() for hit in hits)  # context
        middle = manager.add("The hotel has a view of the river.", namespace="t",
                             memory_type="episodic", session_id="trip",
                             event_time=NOW - timedelta(days=2, minutes=-15))
        assert both() != first
        manager.update(middle.id, namespace="t",
                       content="We check in at the hotel on 3 May at 15:00.")
        both()
        manager.remove(added[1].id, namespace="t")
        assert all(added[1].id not in {hit[0] for hit in hits} for hits in both().values())
    finally:
        manager.close()


def test_session_context_kept_under_concurrent_writes_ends_as_read_afresh(
        tmp_path: Path) -> None:
    """Stress: one thread adds turns to a session and rewrites one to mention a time,
    while two threads ask when-questions (session orders and says-when are kept per
    write generation). No search fails, a deleted turn is never returned, and once the
    writer stops the search gives what it gives with nothing kept."""
    from hello_memory.embedding import SentenceTransformerEmbedder

    settings = load_settings(environ={}, data_dir=tmp_path / "d")
    manager = MemoryManager(open_stores(settings, embedder=SentenceTransformerEmbedder()),
                            extractor=RuleExtractor(), clock=_clock)
    records = manager.stores.records
    start = NOW - timedelta(days=3)
    errors: list[str] = []
    gone: set[str] = set()
    lock = threading.Lock()
    stop = threading.Event()
    questions = ["When is the concert?", "When did we buy the tickets?"]
    try:
        edited = manager.add("We bought concert tickets.", namespace="c", memory_type="episodic",
                             session_id="s", event_time=start)

        def writer() -> None:
            for n in range(1, 13):
                turn = manager.add(f"Turn {n} about the concert and the band.", namespace="c",
                                   memory_type="episodic", session_id="s",
                                   event_time=start + timedelta(minutes=n))
                manager.update(edited.id, namespace="c",
                               content=f"We bought concert tickets on {n} March.")
                if n % 3 == 0:
                    manager.remove(turn.id, namespace="c")
                    with lock:
                        gone.add(turn.id)

        def searcher() -> None:
            while not stop.is_set():
                with lock:
                    dead = set(gone)
                try:
                    for q in questions:
                        for hit in manager.search(q, top_k=10, namespace="c", touch=False):
                            if hit.id in dead:
                                errors.append(f"deleted {hit.item.content!r} returned")
                except Exception as exc:  # noqa: BLE001 (any failure fails the test)
                    errors.append(repr(exc))

        _race(writer, searcher, stop)
        assert not errors, errors[:5]
        kept = {q: _key(manager.search(q, top_k=10, namespace="c", touch=False))
                for q in questions}
        cache, records.item_cache = records.item_cache, None
        try:
            fresh = {q: _key(manager.search(q, top_k=10, namespace="c", touch=False))
                     for q in questions}
        finally:
            records.item_cache = cache
        assert kept == fresh
        assert any("on 12 March" in hit[5] for hit in kept[questions[1]])
    finally:
        manager.close()
