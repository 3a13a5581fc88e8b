"""Issue 26: a question that asks for an attribute ("what car do I drive?", "where does
Priya live?") is answered by the memory that states it, even when that memory is an
event in everyday wording and another memory about the user is closer in embedding
space. The factor that does it is in every hit's breakdown (docs/RETRIEVAL.md)."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime, timedelta, timezone
from typing import Any

import pytest

from hello_memory.config import load_settings
from hello_memory.factory import open_stores
from hello_memory.memory.manager import MemoryManager
from hello_memory.retrieval.fusion import explain
from hello_memory.retrieval.hybrid import ATTRIBUTE_MISS_FACTOR
from hello_memory.text.entities import RuleExtractor

pytestmark = pytest.mark.slow

TZ = timezone(timedelta(hours=1))
NS = "life"


@pytest.fixture(scope="module")
def mm(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MemoryManager]:
    from hello_memory.embedding import SentenceTransformerEmbedder

    settings = load_settings(environ={}, data_dir=tmp_path_factory.mktemp("attr") / "d")
    manager = MemoryManager(open_stores(settings, embedder=SentenceTransformerEmbedder()),
                            extractor=RuleExtractor(),
                            clock=lambda: datetime(2026, 12, 4, 18, 0, tzinfo=TZ))
    day = datetime(2026, 6, 1, 9, tzinfo=TZ)
    for n, (text, kind) in enumerate([
            ("My birthday is 3 March.", "semantic"),
            ("I speak Dutch, English and a bit of Polish.", "semantic"),
            ("This year I want to run a half marathon.", "episodic"),
            ("Sold the old Fiesta and picked up a second-hand Nissan Leaf, fully "
             "electric now.", "episodic"),
            ("Priya moved to a flat in Rotterdam-Noord in the spring.", "episodic"),
            ("Priya's favourite band is Khruangbin.", "semantic")]):
        manager.add(text, namespace=NS, memory_type=kind, event_time=day + timedelta(days=n))
    yield manager
    manager.close()


def _texts(hits: list[Any]) -> list[str]:
    return [h.item.content for h in hits]


@pytest.mark.parametrize(("question", "answer"), [
    ("What car do I drive?", "Nissan Leaf"),
    ("Where does Priya live?", "Rotterdam"),
])
def test_the_memory_stating_the_asked_attribute_comes_first(mm: MemoryManager,
                                                            question: str,
                                                            answer: str) -> None:
    hits = mm.search(question, namespace=NS, top_k=6)
    assert answer in hits[0].item.content, _texts(hits)
    assert hits[0].breakdown.attribute == 1.0
    others = [h for h in hits[1:] if answer not in h.item.content]
    assert others and all(h.breakdown.attribute == ATTRIBUTE_MISS_FACTOR for h in others)
    assert "attribute 0.50" in explain(others[0])
    assert all(0.0 <= h.score <= 1.0 for h in hits)


def test_a_question_asking_for_no_attribute_is_left_alone(mm: MemoryManager) -> None:
    hits = mm.search("What are my plans for this year?", namespace=NS, top_k=6)
    assert hits and all(h.breakdown.attribute == 1.0 for h in hits)


def test_kin_in_two_steps_finds_the_person(mm: MemoryManager) -> None:
    # "my niece" is my sister's daughter: the links come from two memories in everyday
    # wording (text/people.py COMPOSITE_ROLES), the answer names neither "niece" nor me
    ns = "kin"
    day = datetime(2026, 6, 1, 9, tzinfo=TZ)
    for n, text in enumerate([
            "My older sister is Mei Lin; she is married to Omar Haddad.",
            "Mei and Omar have one daughter, Sara, born in 2020.",
            "We have a ginger cat called Pumpkin.",
            "Sara is mad about trains, especially the old steam ones.",
            "Omar plays squash every Sunday."]):
        mm.add(text, namespace=ns, memory_type="semantic", event_time=day + timedelta(days=n))
    hits = mm.search("What does my niece love?", namespace=ns, top_k=5)
    assert "trains" in hits[0].item.content, _texts(hits)
    hits = mm.search("What sport does my brother-in-law play?", namespace=ns, top_k=5)
    assert "squash" in hits[0].item.content, _texts(hits)


def test_advice_is_answered_by_the_tastes_of_the_person_it_is_for(mm: MemoryManager) -> None:
    # "should I buy Noor wine?" asks about Noor (not the asker's own tastes), and "what
    # should I cook for Noor on Friday?" is answered by what she said in June
    ns = "advice"
    day = datetime(2026, 6, 1, 9, tzinfo=TZ)
    for n, (text, kind) in enumerate([
            ("I'm lactose intolerant, so it's oat milk in my coffee.", "semantic"),
            ("I can't stand coriander.", "semantic"),
            ("Noor doesn't drink alcohol at all.", "episodic"),
            ("Noor has been vegetarian since she was a teenager.", "episodic"),
            ("First 1:1 with Noor today; she wants a churn dashboard by January.", "episodic"),
            ("Every other Friday we have pizza night with Noor.", "semantic")]):
        mm.add(text, namespace=ns, memory_type=kind, event_time=day + timedelta(days=n))
    asked = datetime(2026, 12, 1, 12, tzinfo=TZ)
    hits = mm.search("Should I buy Noor a bottle of wine as a thank-you?", namespace=ns,
                     top_k=5, reference_time=asked)
    assert "alcohol" in hits[0].item.content, _texts(hits)
    hits = mm.search("What should I cook for Noor on Friday?", namespace=ns, top_k=5,
                     reference_time=asked)
    assert "vegetarian" in hits[0].item.content, _texts(hits)
    assert hits[0].breakdown.time == 1.0 and hits[0].breakdown.attribute == 1.0
