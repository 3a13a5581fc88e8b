"""The CLI and server papercuts of issue 29 (item 5), one test each: a broken pipe is a
quiet exit, flags show as flags in --help, ``serve`` without a key says so loudly, an
empty answer names the namespace that differs only in case, long memories are cut in
tables (with the command that shows them whole), ``import-chats`` shows its progress
and suggests the right ``--format``, opening a directory a server holds names that
server and how to use it, every problem has ``error``, a body sent without a JSON
content type gets a hint, a missing adapter extra is named, and the agent loop example
runs without an LLM."""

from __future__ import annotations

import json
import os
import select
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from asgi_client import AsgiApi  # tests/ is on sys.path

from hello_memory.config import load_settings
from hello_memory.errors import BackendUnavailableError
from hello_memory.memory.manager import MemoryManager

from .conftest import make_manager, make_settings

pytestmark = pytest.mark.slow

EXE = shutil.which("hello-memory", path=str(Path(sys.executable).parent))
ROOT = Path(__file__).resolve().parents[2]


def env(**extra: str) -> dict[str, str]:
    base = {k: v for k, v in os.environ.items() if not k.startswith("HELLO_MEMORY")}
    return {**base, "HELLO_MEMORY_CONFIG": "", "HELLO_MEMORY__SEMANTIC__EXTRACTOR": "rules",
            "COLUMNS": "120", **extra}


def cli(*args: str, **extra: str) -> subprocess.CompletedProcess[str]:
    assert EXE is not None
    return subprocess.run([EXE, *args], env=env(**extra), capture_output=True, text=True,
                          timeout=300)


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory, embedder: Any
          ) -> Iterator[tuple[Path, str]]:
    """A data directory with namespace ``sam`` (lower case): a short memory and one of
    84,000 characters."""
    data = tmp_path_factory.mktemp("papercuts") / "data"
    settings = load_settings(environ={}, data_dir=data, semantic={"extractor": "rules"})
    with MemoryManager.open(settings, embedder=embedder) as mm:
        mm.add("Sam keeps the spare keys to the office.", "semantic", namespace="sam")
        long = mm.add("Sam's travel diary. " + "We walked along the river. " * 3100,
                      "episodic", namespace="sam")
    yield data, long.id


def test_a_closed_pipe_ends_quietly(store: tuple[Path, str]) -> None:
    """``hello-memory stats --json | head -0``: no "unexpected BrokenPipeError"."""
    assert EXE is not None
    read, write = os.pipe()
    os.close(read)  # the reader is gone before anything is written
    try:
        out = subprocess.run([EXE, "--data-dir", str(store[0]), "stats", "-n", "sam",
                              "--json"], env=env(), stdout=write, stderr=subprocess.PIPE,
                             text=True, timeout=120)
    finally:
        os.close(write)
    assert out.returncode == 0, out.stderr
    assert "BrokenPipe" not in out.stderr and "error" not in out.stderr.lower(), out.stderr


def test_help_shows_flags_as_flags() -> None:
    root = cli("--help")
    stats = cli("stats", "--help")
    for out in (root, stats):
        assert out.returncode == 0, out.stderr
        assert "<bool>" not in out.stdout, out.stdout
    assert "--json" in stats.stdout and "--verbose" in root.stdout
    assert "<path>" in root.stdout  # options that take a value still name it


def test_serve_without_a_key_warns_loudly(tmp_path: Path) -> None:
    from hello_memory.interfaces.cli import keyless_warning

    assert EXE is not None
    proc = subprocess.Popen([EXE, "--data-dir", str(tmp_path / "d"), "serve", "--port", "0"],
                            env=env(), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            text=True)
    seen = ""
    try:
        deadline = time.monotonic() + 120
        while "WARNING" not in seen and time.monotonic() < deadline:
            ready, _, _ = select.select([proc.stderr], [], [], 1.0)
            if ready:
                line = proc.stderr.readline()  # type: ignore[union-attr]
                if not line:
                    break
                seen += line
    finally:
        proc.terminate()
        proc.wait(timeout=60)
    assert "WARNING" in seen and "401" in seen and "HELLO_MEMORY__API__API_KEYS" in seen, seen
    keyed = load_settings(environ={}, data_dir=tmp_path, api={"api_keys": {"k": ["*"]}})
    open_here = load_settings(environ={}, data_dir=tmp_path, api={"auth_disabled": True})
    assert keyless_warning(keyed, "0.0.0.0") is None
    assert keyless_warning(open_here, "127.0.0.1") is None
    assert keyless_warning(load_settings(environ={}, data_dir=tmp_path), "127.0.0.1")


def test_an_empty_answer_names_the_namespace_that_differs_in_case(
        store: tuple[Path, str]) -> None:
    data, long_id = store
    stats = cli("--data-dir", str(data), "stats", "-n", "Sam")
    found = cli("--data-dir", str(data), "search", "spare keys", "-n", "Sam")
    for out in (stats, found):
        assert out.returncode == 0, out.stderr
        assert "'sam'" in out.stderr and "-n sam" in out.stderr, out.stderr
    right = cli("--data-dir", str(data), "search", "spare keys", "-n", "sam")
    assert right.returncode == 0 and "hint" not in right.stderr, right.stderr


def test_long_memories_are_cut_in_tables_with_the_id_to_show_them(
        store: tuple[Path, str]) -> None:
    data, long_id = store
    out = cli("--data-dir", str(data), "search", "travel diary river walk", "-n", "sam")
    assert out.returncode == 0, out.stderr
    assert f"hello-memory show {long_id}" in out.stdout.replace("\n", "").replace("│", "") \
        or f"show {long_id}" in "".join(out.stdout.split())
    assert "more characters" in out.stdout
    assert len(out.stdout) < 6000, len(out.stdout)  # not the 84,000 characters
    whole = cli("--data-dir", str(data), "show", long_id, "-n", "sam", "--json")
    assert len(json.loads(whole.stdout)["content"]) > 80_000


def test_import_chats_shows_progress_and_suggests_the_format(tmp_path: Path) -> None:
    claude = tmp_path / "claude.json"
    claude.write_text(json.dumps([{"uuid": "c1", "name": "Trip", "chat_messages": [
        {"uuid": "m1", "sender": "human", "text": "I land in Lisbon at 9.",
         "created_at": "2025-03-01T10:00:00Z"}]}]))
    wrong = cli("--data-dir", str(tmp_path / "d"), "import-chats", str(claude),
                "--format", "chatgpt")
    assert wrong.returncode == 2, wrong.stderr
    assert "--format claude" in wrong.stderr, wrong.stderr
    chats = tmp_path / "chats.jsonl"
    chats.write_text("".join(json.dumps({
        "role": "user" if n % 2 == 0 else "assistant", "content": f"Turn number {n} about tea.",
        "timestamp": f"2025-03-01T10:{n:02d}:00Z", "conversation_id": "c1"}) + "\n"
        for n in range(20)))
    out = cli("--data-dir", str(tmp_path / "d"), "import-chats", str(chats))
    assert out.returncode == 0, out.stderr
    assert "20 turns checked" in out.stderr, out.stderr
    assert "import-chats: 0/20 turns" in out.stderr, out.stderr  # progress, not a terminal
    assert "imported 20" in out.stdout


def test_opening_a_directory_a_server_holds_names_the_server(tmp_path: Path,
                                                              embedder: Any) -> None:
    from reliability.live_server import LiveServer

    server = LiveServer(tmp_path / "held", env={"HELLO_MEMORY__SEMANTIC__EXTRACTOR": "rules"})
    server.start()
    try:
        with pytest.raises(BackendUnavailableError) as held:
            MemoryManager.open(load_settings(environ={}, data_dir=server.data_dir),
                               embedder=embedder)
    finally:
        server.stop()
    message = str(held.value)
    assert f"hello-memory serve at {server.base}" in message, message
    assert "hello_memory.Client(" in message and f"--server {server.base}" in message
    assert "url=" not in message


@pytest.fixture
def api(tmp_path: Path, embedder: Any) -> Iterator[AsgiApi]:
    from hello_memory.interfaces.rest import create_app

    settings = make_settings(tmp_path / "data", api={"api_keys": {"k": ["*"]},
                                                     "max_request_bytes": 2048})
    mm = make_manager(settings, embedder)
    yield AsgiApi(create_app(settings, manager=mm), headers={"Authorization": "Bearer k"})
    mm.close()


def test_every_problem_has_the_error_field(api: AsgiApi) -> None:
    """Middleware problems too: the body limit's 413, the Host check's 403 (done in
    5e39af9), the key check's 401, routing's 404 and 405, validation's 422."""
    answers = {
        413: api("POST", "/v1/memories", params={"namespace": "a"},
                 json={"content": "x" * 5000}),
        403: api("GET", "/v1/stats", params={"namespace": "a"},
                 headers={"Host": "evil.example"}),
        401: api("GET", "/v1/stats", params={"namespace": "a"},
                 headers={"Authorization": "Bearer wrong"}),
        404: api("GET", "/v1/nowhere"),
        405: api("GET", "/v1/search", params={"namespace": "a"}),
        422: api("POST", "/v1/memories", params={"namespace": "a"}, json={}),
    }
    for status, r in answers.items():
        assert r.status_code == status, (status, r.text)
        assert r.headers["content-type"].startswith("application/problem+json"), status
        assert r.json()["error"], (status, r.text)


def test_a_body_without_a_json_content_type_gets_a_hint(api: AsgiApi) -> None:
    """``curl -d '{"content": ...}'`` sends application/x-www-form-urlencoded."""
    body = json.dumps({"content": "Alice likes tea."})
    form = api("POST", "/v1/memories", params={"namespace": "a"}, content=body,
               headers={"Content-Type": "application/x-www-form-urlencoded"})
    bare = api("POST", "/v1/memories", params={"namespace": "a"}, content=body)
    for r in (form, bare):
        assert r.status_code == 422, r.text
        problem = r.json()
        assert "Content-Type: application/json" in problem["detail"], problem
        assert problem["hint"] and problem["error"] == "RequestValidationError"
    assert "x-www-form-urlencoded" in form.json()["hint"]
    ok = api("POST", "/v1/memories", params={"namespace": "a"}, content=body,
             headers={"Content-Type": "application/json"})
    assert ok.status_code == 201, ok.text
    missing = api("POST", "/v1/memories", params={"namespace": "a"}, json={})
    assert "hint" not in missing.json()  # a JSON body with a field missing: no hint


ADAPTERS = {"langchain": ("langchain", "langchain_core"),
            "langgraph": ("langgraph", "langgraph"),
            "llamaindex": ("llamaindex", "llama_index"),
            "openai_agents": ("openai-agents", "agents"),
            "pydantic_ai": ("pydantic-ai", "pydantic_ai"),
            "google_adk": ("google-adk", "google.adk"),
            "autogen": ("autogen", "autogen_core")}


@pytest.mark.parametrize("adapter", sorted(ADAPTERS))
def test_a_missing_adapter_extra_is_named(adapter: str) -> None:
    extra, module = ADAPTERS[adapter]
    # the framework made unimportable, installed or not
    code = (f"import sys; sys.modules[{module!r}] = None\n"
            f"import hello_memory.interfaces.adapters.{adapter}")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120)
    assert out.returncode != 0
    last = out.stderr.strip().splitlines()[-1]
    assert last.startswith("ModuleNotFoundError"), out.stderr
    assert f"pip install 'hello-memory[{extra}]'" in last, last


def test_the_agent_loop_example_runs_without_an_llm(tmp_path: Path) -> None:
    example = ROOT / "examples" / "agent_loop.py"
    extra = {k: v for k, v in env(HM_AGENT_DATA=str(tmp_path / "agent")).items()
             if not k.startswith("LLM_")}

    def run(text: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, str(example), text], env=extra,
                              capture_output=True, text=True, timeout=300, cwd=tmp_path)

    first = run("Hi! I'm allergic to peanuts.")
    assert first.returncode == 0, first.stderr[-2000:]
    assert "LLM_BASE_URL" in first.stderr  # says which variables name a real model
    assert first.stdout.strip() == "Noted."
    second = run("Which snacks are safe for my allergy?")
    assert second.returncode == 0, second.stderr[-2000:]
    assert "allergic to peanuts" in second.stdout, second.stdout
