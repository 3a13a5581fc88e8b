"""The work of one query is bounded (issue 28, item 10; hello_memory/retrieval/bounds.py):
a maximum-length query of names plans at most MAX_QUERY_NAMES people (the graph view
walks one neighbourhood per name) and one BM25 search scores at most MAX_QUERY_TERMS
terms; a question of ordinary length is planned as before. Real embedded stores."""

from __future__ import annotations

import random
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from hello_memory.memory.manager import MemoryManager
from hello_memory.retrieval.bounds import (
    MAX_QUERY_KEYWORDS,
    MAX_QUERY_NAMES,
    MAX_QUERY_TERMS,
    bounded_terms,
)

from .support import make_manager

pytestmark = pytest.mark.slow

NAMES = [f"{a}{b}" for a in ("Al", "Bo", "Cy", "Di", "Ed", "Fa", "Gu", "Ha", "Io", "Jo")
         for b in ("ra", "lo", "mi", "ne", "ko", "vu", "ta", "se", "pi", "da")]


@pytest.fixture
def mm(tmp_path: Path, embedder: Any) -> Iterator[MemoryManager]:
    manager = make_manager(tmp_path / "data", embedder)
    yield manager
    manager.close()


def heavy_query(rng: random.Random) -> str:
    words: list[str] = []
    while sum(len(w) + 1 for w in words) < 9_990:
        words.append(f"{rng.choice(NAMES)} met {rng.choice(NAMES)} about lanterns"
                     f" {rng.randrange(10**4)}.")
    return " ".join(words)[:9_990]


def test_a_maximum_length_query_plans_a_bounded_number_of_names(mm: MemoryManager) -> None:
    rng = random.Random(10)
    mm.add_many([{"content": f"{rng.choice(NAMES)} knows {rng.choice(NAMES)}.",
                  "memory_type": "semantic"} for _ in range(40)])
    query = heavy_query(rng)
    plan = mm.retriever.plan(query)
    assert len(plan.analysis.persons) == MAX_QUERY_NAMES  # was one per name: ~100
    assert len(plan.analysis.keywords) <= MAX_QUERY_KEYWORDS
    hits = mm.search(query, top_k=5)
    assert len(hits) == 5  # still answered, from its first names and words


def test_an_ordinary_question_is_planned_in_full(mm: MemoryManager) -> None:
    plan = mm.retriever.plan("What did Alice and Bob tell Carol in Lisbon last week?")
    assert {"Alice", "Bob", "Carol"} <= set(plan.analysis.persons)
    assert plan.analysis.time_ranges


def test_bounded_terms_keep_the_heaviest_the_same_way_every_time() -> None:
    terms = {i: (1.0 if i % 3 else 0.5) for i in range(500)}
    kept = bounded_terms(terms)
    assert len(kept) == MAX_QUERY_TERMS and set(kept.values()) == {1.0}
    assert kept == bounded_terms(dict(reversed(list(terms.items()))))
    assert bounded_terms({1: 1.0, 2: 0.5}) == {1: 1.0, 2: 0.5}
