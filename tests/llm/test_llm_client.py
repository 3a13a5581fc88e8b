"""OpenAICompatClient against a real local HTTP server, plus JSON repair and fallbacks."""

from __future__ import annotations

import logging
import socket
import threading
import time
from collections.abc import Iterator

import pytest
from pydantic import BaseModel, RootModel

from hello_memory.config import LLMSettings
from hello_memory.errors import BackendUnavailableError, ConfigError, HelloMemoryError
from hello_memory.llm import (
    JSONRepairError,
    LLMClient,
    LLMError,
    LLMResponseError,
    LLMSchemaError,
    LLMUnavailableError,
    Message,
    OpenAICompatClient,
    call_or_fallback,
    extract_json,
    from_settings,
)
from hello_memory.llm.json_repair import iter_json_candidates, remove_trailing_commas

from .scripted_server import ScriptedLLMServer, ScriptedResponse

KEY = "sk-test-SECRET-0123456789"
HELLO: list[Message] = [{"role": "user", "content": "hello"}]


class Person(BaseModel):
    name: str
    age: int


@pytest.fixture
def client(llm_server: ScriptedLLMServer) -> Iterator[OpenAICompatClient]:
    with OpenAICompatClient(llm_server.base_url, "test-model", api_key=KEY,
                            timeout=5.0, max_retries=2, backoff=0.0) as c:
        yield c


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


# --- plain completion ---------------------------------------------------------------
def test_complete_sends_standard_request(client: OpenAICompatClient,
                                         llm_server: ScriptedLLMServer) -> None:
    llm_server.reply("hi there")
    assert client.complete(HELLO, temperature=0.3) == "hi there"
    (req,) = llm_server.requests
    assert req.path == "/v1/chat/completions"
    assert req.headers["authorization"] == f"Bearer {KEY}"
    assert req.body == {"model": "test-model", "messages": HELLO, "temperature": 0.3}
    assert client.stats.calls == 1 and client.stats.requests == 1
    assert client.stats.failures == 0 and client.stats.latency_s > 0


def test_max_tokens_extra_headers_and_trailing_slash(llm_server: ScriptedLLMServer) -> None:
    llm_server.reply("ok")
    with OpenAICompatClient(llm_server.base_url + "/", "m", extra_headers={"X-Org": "acme"},
                            backoff=0.0) as c:
        assert c.complete(HELLO, max_tokens=7) == "ok"
    (req,) = llm_server.requests
    assert req.path == "/v1/chat/completions"
    assert req.body["max_tokens"] == 7
    assert req.headers["x-org"] == "acme"
    assert "authorization" not in req.headers  # no key configured, none sent


def test_leading_think_block_is_dropped(client: OpenAICompatClient,
                                        llm_server: ScriptedLLMServer) -> None:
    llm_server.reply("<think>let me see {x}</think>\nParis")
    assert client.complete(HELLO) == "Paris"


def test_usage_tokens_are_summed(client: OpenAICompatClient,
                                 llm_server: ScriptedLLMServer) -> None:
    llm_server.reply("a", usage={"prompt_tokens": 10, "completion_tokens": 3, "total_tokens": 13})
    llm_server.reply("b", usage={"prompt_tokens": 5, "completion_tokens": 2, "total_tokens": 7})
    llm_server.reply("c")  # servers may omit usage
    for _ in range(3):
        client.complete(HELLO)
    snap = client.stats.snapshot()
    assert (snap["prompt_tokens"], snap["completion_tokens"], snap["calls"]) == (15, 5, 3)


# --- JSON -----------------------------------------------------------------------------
def test_json_valid_first_time(client: OpenAICompatClient,
                               llm_server: ScriptedLLMServer) -> None:
    llm_server.reply('{"name": "Ada", "age": 36}')
    assert client.complete_json(HELLO, Person) == Person(name="Ada", age=36)
    (req,) = llm_server.requests
    assert req.body["response_format"] == {"type": "json_object"}
    system = req.body["messages"][0]
    assert system["role"] == "system" and '"age"' in system["content"]
    assert req.body["messages"][1:] == HELLO
    assert client.stats.repairs == 0


def test_json_hint_merges_into_existing_system_message(
        client: OpenAICompatClient, llm_server: ScriptedLLMServer) -> None:
    llm_server.reply('{"name": "Ada", "age": 36}')
    msgs: list[Message] = [{"role": "system", "content": "You extract people."}, *HELLO]
    client.complete_json(msgs, Person)
    sent = llm_server.requests[0].body["messages"]
    assert [m["role"] for m in sent] == ["system", "user"]
    assert sent[0]["content"].startswith("You extract people.") and "JSON" in sent[0]["content"]


@pytest.mark.parametrize("answer", [
    'Sure! Here it is:\n```json\n{"name": "Ada", "age": 36,}\n```\nAnything else?',
    'The person [1] is {"name": "Ada", "age": 36} as requested.',
    '<think>{"name": "wrong"}</think>{"name": "Ada", "age": 36}',
])
def test_json_wrapped_answer_is_repaired_locally(
        client: OpenAICompatClient, llm_server: ScriptedLLMServer, answer: str) -> None:
    llm_server.reply(answer)
    assert client.complete_json(HELLO, Person) == Person(name="Ada", age=36)
    assert len(llm_server.requests) == 1 and client.stats.repairs == 0


def test_invalid_json_gets_one_repair_round_trip(
        client: OpenAICompatClient, llm_server: ScriptedLLMServer) -> None:
    llm_server.reply('{"name": "Ada", "age": "thirty-six"}')
    llm_server.reply('{"name": "Ada", "age": 36}')
    assert client.complete_json(HELLO, Person) == Person(name="Ada", age=36)
    assert len(llm_server.requests) == 2 and client.stats.repairs == 1
    *_, previous, ask = llm_server.requests[1].body["messages"]
    assert previous == {"role": "assistant", "content": '{"name": "Ada", "age": "thirty-six"}'}
    assert ask["role"] == "user" and "age" in ask["content"]
    assert client.stats.failures == 0 and client.stats.calls == 1


def test_invalid_twice_is_a_schema_error(client: OpenAICompatClient,
                                         llm_server: ScriptedLLMServer) -> None:
    llm_server.reply("I cannot answer that.")
    llm_server.reply('{"name": "Ada"}')
    with pytest.raises(LLMSchemaError) as info:
        client.complete_json(HELLO, Person)
    assert info.value.answer == '{"name": "Ada"}' and info.value.schema is Person
    assert "age" in str(info.value)
    assert len(llm_server.requests) == 2
    assert (client.stats.repairs, client.stats.failures) == (1, 1)


def test_array_schema_skips_json_object_mode(client: OpenAICompatClient,
                                             llm_server: ScriptedLLMServer) -> None:
    # json_object mode forces an object; a list schema must not ask for it
    llm_server.reply('[{"name": "Ada", "age": 36}]')
    people = client.complete_json(HELLO, RootModel[list[Person]])
    assert people.root == [Person(name="Ada", age=36)]
    assert "response_format" not in llm_server.requests[0].body


# --- retries and errors -----------------------------------------------------------------
def test_500_then_200_is_retried(client: OpenAICompatClient,
                                 llm_server: ScriptedLLMServer) -> None:
    llm_server.fail(500)
    llm_server.reply("recovered")
    assert client.complete(HELLO) == "recovered"
    assert (client.stats.retries, client.stats.requests, client.stats.failures) == (1, 2, 0)


def test_429_with_retry_after_is_retried(client: OpenAICompatClient,
                                         llm_server: ScriptedLLMServer) -> None:
    llm_server.fail(429, headers={"Retry-After": "0"})
    llm_server.reply("ok")
    started = time.monotonic()
    assert client.complete(HELLO) == "ok"
    assert client.stats.retries == 1 and time.monotonic() - started < 1.0


def test_retry_after_overrides_backoff(llm_server: ScriptedLLMServer) -> None:
    # backoff would wait 60 s; Retry-After says 0.05 s
    llm_server.fail(503, headers={"Retry-After": "0.05"})
    llm_server.reply("ok")
    with OpenAICompatClient(llm_server.base_url, "m", backoff=60.0, max_retries=1) as c:
        started = time.monotonic()
        assert c.complete(HELLO) == "ok"
        assert time.monotonic() - started < 2.0


def test_400_is_not_retried(client: OpenAICompatClient,
                            llm_server: ScriptedLLMServer) -> None:
    llm_server.fail(400, {"error": {"message": "bad model name"}})
    with pytest.raises(LLMResponseError) as info:
        client.complete(HELLO)
    assert info.value.status_code == 400 and "bad model name" in str(info.value)
    assert len(llm_server.requests) == 1 and client.stats.retries == 0
    assert client.stats.failures == 1


def test_persistent_5xx_gives_up_after_max_retries(client: OpenAICompatClient,
                                                   llm_server: ScriptedLLMServer) -> None:
    for _ in range(3):
        llm_server.fail(502)
    with pytest.raises(LLMResponseError) as info:
        client.complete(HELLO)
    assert info.value.status_code == 502
    assert len(llm_server.requests) == 3 and client.stats.retries == 2


@pytest.mark.parametrize("body", ["not json at all", {"choices": []}, {"id": "x"}])
def test_malformed_envelope(client: OpenAICompatClient, llm_server: ScriptedLLMServer,
                            body: object) -> None:
    llm_server.enqueue(ScriptedResponse(body=body))  # type: ignore[arg-type]
    with pytest.raises(LLMResponseError):
        client.complete(HELLO)
    assert len(llm_server.requests) == 1


def test_slow_answer_times_out_in_bounded_time(llm_server: ScriptedLLMServer) -> None:
    llm_server.enqueue(ScriptedResponse(content="late", delay=10),
                       ScriptedResponse(content="late", delay=10))
    with OpenAICompatClient(llm_server.base_url, "m", timeout=0.5, max_retries=1,
                            backoff=0.0) as c:
        started = time.monotonic()
        with pytest.raises(LLMUnavailableError) as info:
            c.complete(HELLO)
        assert time.monotonic() - started < 3.0
    assert isinstance(info.value, BackendUnavailableError)
    assert "timed out" in str(info.value)
    assert len(llm_server.requests) == 2 and c.stats.retries == 1


def test_connection_refused_is_unavailable() -> None:
    url = f"http://127.0.0.1:{_closed_port()}/v1"
    with (OpenAICompatClient(url, "m", api_key=KEY, max_retries=1, backoff=0.0) as c,
          pytest.raises(LLMUnavailableError) as info):
        c.complete(HELLO)
    assert c.stats.requests == 2 and c.stats.failures == 1
    assert KEY not in str(info.value)


def test_rejected_response_format_is_dropped_for_good(
        client: OpenAICompatClient, llm_server: ScriptedLLMServer) -> None:
    llm_server.fail(400, {"error": {"message": "response_format json_object not supported"}})
    llm_server.reply('{"name": "Ada", "age": 36}')
    llm_server.reply('{"name": "Bob", "age": 7}')
    assert client.complete_json(HELLO, Person).name == "Ada"
    assert client.complete_json(HELLO, Person).name == "Bob"
    first, second, third = (r.body for r in llm_server.requests)
    assert "response_format" in first
    assert "response_format" not in second and "response_format" not in third
    assert not client.json_mode and client.stats.failures == 0


def test_api_key_never_in_errors_or_logs(client: OpenAICompatClient,
                                         llm_server: ScriptedLLMServer,
                                         caplog: pytest.LogCaptureFixture) -> None:
    # some gateways echo the credential back in their error body
    llm_server.fail(500, f"upstream rejected key {KEY}")
    llm_server.fail(401, {"error": {"message": f"Incorrect API key provided: {KEY}"}})
    caplog.set_level(logging.DEBUG)
    with pytest.raises(LLMResponseError) as info:
        client.complete(HELLO)
    err = info.value
    assert KEY not in str(err) and KEY not in repr(err) and KEY not in err.body
    assert "***" in str(err)
    assert KEY not in caplog.text and KEY not in repr(client)


def test_bad_construction_is_a_config_error() -> None:
    with pytest.raises(ConfigError):
        OpenAICompatClient("localhost:8000/v1", "m")
    with pytest.raises(ConfigError):
        OpenAICompatClient("http://localhost:8000/v1", "")
    with pytest.raises(ConfigError):
        OpenAICompatClient("http://localhost:8000/v1", "m", timeout=0)


def test_stats_are_thread_safe(llm_server: ScriptedLLMServer) -> None:
    llm_server.default = ScriptedResponse(content="x", usage={"prompt_tokens": 1,
                                                              "completion_tokens": 1})
    with OpenAICompatClient(llm_server.base_url, "m", backoff=0.0) as c:
        def work() -> None:
            for _ in range(10):
                c.complete(HELLO)

        threads = [threading.Thread(target=work) for _ in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    snap = c.stats.snapshot()
    assert snap["calls"] == snap["requests"] == snap["prompt_tokens"] == 80


# --- fallbacks and settings -----------------------------------------------------------------
def test_call_or_fallback_without_llm() -> None:
    def never(llm: LLMClient) -> str:
        raise AssertionError("no LLM: must not be called")

    assert call_or_fallback(None, never, lambda: "rules", what="planning") == "rules"


def test_call_or_fallback_with_failing_llm(llm_server: ScriptedLLMServer,
                                           caplog: pytest.LogCaptureFixture) -> None:
    llm_server.fail(400)
    with OpenAICompatClient(llm_server.base_url, "m", backoff=0.0) as c:
        got = call_or_fallback(c, lambda llm: llm.complete(HELLO), lambda: "rules",
                               what="query planning")
    assert got == "rules" and c.stats.fallbacks == 1
    assert "query planning" in caplog.text


def test_call_or_fallback_with_working_llm(client: OpenAICompatClient,
                                           llm_server: ScriptedLLMServer) -> None:
    llm_server.reply('{"name": "Ada", "age": 36}')
    got = call_or_fallback(client, lambda llm: llm.complete_json(HELLO, Person).name,
                           lambda: "rules", what="extraction")
    assert got == "Ada" and client.stats.fallbacks == 0


def test_call_or_fallback_does_not_hide_bugs(client: OpenAICompatClient) -> None:
    def buggy(llm: LLMClient) -> str:
        raise KeyError("bug")

    with pytest.raises(KeyError):
        call_or_fallback(client, buggy, lambda: "rules", what="x")


def test_from_settings() -> None:
    assert from_settings(LLMSettings()) is None
    with pytest.raises(ConfigError, match="base_url"):
        from_settings(LLMSettings(provider="openai", model="m"))
    with pytest.raises(ConfigError, match="model"):
        from_settings(LLMSettings(provider="openai", base_url="http://h/v1"))
    client = from_settings(LLMSettings(provider="openai", base_url="http://h:1/v1/",
                                       model="qwen2.5", api_key=KEY, max_retries=4))
    assert client is not None
    with client:
        assert (client.base_url, client.model, client.max_retries) == (
            "http://h:1/v1", "qwen2.5", 4)


def test_error_tree() -> None:
    assert issubclass(LLMUnavailableError, LLMError)
    assert issubclass(LLMUnavailableError, BackendUnavailableError)
    for cls in (LLMResponseError, LLMSchemaError, JSONRepairError):
        assert issubclass(cls, LLMError) and issubclass(cls, HelloMemoryError)


# --- json_repair (pure functions) ------------------------------------------------------------
def test_remove_trailing_commas_keeps_strings() -> None:
    assert remove_trailing_commas('{"a": [1, 2,], "b": "x,}",}') == '{"a": [1, 2], "b": "x,}"}'


def test_extract_json_cases() -> None:
    assert extract_json('```\n[1, 2]\n```') == [1, 2]
    assert extract_json('prefix {"s": "brace } in \\"string\\"", "n": {"k": 1}} suffix') == {
        "s": 'brace } in "string"', "n": {"k": 1}}
    with pytest.raises(JSONRepairError):
        extract_json("no json here {unbalanced")


def test_candidates_skip_nested_values() -> None:
    assert list(iter_json_candidates('x {"a": [1]} y [2]')) == [{"a": [1]}, [2]]
