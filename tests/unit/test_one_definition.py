"""One definition of each calculation (issue 16): reciprocal-rank fusion for memory
search and RAG, the ``time_range`` check of search and working memory."""

from __future__ import annotations

import random
from datetime import datetime, timedelta, timezone

import pytest

from hello_memory.errors import InvalidInputError
from hello_memory.rag.search import rrf_fuse
from hello_memory.retrieval.fusion import weighted_rrf
from hello_memory.validation import validate_time_range

T0 = datetime(2026, 1, 1, tzinfo=timezone.utc)


def _reference_rrf(lists: dict[str, list[str]], k: int) -> list[tuple[str, float, dict[str, int]]]:
    """RAG's fusion as it was written before it called the shared one."""
    scores: dict[str, float] = {}
    ranks: dict[str, dict[str, int]] = {}
    for name, ids in lists.items():
        for rank, doc_id in enumerate(ids, 1):
            scores[doc_id] = scores.get(doc_id, 0.0) + 1.0 / (k + rank)
            ranks.setdefault(doc_id, {})[name] = rank
    return sorted(((i, s, ranks[i]) for i, s in scores.items()),
                  key=lambda t: (-t[1], min(t[2].values()), t[0]))


def test_rag_fusion_is_the_weighted_fusion_with_weight_one() -> None:
    rng = random.Random(16)
    pool = [f"c{n}" for n in range(40)]
    for _ in range(50):
        lists = {f"v{n}:{view}": rng.sample(pool, rng.randint(0, 25))
                 for n in range(rng.randint(1, 4)) for view in ("dense", "bm25")}
        k = rng.choice([1, 5, 60])
        fused = rrf_fuse(lists, k)
        assert fused == _reference_rrf(lists, k)  # exactly: same sums in the same order
        weighted = weighted_rrf({n: [(i, 0.0) for i in ids] for n, ids in lists.items()}, {},
                                k=k)
        assert {i: (s, ranks) for i, s, ranks in fused} == {
            i: (s, {n: h.rank for n, h in hits.items()}) for i, (s, hits) in weighted.items()}


def test_rag_fusion_by_hand() -> None:
    fused = rrf_fuse({"q:dense": ["a", "b"], "q:bm25": ["b", "c"]}, 60)
    assert [f[0] for f in fused] == ["b", "a", "c"]
    assert fused[0][1] == pytest.approx(1 / 62 + 1 / 61)
    assert fused[0][2] == {"q:dense": 2, "q:bm25": 1}
    with pytest.raises(InvalidInputError):
        rrf_fuse({"q:dense": ["a"]}, 0)


@pytest.mark.parametrize("bad", [
    (T0, T0 - timedelta(seconds=1)),                 # start after end
    (datetime(2026, 1, 1), None),                    # naive start
    (None, datetime(2026, 1, 1)),                    # naive end
    ("2026-01-01", None),                            # not a datetime
    (T0,),                                           # not a pair
    T0,                                              # not a tuple at all
])
def test_time_range_rejects(bad: object) -> None:
    with pytest.raises(InvalidInputError, match="time_range"):
        validate_time_range(bad)


def test_time_range_accepts_open_ends() -> None:
    assert validate_time_range(None) == (None, None)
    assert validate_time_range((None, T0)) == (None, T0)
    assert validate_time_range([T0, T0]) == (T0, T0)
