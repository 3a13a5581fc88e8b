"""Task-aware retrieval (seed 000) on real stores and the real MiniLM embedder."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from hello_memory.config import RetrievalSettings, load_settings
from hello_memory.errors import InvalidInputError, NotFoundError
from hello_memory.factory import open_stores
from hello_memory.memory.manager import MemoryManager
from hello_memory.retrieval.task_aware import TaskAwareRetriever
from hello_memory.text.entities import RuleExtractor
from hello_memory.text.tokens import default_token_counter

pytestmark = pytest.mark.slow

NOW = datetime(2024, 6, 1, 12, 0, tzinfo=timezone.utc)
NS = "acme/web/auth"


@pytest.fixture(scope="module")
def manager(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MemoryManager]:
    from hello_memory.embedding import SentenceTransformerEmbedder

    settings = load_settings(environ={}, data_dir=tmp_path_factory.mktemp("task"))
    mm = MemoryManager(open_stores(settings, embedder=SentenceTransformerEmbedder()),
                       extractor=RuleExtractor(), clock=lambda: NOW)
    login = "login session token"
    rows = [
        (NS, f"The {login} expired early because the clock skew check was wrong", "episodic",
         None, NOW - timedelta(days=2)),
        (NS, f"Never store the {login} in localStorage: it leaked in the last audit",
         "episodic", "anti_pattern", NOW - timedelta(days=20)),
        (NS, f"How to add a {login} refresh endpoint: write the handler, then the test",
         "semantic", "procedure", NOW - timedelta(days=40)),
        (NS, f"The {login} is a signed JWT with a 15 minute lifetime", "semantic", None,
         NOW - timedelta(days=60)),
        ("acme/web", f"The web team reviews every change to the {login} code", "semantic",
         None, NOW - timedelta(days=10)),
        ("acme", "Acme deploys on Tuesdays", "semantic", None, NOW - timedelta(days=10)),
        ("global", f"A {login} should be rotated after a password change", "semantic",
         "lesson", NOW - timedelta(days=100)),
        ("other-team", f"Their {login} uses cookies", "semantic", None, NOW),
    ]
    mm.add_many([{"content": c, "namespace": ns, "memory_type": t, "event_time": when,
                  "importance": 0.5, "metadata": {"category": cat} if cat else {}}
                 for ns, c, t, cat, when in rows])
    yield mm
    mm.close()


@pytest.fixture(scope="module")
def tar(manager: MemoryManager) -> TaskAwareRetriever:
    return TaskAwareRetriever(manager, namespace=NS)


DEBUG = {"goal": "fix the login session token bug", "phase": "debugging",
         "action_type": "run_test"}
BUILD = {"goal": "implement a login session token refresh feature", "phase": "development",
         "action_type": "write_file"}


def test_task_type_reweights_categories(tar: TaskAwareRetriever) -> None:
    debug = tar.retrieve_task_aware(DEBUG, top_k=4)
    build = tar.retrieve_task_aware(BUILD, top_k=4)
    assert debug[0]["_task_type"] == "debugging" and build[0]["_task_type"] == "implementation"
    assert debug[0]["_source"] in {"anti_patterns", "episodic"}
    assert build[0]["_source"] == "skills"
    for rows in (debug, build):
        assert all(r["_namespace"] == NS for r in rows)
        scores = [r["_weighted_score"] for r in rows]
        assert scores == sorted(scores, reverse=True)
        weights = tar.strategies[rows[0]["_task_type"]]
        for r in rows:
            assert r["_weighted_score"] == pytest.approx(r["_score"] * weights[r["_source"]])
    explicit = tar.retrieve_task_aware({**DEBUG, "task_type": "review"}, top_k=2)
    assert explicit[0]["_task_type"] == "review"
    with pytest.raises(InvalidInputError):
        tar.retrieve_task_aware({**DEBUG, "task_type": "dancing"})
    with pytest.raises(InvalidInputError):
        tar.retrieve_task_aware({"phase": "debugging"})  # nothing to search for


def test_strategies_extend_from_config(manager: MemoryManager) -> None:
    settings = RetrievalSettings(task_strategies={
        "testing": {"episodic": 0.0, "semantic": 0.0, "skills": 0.0, "anti_patterns": 1.0}})
    tar = TaskAwareRetriever(manager, namespace=NS, settings=settings,
                             signals={"testing": {"keywords": ["pytest"], "actions": [],
                                                  "phases": ["testing"]}})
    ctx = {"goal": "login session token pytest", "phase": "testing"}
    assert tar.detect_task_type(ctx) == "testing"
    rows = tar.retrieve_task_aware(ctx, top_k=5)
    assert rows and all(r["_source"] == "anti_patterns" for r in rows)  # weight 0 drops
    with pytest.raises(InvalidInputError):
        TaskAwareRetriever(manager, strategies={"x": {"episodic": -1.0}})


def test_with_namespace_and_cross_namespace(tar: TaskAwareRetriever) -> None:
    other = tar.with_namespace("other-team")
    assert other.namespace == "other-team" and tar.namespace == NS
    rows = tar.retrieve_cross_namespace(DEBUG, [NS, "other-team"], top_k=3)
    theirs = [r for r in rows if r["_namespace"] == "other-team"]
    assert theirs and len(rows) <= 6
    alone = other.retrieve_task_aware(DEBUG, top_k=3)
    assert theirs[0]["_weighted_score"] == pytest.approx(0.9 * alone[0]["_weighted_score"])
    with pytest.raises(InvalidInputError):
        tar.retrieve_cross_namespace(DEBUG, [])


def test_inheritance_child_parent_global(tar: TaskAwareRetriever) -> None:
    assert tar.inheritance_chain() == [NS, "acme/web", "acme", "global"]
    assert tar.inheritance_chain(include_global=False) == [NS, "acme/web", "acme"]
    rows = tar.retrieve_with_inheritance(BUILD, top_k=20)
    spaces = {r["_namespace"] for r in rows}
    assert {NS, "acme/web", "global"} <= spaces and "other-team" not in spaces
    for r in rows:
        assert r["_inheritance_depth"] == tar.inheritance_chain().index(r["_namespace"])
    no_global = tar.retrieve_with_inheritance(BUILD, top_k=20, include_global=False)
    assert "global" not in {r["_namespace"] for r in no_global}


def test_budgets_are_never_exceeded(tar: TaskAwareRetriever) -> None:
    count = default_token_counter().count
    for budget in (40, 150, 2000):
        out = tar.retrieve_with_budget(DEBUG, token_budget=budget)
        used = sum(count(m["content"]) for m in out["memories"])
        assert used == out["metrics"]["tokens_used"] <= budget
        assert out["task_type"] == "debugging"
    big = tar.retrieve_with_budget(DEBUG, token_budget=2000)
    assert big["metrics"]["layers_used"] == [1, 2, 3]
    flat = tar.retrieve_with_budget(DEBUG, token_budget=2000, progressive=False)
    assert flat["metrics"]["layers_used"] == [3]
    small = tar.retrieve_task_aware(DEBUG, top_k=4, token_budget=20)
    assert sum(count(r["content"]) for r in small) <= 20
    with pytest.raises(InvalidInputError):
        tar.retrieve_with_budget(DEBUG, token_budget=0)


def test_temporal(tar: TaskAwareRetriever) -> None:
    rows = tar.retrieve_by_temporal(since=NOW - timedelta(days=30))
    assert [r["content"][:20] for r in rows] == [
        "The login session to", "Never store the logi"]  # newest first, this namespace
    assert tar.retrieve_by_temporal(NOW - timedelta(days=30), memory_types=["semantic"]) == []
    with pytest.raises(InvalidInputError):
        tar.retrieve_by_temporal(since=datetime(2024, 1, 1))


def test_keyword_fallback(manager: MemoryManager) -> None:
    tar = TaskAwareRetriever(manager, namespace=NS, use_embeddings=False)
    rows = tar.retrieve_task_aware({"goal": "localStorage audit"}, top_k=2)
    assert rows[0]["content"].startswith("Never store")


def test_build_save_load_indices(tar: TaskAwareRetriever, tmp_path: Path) -> None:
    assert tar.build_indices() == 4
    index = tar.topic_index
    assert {v["category"] for v in index.values()} == {"episodic", "anti_patterns", "skills",
                                                      "semantic"}
    path = tar.save_indices(tmp_path / "idx" / "auth.json")
    fresh = tar.with_namespace(NS)
    assert fresh.topic_index == {}
    assert fresh.load_indices(path) == 4 and fresh.topic_index == index
    # searching still works after the rebuild (vectors re-upserted, same ids)
    assert tar.retrieve_task_aware(DEBUG, top_k=1)
    with pytest.raises(NotFoundError):
        fresh.load_indices(tmp_path / "missing.json")
    with pytest.raises(InvalidInputError):
        tar.with_namespace("acme").load_indices(path)
