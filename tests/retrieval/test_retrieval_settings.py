"""Every ``retrieval.*`` key reaches the one search engine, set by YAML and by env.

The manager is built by the composition root (``MemoryManager.open(settings)``), as
every interface builds it; each test observes the key's effect on a search, not just
the parsed value. The LLM keys run against the scripted LLM endpoint.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from llm.scripted_server import ScriptedLLMServer

from hello_memory.config import Settings, load_settings
from hello_memory.memory.manager import MemoryManager
from hello_memory.retrieval.task_aware import TaskAwareRetriever

pytestmark = pytest.mark.slow

NS = "cfg"
FACTS = [
    ("Anna moved to Bergen in March.", "s1"),
    ("Anna started a new job at the harbour office.", "s1"),
    ("Anna bought a green kayak for the fjord.", "s1"),
    ("Tom prefers tea over coffee.", "s2"),
    ("Tom plays the cello in an orchestra.", "s2"),
]


@pytest.fixture(scope="module")
def embedder() -> Any:
    from hello_memory.embedding import SentenceTransformerEmbedder

    return SentenceTransformerEmbedder()


def _env_name(path: tuple[str, ...]) -> str:
    return "HELLO_MEMORY__" + "__".join(p.upper() for p in path)


def _nest(path: tuple[str, ...], value: Any) -> dict[str, Any]:
    out: dict[str, Any] = {path[-1]: value}
    for key in reversed(path[:-1]):
        out = {key: out}
    return out


def _merge(a: dict[str, Any], b: dict[str, Any]) -> dict[str, Any]:
    out = dict(a)
    for k, v in b.items():
        out[k] = _merge(out[k], v) if isinstance(v, dict) and isinstance(out.get(k), dict) else v
    return out


SettingsFactory = Callable[[dict[tuple[str, ...], Any]], Settings]


@pytest.fixture(params=["yaml", "env"])
def make_settings(request: pytest.FixtureRequest, tmp_path: Path) -> SettingsFactory:
    """Settings with the given keys set through a YAML file or HELLO_MEMORY__* env."""

    count = iter(range(100))

    def build(values: dict[tuple[str, ...], Any]) -> Settings:
        data_dir = str(tmp_path / f"data{next(count)}")
        if request.param == "yaml":
            doc: dict[str, Any] = {}
            for path, value in values.items():
                doc = _merge(doc, _nest(path, value))
            cfg = tmp_path / f"{Path(data_dir).name}.yaml"
            cfg.write_text(yaml.safe_dump(doc), encoding="utf-8")
            return load_settings(cfg, environ={}, data_dir=data_dir)
        env = {_env_name(path): (json.dumps(value) if not isinstance(value, str) else value)
               for path, value in values.items()}
        return load_settings(environ=env, data_dir=data_dir)

    return build


@pytest.fixture
def open_mm(embedder: Any) -> Iterator[Callable[[Settings], MemoryManager]]:
    opened: list[MemoryManager] = []

    def build(settings: Settings) -> MemoryManager:
        mm = MemoryManager.open(settings, embedder=embedder)
        opened.append(mm)
        mm.add_many([{"content": c, "namespace": NS, "session_id": s, "importance": 0.5,
                      "memory_type": "episodic"} for c, s in FACTS])
        return mm

    yield build
    for mm in opened:
        mm.close()


def test_rrf_k_and_view_weights(make_settings: SettingsFactory, open_mm: Any) -> None:
    mm = open_mm(make_settings({("retrieval", "rrf_k"): 17.0,
                                ("retrieval", "view_weights"): {"lexical": 3.0}}))
    [top] = mm.search("green kayak", top_k=1, namespace=NS, views=["lexical"],
                      neighbor_weight=0.0)
    assert "kayak" in top.item.content
    assert top.fused == pytest.approx(3.0 / (17.0 + 1))


def test_candidates_caps_each_view(make_settings: SettingsFactory, open_mm: Any) -> None:
    mm = open_mm(make_settings({("retrieval", "candidates"): 2}))
    hits = mm.search("what did Anna do?", top_k=10, namespace=NS, views=["semantic"],
                     neighbor_weight=0.0)
    assert len(hits) == 2
    assert len(mm.search("what did Anna do?", top_k=10, namespace=NS, views=["semantic"],
                         neighbor_weight=0.0, recipe="dense-only")) == 2


def test_neighbor_weight(make_settings: SettingsFactory, open_mm: Any) -> None:
    mm = open_mm(make_settings({("retrieval", "neighbor_weight"): 0.9}))
    hits = mm.search("green kayak", top_k=5, namespace=NS)
    lent = [h for h in hits if h.context > 0]
    assert lent, "neighbours of the kayak turn get a share of its score"
    kayak = next(h for h in hits if "kayak" in h.item.content)
    assert max(h.context for h in lent) == pytest.approx(0.9 * kayak.fused, rel=0.2)


def test_min_similarity(make_settings: SettingsFactory, open_mm: Any) -> None:
    strict = open_mm(make_settings({("retrieval", "min_similarity"): 0.99}))
    assert strict.search("green kayak", top_k=5, namespace=NS, views=["semantic"]) == []
    assert strict.search("green kayak", top_k=5, namespace=NS, views=["lexical"])


def test_max_sub_queries(make_settings: SettingsFactory, open_mm: Any) -> None:
    q = "Where did Anna move and what does Tom play?"
    one = open_mm(make_settings({("retrieval", "max_sub_queries"): 1}))
    assert one.retriever.plan(q).queries == (q,)
    assert {h.queries for h in one.search(q, top_k=5, namespace=NS)} == {(q,)}


def test_parallel(make_settings: SettingsFactory, open_mm: Any) -> None:
    serial = open_mm(make_settings({("retrieval", "parallel"): False}))
    assert serial.search("green kayak", top_k=3, namespace=NS)
    assert serial.retriever._pool is None  # no thread pool was ever started


def test_task_strategies(make_settings: SettingsFactory, open_mm: Any) -> None:
    mm = open_mm(make_settings({("retrieval", "task_strategies"): {
        "triage": {"episodic": 0.0, "semantic": 1.0, "skills": 0.0, "anti_patterns": 0.0}}}))
    tar = TaskAwareRetriever(mm, namespace=NS)
    assert tar.retriever is mm.retriever  # the manager's engine, not a second one
    assert "triage" in tar.strategies
    # every memory here is episodic, and the strategy weighs episodic at 0
    assert tar.retrieve_task_aware({"goal": "kayak", "task_type": "triage"}) == []
    assert tar.retrieve_task_aware({"goal": "kayak", "task_type": "debugging"})


# --- the LLM keys: a configured LLM plans and reflects inside mm.search ---------------
@pytest.fixture
def llm_server() -> Iterator[ScriptedLLMServer]:
    with ScriptedLLMServer() as server:
        yield server


def _llm(server: ScriptedLLMServer) -> dict[tuple[str, ...], Any]:
    return {("llm", "provider"): "openai", ("llm", "base_url"): server.base_url,
            ("llm", "api_key"): "test", ("llm", "model"): "scripted",
            ("llm", "max_retries"): 0,
            # these tests count the retriever's requests: the per-add supersede decision
            # a configured LLM also makes (memory/supersede.py) stays on the rules here
            ("memory", "supersede"): "rules"}


def _script_plan(server: ScriptedLLMServer) -> None:
    server.reply(json.dumps({"question_type": "what", "key_entities": ["Anna"],
                             "required_info": [{"info_type": "boat"}],
                             "minimal_queries_needed": 1}))
    server.reply(json.dumps({"queries": ["Anna kayak purchase"]}))


def test_manager_llm_plans_the_query(make_settings: SettingsFactory, open_mm: Any,
                                     llm_server: ScriptedLLMServer) -> None:
    mm = open_mm(make_settings({**_llm(llm_server),
                                ("retrieval", "enable_reflection"): False}))
    q = "What boat does Anna own?"
    _script_plan(llm_server)
    assert mm.retriever.plan(q).queries == (q, "Anna kayak purchase")
    _script_plan(llm_server)
    hits = mm.search(q, top_k=3, namespace=NS)
    assert llm_server.pending == 0 and len(llm_server.requests) == 4
    assert any("kayak" in h.item.content for h in hits)


def test_enable_planning_off(make_settings: SettingsFactory, open_mm: Any,
                             llm_server: ScriptedLLMServer) -> None:
    mm = open_mm(make_settings({**_llm(llm_server), ("retrieval", "enable_planning"): False,
                                ("retrieval", "enable_reflection"): False}))
    assert mm.search("What boat does Anna own?", top_k=3, namespace=NS)
    assert llm_server.requests == []


def test_enable_reflection_and_rounds(make_settings: SettingsFactory, open_mm: Any,
                                      llm_server: ScriptedLLMServer) -> None:
    mm = open_mm(make_settings({**_llm(llm_server), ("retrieval", "enable_planning"): False,
                                ("retrieval", "max_reflection_rounds"): 1}))
    llm_server.reply(json.dumps({"assessment": "incomplete", "missing_info": ["boat"]}))
    llm_server.reply(json.dumps({"queries": ["kayak"]}))
    assert mm.search("What boat does Anna own?", top_k=3, namespace=NS)
    # one round: one completeness check and one gap-query request, no second check
    assert llm_server.pending == 0 and len(llm_server.requests) == 2
    off = open_mm(make_settings({**_llm(llm_server), ("retrieval", "enable_planning"): False,
                                 ("retrieval", "enable_reflection"): False}))
    before = len(llm_server.requests)
    assert off.search("What boat does Anna own?", top_k=3, namespace=NS)
    assert len(llm_server.requests) == before
