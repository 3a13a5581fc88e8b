"""Chinese with an English-only embedder (issue 26, failure class 7): all-MiniLM-L6-v2
reads Chinese poorly, so for a question mostly in CJK characters its dense view weighs
CJK_SEMANTIC_WEIGHT in the fusion and its cosine is no evidence; the full search then
recalls at least what its own BM25 view does (on the project's Chinese everyday set,
benchmarks/zh_everyday.py; here on a slice of it)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from hello_memory.config import load_settings
from hello_memory.factory import open_stores
from hello_memory.memory.manager import MemoryManager
from hello_memory.text.entities import RuleExtractor

pytestmark = pytest.mark.slow
DATA = Path(__file__).resolve().parents[2] / "benchmarks" / "data" / "zh_everyday.json"


@pytest.fixture(scope="module")
def mm(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MemoryManager]:
    from hello_memory.embedding import SentenceTransformerEmbedder

    settings = load_settings(environ={}, data_dir=tmp_path_factory.mktemp("zh") / "data")
    manager = MemoryManager(open_stores(settings, embedder=SentenceTransformerEmbedder()),
                            extractor=RuleExtractor())
    data = json.loads(DATA.read_text(encoding="utf-8"))
    ids: dict[str, str] = {}
    for m in data["messages"][:80]:
        item = manager.add(m["content"], namespace="zh", memory_type="episodic",
                           event_time=datetime.fromisoformat(m["event_time"]))
        ids[m["id"]] = item.id
    manager.ids = ids  # type: ignore[attr-defined]
    manager.questions = [q for q in data["questions"]  # type: ignore[attr-defined]
                         if q["lang"] == "zh" and set(q["gold"]) <= set(ids)]
    yield manager
    manager.close()


def recall(mm: Any, recipe: str) -> int:
    found = 0
    for q in mm.questions:
        hits = mm.search(q["text"], namespace="zh", top_k=10, recipe=recipe, touch=False)
        got = {h.id for h in hits}
        found += sum(1 for g in q["gold"] if mm.ids[g] in got)
    return found


def test_the_full_search_recalls_at_least_its_bm25_view_on_chinese(mm: Any) -> None:
    assert len(mm.questions) >= 10
    assert mm.retriever._dense_blind(mm.questions[0]["text"])
    assert recall(mm, "hybrid") >= recall(mm, "bm25-only")


def test_an_english_question_keeps_its_dense_weight(mm: Any) -> None:
    assert not mm.retriever._dense_blind("When is my mother's birthday?")
