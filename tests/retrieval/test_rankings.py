"""Rankings a person agrees with (issue 13): one test per failure class seen when the
library was tried as a new user would, through ``MemoryManager.search``, the search
every interface calls. Real stores, the real MiniLM embedder, the default extractor."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest

from hello_memory.config import load_settings
from hello_memory.memory.manager import MemoryManager

pytestmark = pytest.mark.slow

NOW = datetime(2026, 11, 20, 12, 0, tzinfo=timezone.utc)  # a Friday
FACTS = [
    "Anna is married to Tom Berg.",
    "Anna's birthday is on 3 May.",
    "Anna's manager at the clinic is Priya Shah.",
    "Anna lives in Bergen with her husband.",
    "Tom Berg works as a structural engineer at Hafenbau.",
    "Tom plays the cello in an amateur orchestra.",
    "The user's name is Sofia Chen; friends call her Sofi.",
    "The user's husband is Lars Eide.",
    "The user reports to Raj Patel, who leads the design team.",
    "Lars Eide's birthday is on 12 March.",
    "Raj's wife Priya Patel is a cardiologist.",
    "The user is allergic to peanuts.",
    "Mia Eide, the user's daughter, loves dinosaurs.",
    "用户的妈妈叫王芳,住在成都。",
    "妈妈有高血压,饭菜不能太咸。",
]
EVENTS = [  # (content, days before NOW)
    ("Tom ran the Bergen city marathon.", 160),  # June 2026
    ("Anna and Tom went hiking in the fjords.", 60),
    ("The user presented the warehouse redesign to the board.", 8),  # last week
    ("The user renewed her passport at the consulate.", 345),
]


@pytest.fixture(scope="module")
def mm(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MemoryManager]:
    from hello_memory.embedding import SentenceTransformerEmbedder

    data: Path = tmp_path_factory.mktemp("rankings")
    settings = load_settings(environ={}, data_dir=data)
    manager = MemoryManager.open(settings, embedder=SentenceTransformerEmbedder())
    manager.add_many([{"content": c, "memory_type": "semantic", "namespace": "p",
                       "importance": 0.5} for c in FACTS])
    manager.add_many([{"content": c, "memory_type": "episodic", "namespace": "p",
                       "importance": 0.5, "event_time": NOW - timedelta(days=d)}
                      for c, d in EVENTS])
    yield manager
    manager.close()


def top(mm: MemoryManager, query: str, k: int = 3, **kw: Any) -> list[str]:
    return [h.item.content for h in mm.search(query, top_k=k, namespace="p",
                                              reference_time=NOW, **kw)]


def test_a_mere_mention_of_the_person_does_not_outrank_the_answer(mm: MemoryManager) -> None:
    # Every Anna fact names Anna; the graph must not call them all equally relevant.
    assert top(mm, "Who is Anna's manager?")[0] == "Anna's manager at the clinic is Priya Shah."
    hits = mm.search("Who is Anna's manager?", top_k=10, namespace="p", views=["graph"])
    assert "Anna's birthday is on 3 May." not in [h.item.content for h in hits]


def test_a_name_or_possessive_alone_does_not_win_bm25(mm: MemoryManager) -> None:
    lexical = top(mm, "Who is Anna's husband?", 5, recipe="bm25-only")
    assert lexical[0] == "Anna lives in Bergen with her husband."
    assert "Anna's birthday is on 3 May." not in lexical


def test_a_full_name_and_its_first_name_are_one_person(mm: MemoryManager) -> None:
    # "Tom" in the question, "Tom Berg" in the memory: one person (alias)
    assert "Tom Berg works as a structural engineer at Hafenbau." in top(
        mm, "What is Tom's job?", 2)
    graph = mm.stores.graph.find_entities("p", ["Tom"], aliases=True)
    assert "Tom Berg" in {e.name for e in graph}


def test_memory_types_share_one_scale(mm: MemoryManager) -> None:
    ns = "scale"
    text = "The team offsite is planned for the lake house in spring."
    episodic = mm.add(text, "episodic", importance=0.5, namespace=ns, event_time=NOW)
    semantic = mm.add(text, "semantic", importance=0.9, namespace=ns)
    hits = mm.search("Where is the team offsite?", top_k=2, namespace=ns)
    # the same evidence: the more important (promoted) copy ranks first
    assert [h.id for h in hits] == [semantic.id, episodic.id]
    assert hits[0].views["semantic"].rank == hits[1].views["semantic"].rank


def test_first_person_questions_are_about_the_user(mm: MemoryManager) -> None:
    assert top(mm, "Who is my manager?")[0] == (
        "The user reports to Raj Patel, who leads the design team.")
    assert top(mm, "Who is my husband?")[0] == "The user's husband is Lars Eide."


def test_role_words_resolve_to_people(mm: MemoryManager) -> None:
    assert "Lars Eide's birthday is on 12 March." in top(mm, "When is my husband's birthday?")
    assert top(
        mm, "What does my boss's wife do?")[0] == "Raj's wife Priya Patel is a cardiologist."
    assert top(mm, "我妈妈住在哪里?")[0] == "用户的妈妈叫王芳,住在成都。"


def test_a_named_period_is_what_the_question_asks_about(mm: MemoryManager) -> None:
    assert top(mm, "What did Tom do in June?", 1) == ["Tom ran the Bergen city marathon."]
    assert top(mm, "What happened at work last week?", 1) == [
        "The user presented the warehouse redesign to the board."]


def test_unrelated_memories_are_no_candidates(mm: MemoryManager) -> None:
    ns = "floor"
    mm.add("The quarterly tax report is due in April.", importance=1.0, namespace=ns)
    relevant = mm.add("Bob is allergic to peanuts.", importance=0.1, namespace=ns)
    hits = mm.search("food allergies", top_k=2, namespace=ns)
    assert [h.id for h in hits] == [relevant.id]


def test_a_person_named_only_in_semantic_memories_does_not_lift_them(tmp_path: Path) -> None:
    # README's first example: only semantic memories feed the entity graph, so a graph
    # vote for "mentions Alice" lifted "Alice prefers green tea" over the episodic answer.
    from hello_memory.embedding import SentenceTransformerEmbedder

    settings = load_settings(environ={}, data_dir=tmp_path / "d")
    with MemoryManager.open(settings, embedder=SentenceTransformerEmbedder()) as m:
        m.add("Alice moved to Berlin in May 2024.", "episodic", importance=0.8,
              namespace="alice", event_time=datetime(2024, 5, 6, tzinfo=timezone.utc))
        m.add("Alice prefers green tea.", "semantic", namespace="alice")
        hits = m.search("where does Alice live?", top_k=2, namespace="alice")
        assert hits[0].item.content == "Alice moved to Berlin in May 2024."
        # the graph view still answers when it runs without the symbolic view
        graph = m.search("Alice", namespace="alice", views=["graph"])
        assert [h.item.content for h in graph] == ["Alice prefers green tea."]


def test_a_recurring_day_answers_a_when_question(tmp_path: Path) -> None:
    from hello_memory.embedding import SentenceTransformerEmbedder

    settings = load_settings(environ={}, data_dir=tmp_path / "d")
    with MemoryManager.open(settings, embedder=SentenceTransformerEmbedder()) as m:
        m.add_many([{"content": c, "namespace": "ops"} for c in (
            "The printer on floor 2 jams on A3 paper.", "The lift is serviced on Mondays.",
            "The kitchen kettle was replaced in May.")])
        hits = m.search("when is the lift serviced?", namespace="ops")
        assert hits[0].item.content == "The lift is serviced on Mondays."
