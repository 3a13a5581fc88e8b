"""LLM planning and reflection against the scripted endpoint: valid, malformed and slow
answers, each falling back to the rule path when it fails."""

from __future__ import annotations

import json

from llm.scripted_server import ScriptedLLMServer, ScriptedResponse

from hello_memory.llm import OpenAICompatClient
from hello_memory.retrieval.planning import InformationPlan, QueryPlanner

Q = "What did Alice buy and where did Bob go?"


def test_llm_plan_and_targeted_queries(llm: OpenAICompatClient,
                                       llm_server: ScriptedLLMServer) -> None:
    llm_server.reply(json.dumps({
        "question_type": "multi", "key_entities": ["Alice", "Bob"],
        "required_info": [{"info_type": "purchase", "description": "what Alice bought",
                           "priority": "high"},
                          {"info_type": "travel", "description": "where Bob went"}],
        "minimal_queries_needed": 2}))
    # five queries, the original missing: it is put first and the list capped at 4
    llm_server.reply(json.dumps({"queries": ["Alice purchase", "Bob trip", "Bob travel",
                                             "Alice shopping", "Bob holiday"]}))
    planner = QueryPlanner(llm, max_queries=4)
    plan = planner.analyze_information_requirements(Q)
    assert [r.info_type for r in plan.required_info] == ["purchase", "travel"]
    queries = planner.generate_targeted_queries(Q, plan)
    assert queries == [Q, "Alice purchase", "Bob trip", "Bob travel"]
    sent = llm_server.requests[1].body["messages"][-1]["content"]
    assert "purchase: what Alice bought" in sent
    assert llm.stats.fallbacks == 0


def test_malformed_answers_fall_back_and_are_counted(llm: OpenAICompatClient,
                                                     llm_server: ScriptedLLMServer) -> None:
    # not JSON, then not JSON again after the one repair round trip
    llm_server.reply("I think you should search for Alice.")
    llm_server.reply("still not json")
    planner = QueryPlanner(llm)
    plan = planner.analyze_information_requirements(Q)
    assert plan.required_info[0].info_type == "general"  # the deterministic fallback
    # valid JSON of the wrong shape (empty list violates the schema), twice
    llm_server.reply(json.dumps({"queries": []}))
    llm_server.reply(json.dumps({"queries": []}))
    queries = planner.generate_targeted_queries(Q, plan)
    assert queries == [Q, "What did Alice buy", "where did Bob go"]  # rule decomposition
    assert llm.stats.fallbacks == 2
    assert llm.stats.repairs == 2


def test_slow_and_failing_endpoint_falls_back(llm_server: ScriptedLLMServer) -> None:
    llm_server.enqueue(ScriptedResponse(content="{}", delay=3.0))
    with OpenAICompatClient(llm_server.base_url, "m", timeout=0.3, max_retries=0) as slow:
        planner = QueryPlanner(slow)
        assert planner.generate_targeted_queries(Q, InformationPlan()) == [
            Q, "What did Alice buy", "where did Bob go"]
        assert slow.stats.fallbacks == 1
    llm_server.fail(500)
    with OpenAICompatClient(llm_server.base_url, "m", max_retries=0) as failing:
        verdict = QueryPlanner(failing).analyze_completeness(Q, InformationPlan(), ["a memory"])
        assert verdict.assessment == "incomplete"  # unknown: do not stop early


def test_completeness_and_gap_queries(llm: OpenAICompatClient,
                                      llm_server: ScriptedLLMServer) -> None:
    llm_server.reply(json.dumps({"assessment": "incomplete", "coverage_percentage": 50,
                                 "missing_info": ["where Bob went"]}))
    llm_server.reply(json.dumps({"queries": ["Bob holiday destination", Q, "  ", "a", "b",
                                             "c"]}))
    planner = QueryPlanner(llm)
    verdict = planner.analyze_completeness(Q, InformationPlan(), ["Alice bought a bike"])
    assert verdict.assessment == "incomplete" and verdict.coverage_percentage == 50
    gaps = planner.generate_missing_info_queries(Q, verdict, ["Alice bought a bike"])
    # the original and blanks are dropped, at most three kept
    assert gaps == ["Bob holiday destination", "a", "b"]
    prompt = llm_server.requests[0].body["messages"][-1]["content"]
    assert "[1] Alice bought a bike" in prompt
