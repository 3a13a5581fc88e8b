"""Issue 26: who a question is about, read the way a person would: a role resolves to
whom it links to now, and a person's kin is not the person."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from typing import Any

import pytest

from hello_memory.config import load_settings
from hello_memory.factory import open_stores
from hello_memory.memory.manager import MemoryManager
from hello_memory.text.entities import RuleExtractor

pytestmark = pytest.mark.slow
TZ = timezone(timedelta(hours=8))


def test_a_replaced_role_link_is_not_who_the_role_is_now(tmp_path: Any) -> None:
    """Issue 26: "my boss" once linked to Tomasz and, after the change, to Ines. The
    graph keeps both links (nothing is deleted); the question asks about now, so only
    Ines's link, stated by a memory still true, resolves. "my old boss" reaches both."""
    from hello_memory.retrieval.hybrid import HybridRetriever

    settings = load_settings(environ={}, data_dir=tmp_path / "d")
    manager = MemoryManager(open_stores(settings), extractor=RuleExtractor())
    try:
        said = datetime(2026, 6, 1, 9, tzinfo=TZ)
        old = manager.add("My boss is Tomasz Nowak.", namespace="w", memory_type="semantic",
                          event_time=said)
        manager.add("My boss is Ines Carvalho now, Tomasz moved to the platform group.",
                    namespace="w", memory_type="semantic", event_time=said + timedelta(days=90))
        assert manager.get(old.id, namespace="w").superseded_by is not None
        retriever = HybridRetriever(manager)

        def resolved(question: str) -> set[str]:
            return set(retriever.about_whom("w", retriever.plan(question)).analysis.resolved)

        assert resolved("Where does my boss live?") == {"Ines Carvalho"}
        assert resolved("Where does my old boss live?") == {"Ines Carvalho", "Tomasz Nowak"}
    finally:
        manager.close()


def test_a_persons_kin_is_not_the_person(tmp_path: Any) -> None:
    """Issue 26: "Daniel's brother Felix works as a sound engineer" is Felix's job:
    for "what does Daniel do for a living?" it is about someone else, while "where do
    Daniel's parents live?" asks about the kin it names."""
    settings = load_settings(environ={}, data_dir=tmp_path / "d")
    manager = MemoryManager(open_stores(settings), extractor=RuleExtractor())
    try:
        said = datetime(2026, 6, 1, 9, tzinfo=TZ)
        for n, text in enumerate(["Daniel's brother Felix lives in Berlin and works as a "
                                  "sound engineer.",
                                  "Daniel's parents, Henk and Gerda, live in Deventer.",
                                  "Daniel teaches physics at the Stedelijk Gymnasium."]):
            manager.add(text, namespace="k", memory_type="semantic",
                        event_time=said + timedelta(days=n))
        hits = manager.search("What does Daniel do for a living?", namespace="k")
        assert "physics" in hits[0].item.content
        assert [h.breakdown.subject for h in hits if "Felix" in h.item.content] == [0.5]
        hits = manager.search("Where do Daniel's parents live?", namespace="k")
        assert "Deventer" in hits[0].item.content and hits[0].breakdown.subject == 1.0
    finally:
        manager.close()
