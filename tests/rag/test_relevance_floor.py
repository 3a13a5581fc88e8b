"""ask's relevance floor (issue 20): passages the question is not close to are not
shown, so an LLM-free ask prints the few that answer, and nothing for a question the
documents do not answer; rag.min_score / rag.relative_score set it."""

from __future__ import annotations

from pathlib import Path

import pytest

from hello_memory.config import RagSettings
from hello_memory.rag import RAGPipeline

from .corpus import write_corpus

pytestmark = pytest.mark.slow


@pytest.fixture
def kb(rag: RAGPipeline, tmp_path: Path) -> RAGPipeline:
    write_corpus(tmp_path / "docs")
    assert rag.ingest([tmp_path / "docs"], namespace="kb").failed == []
    return rag


def test_ask_without_llm_shows_only_close_passages(kb: RAGPipeline) -> None:
    hits = kb.search("How long is the warranty on the espresso machine?", namespace="kb",
                     top_k=8)
    assert len(hits) == 8 and all(h.similarity is not None for h in hits)
    assert hits[0].similarity == max(h.similarity or 0 for h in hits)
    answer = kb.ask("How long is the warranty on the espresso machine?", namespace="kb")
    assert not answer.used_llm
    assert 1 <= len(answer.passages) <= 3  # not the 8 it retrieved
    assert "two years" in answer.passages[0].content
    bar = kb.settings.min_score
    assert all((p.similarity or 0) >= bar for p in answer.passages)


def test_a_question_nothing_answers_shows_no_passage(kb: RAGPipeline) -> None:
    answer = kb.ask("Who won the football world cup in 2014?", namespace="kb")
    assert answer.passages == [] and answer.citations == []
    assert "No passage is close enough to the question" in answer.text
    assert "rag.min_score" in answer.text


def test_the_floor_is_a_setting_and_an_argument(kb: RAGPipeline) -> None:
    q = "How long is the warranty on the espresso machine?"
    off = kb.ask(q, namespace="kb", min_score=-1.0, relative_score=0.0)
    assert len(off.passages) == 8  # the floor off: every passage ask_top_k retrieved
    kb.settings = kb.settings.model_copy(update={"min_score": 0.99})
    assert kb.ask(q, namespace="kb").passages == []
    kb.settings = kb.settings.model_copy(update={"min_score": -1.0, "relative_score": 0.9})
    close = kb.ask(q, namespace="kb").passages
    assert close and all((p.similarity or 0) >= 0.9 * (close[0].similarity or 0)
                         for p in close)
    with pytest.raises(ValueError):
        RagSettings(min_score=2.0)
