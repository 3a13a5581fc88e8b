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


def test_a_named_person_is_also_the_users_role_for_them(tmp_path: Any) -> None:
    """Issue 26: Qing is the user's sister, so "What does Qing do for work these days?"
    is answered by "姐姐…当法务顾问", a note no English view can read and the
    multilingual model ranks low: the role map joins it to the symbolic view's pool,
    where its subject (the sister) and attribute (her work) meet the question."""
    from hello_memory.retrieval.hybrid import HybridRetriever

    settings = load_settings(environ={}, data_dir=tmp_path / "d")
    manager = MemoryManager(open_stores(settings), extractor=RuleExtractor())
    try:
        said = datetime(2026, 6, 1, 9, tzinfo=TZ)
        texts = ["My older sister is Lin Qing; she is married to Marcus Webb.",
                 "Qing has been hinting for ages that she wants a proper pasta machine.",
                 "Pottery tonight: glazed the two mugs I made for Qing.",
                 "The big monstera in the living room was a present from Qing.",
                 "Qing messaged that it is thirty degrees in Singapore in December.",
                 "姐姐到新加坡以后没有再做律师，现在在一家儿童教育基金会当法务顾问。",
                 "今天是妈妈生日，视频的时候她说舅舅的腿做了手术，恢复得不错。"]
        for n, text in enumerate(texts):
            manager.add(text, namespace="q", event_time=said + timedelta(days=n))
        retriever = HybridRetriever(manager)
        plan = retriever.about_whom("q", retriever.plan("What does Qing do for work?"))
        assert "sister" in plan.analysis.resolved_roles
        hits = manager.search("What does Qing do for work these days?", namespace="q",
                              top_k=3)
        assert "法务顾问" in hits[0].item.content, [h.item.content for h in hits]
    finally:
        manager.close()


def test_a_role_with_no_name_known_is_still_the_subject(tmp_path: Any) -> None:
    """Issue 26: "妈妈喜欢什么花？" with no name known for mum is about mum: "Mum loves
    gardenias" names her (a parent's word, capitalised), and the user's own "我最喜欢吃
    妈妈做的红烧肉", which only mentions her, is about someone else."""
    settings = load_settings(environ={}, data_dir=tmp_path / "d")
    manager = MemoryManager(open_stores(settings), extractor=RuleExtractor())
    try:
        said = datetime(2026, 6, 1, 9, tzinfo=TZ)
        for n, text in enumerate(["我最喜欢吃妈妈做的红烧肉。", "Mum loves gardenias, her "
                                  "balcony is full of them.", "妈妈的生日是11月8号。",
                                  "I can't stand coriander, it tastes like soap to me."]):
            manager.add(text, namespace="m", event_time=said + timedelta(days=n))
        hits = manager.search("妈妈喜欢什么花？", namespace="m", top_k=4)
        assert "gardenias" in hits[0].item.content, [h.item.content for h in hits]
        assert [h.breakdown.subject for h in hits if "红烧肉" in h.item.content] == [0.5]
    finally:
        manager.close()


def test_roles_resolve_whatever_type_the_fact_was_stored_as(tmp_path: Any) -> None:
    """Issue 26, failure class 4: only semantic memories fed the entity graph, so "my
    sister" stopped resolving for the same fact stored as episodic."""
    from hello_memory.retrieval.hybrid import HybridRetriever

    settings = load_settings(environ={}, data_dir=tmp_path / "d")
    manager = MemoryManager(open_stores(settings), extractor=RuleExtractor())
    try:
        manager.add("My sister is Anna Berg.", namespace="e", memory_type="episodic")
        manager.add("Anna Berg moved to Bergen last spring.", namespace="e",
                    memory_type="episodic")
        retriever = HybridRetriever(manager)
        plan = retriever.about_whom("e", retriever.plan("Where does my sister live?"))
        assert plan.analysis.resolved == ["Anna Berg"]
    finally:
        manager.close()
