"""``hello_memory.Client`` / ``AsyncClient`` (issue 29, item 3).

One scenario runs against a ``MemoryManager`` and against a ``Client`` on a live
``hello-memory serve`` (a subprocess, tests/reliability/live_server.py); the results,
errors included, compare equal. Plus: the client's signatures are MemoryManager's, every
shared operation is a catalogue operation, reads are retried on a dropped connection
and writes are not (a real socket that accepts and hangs up), a timeout is a typed
error, the async client gives the same answers, and the CLI's server path is the client.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import re
import socket
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from hello_memory import AsyncClient, Client
from hello_memory.errors import (
    BackendUnavailableError,
    ConfigError,
    EmptyContentError,
    HelloMemoryError,
    InvalidInputError,
    NotFoundError,
)
from hello_memory.interfaces import client as client_module
from hello_memory.interfaces.catalogue import default_catalogue
from hello_memory.memory.manager import MemoryManager
from hello_memory.memory.reports import ConsolidateReport, ForgetReport
from hello_memory.types import MemoryItem

from .conftest import make_settings

pytestmark = pytest.mark.slow

RULES = {"HELLO_MEMORY__SEMANTIC__EXTRACTOR": "rules"}
NS = "alice"
# The client method -> the catalogue operation it runs.
OPERATION_OF = {"add": "add", "add_many": "add_batch", "search": "search", "get": "get",
                "update": "update", "remove": "remove", "stats": "stats", "clear": "clear",
                "export_jsonl": "export", "forget": "forget", "forget_ids": "forget",
                "restore": "restore", "consolidate": "consolidate"}


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    from reliability.live_server import KEY, LiveServer

    server = LiveServer(tmp_path_factory.mktemp("client") / "data", env=RULES)
    server.start()
    server.key = KEY  # type: ignore[attr-defined]
    yield server
    server.stop()


def _item(item: MemoryItem, label: Callable[[str | None], str | None]) -> tuple[Any, ...]:
    return (label(item.id), item.content, item.memory_type.value, round(item.importance, 4),
            item.metadata, item.namespace, item.user_id, item.session_id, item.status.value,
            label(item.duplicate_of))


def scenario(mem: Any, export_to: Path) -> dict[str, Any]:
    """The same calls, with MemoryManager's names and arguments, on ``mem``; ids are
    replaced by the order they first appeared in (each side makes its own)."""
    ids: dict[str, str] = {}

    def label(mid: str | None) -> str | None:
        return None if mid is None else ids.setdefault(mid, f"m{len(ids)}")

    def error(call: Callable[[], Any]) -> str:
        try:
            call()
        except HelloMemoryError as exc:
            return type(exc).__name__
        return "no error"

    out: dict[str, Any] = {}
    a = mem.add("Alice moved from Paris to Berlin in May 2024 for a job at Acme Robotics.",
                "episodic", 0.8, {"topic": "move"}, namespace=NS, session_id="s1")
    b = mem.add("Alice prefers green tea over coffee and never drinks anything after 6 pm.",
                "semantic", namespace=NS)
    again = mem.add("Alice prefers green tea over coffee and never drinks anything after "
                    "6 pm.", "semantic", namespace=NS)
    many = mem.add_many([
        {"content": "Bob is allergic to peanuts; check restaurant menus for him.",
         "memory_type": "semantic", "namespace": NS, "importance": 0.9},
        {"content": "The team agreed to ship version 2.0 of the mobile app on June 30.",
         "namespace": NS, "user_id": "alice"},
        {"content": "Carol keeps the spare office keys.", "namespace": "bob"}])
    out["added"] = [_item(i, label) for i in (a, b, again, *many)]
    hits = mem.search("what does Alice drink?", namespace=NS, top_k=3)
    out["hits"] = [(label(h.id), h.item.content, h.memory_type.value) for h in hits]
    out["scores"] = [h.score for h in hits]
    out["views"] = [sorted(h.views) for h in hits]
    typed = mem.search("peanuts", ["semantic"], 5, namespace=NS)
    out["typed_hits"] = [label(h.id) for h in typed]
    out["get"] = _item(mem.get(b.id, namespace=NS), label)
    out["update"] = _item(mem.update(a.id, namespace=NS, importance=0.9,
                                     metadata={"topic": "relocation"}), label)
    out["forget_ids"] = [label(i) for i in mem.forget_ids([many[1].id], namespace=NS)]
    out["after_forget"] = _item(mem.get(many[1].id, namespace=NS), label)
    out["restore"] = mem.restore([many[1].id], namespace=NS)
    out["stats"] = mem.stats(NS)
    report = mem.forget("importance", namespace=NS, threshold=0.1, dry_run=True)
    assert isinstance(report, ForgetReport)
    out["forget"] = (report.strategy, report.namespace, report.count, report.dry_run)
    merged = mem.consolidate(namespace=NS, dry_run=True)
    assert isinstance(merged, ConsolidateReport)
    out["consolidate"] = (merged.from_type, merged.to_type, merged.count, merged.dry_run)
    out["remove"] = (mem.remove(many[0].id, namespace=NS), mem.remove(many[0].id, namespace=NS))
    out["errors"] = [
        error(lambda: mem.get("no-such-id", namespace=NS)),
        error(lambda: mem.add("   ", namespace=NS)),
        error(lambda: mem.update(a.id, namespace=NS)),
        error(lambda: mem.clear(NS)),
        error(lambda: mem.search("x", top_k=0, namespace=NS)),
        error(lambda: mem.forget_ids(["no-such-id"], namespace=NS)),
        error(lambda: mem.add("x", "nonsense", namespace=NS)),
    ]
    out["export"] = mem.export_jsonl(export_to, namespace=NS)
    out["exported"] = sorted(json.loads(line)["content"]
                             for line in export_to.read_text().splitlines())
    cleared = mem.clear("bob", confirm=True)
    out["clear"] = (cleared["records"], cleared["working"])
    out["bob_after"] = mem.stats("bob")["total"]
    return out


def test_client_runs_the_scenario_as_the_manager_does(live: Any, tmp_path: Path,
                                                      embedder: Any) -> None:
    settings = make_settings(tmp_path / "local", semantic={"extractor": "rules"})
    with MemoryManager.open(settings, embedder=embedder) as mm:
        local = scenario(mm, tmp_path / "local.jsonl")
    with Client(live.base, api_key=live.key) as client:
        remote = scenario(client, tmp_path / "remote.jsonl")
    local_scores, remote_scores = local.pop("scores"), remote.pop("scores")
    assert remote == local
    assert remote_scores == pytest.approx(local_scores, abs=0.01)
    assert local["errors"] == ["NotFoundError", "EmptyContentError", "InvalidInputError",
                               "InvalidInputError", "InvalidInputError", "NotFoundError",
                               "InvalidInputError"]
    assert local["hits"][0][1].startswith("Alice prefers green tea")
    assert local["added"][2][-1] == "m1"  # the repeated add names the stored memory
    assert local["remove"] == (True, False) and local["export"] == 3


def test_signatures_are_the_managers_and_operations_the_catalogues() -> None:
    catalogue = default_catalogue()
    for name in client_module.SHARED_OPERATIONS:
        plan = getattr(client_module, f"_{name}")
        ours = list(inspect.signature(plan).parameters.values())[1:]
        theirs = list(inspect.signature(getattr(MemoryManager, name)).parameters.values())[1:]
        assert [(p.name, p.kind, p.default) for p in ours] == \
            [(p.name, p.kind, p.default) for p in theirs], name
        returns = inspect.signature(getattr(MemoryManager, name)).return_annotation
        assert inspect.signature(plan).return_annotation == f"Plan[{returns}]", name
        op = catalogue[OPERATION_OF[name]]
        assert op.rest is not None and op.area == "memories", name
        for client in (Client("http://127.0.0.1:9"), AsyncClient("http://127.0.0.1:9")):
            method = getattr(client, name)
            assert list(inspect.signature(method).parameters) == [p.name for p in theirs]
    # every memory operation with a JSON route is a method, or reachable by invoke
    for op in catalogue.on("rest", "memories"):
        assert op.name in OPERATION_OF.values() or op.name in ("summary", "context"), op.name


def test_errors_are_typed_from_the_problem_document(live: Any) -> None:
    with Client(live.base, api_key=live.key) as client:
        with pytest.raises(EmptyContentError) as empty:
            client.add("\t", namespace=NS)
        with pytest.raises(NotFoundError) as missing:
            client.get("nope", namespace=NS)
    assert missing.value.status == 404  # type: ignore[attr-defined]
    assert missing.value.problem["error"] == "NotFoundError"  # type: ignore[attr-defined]
    assert "nope" in str(missing.value)
    assert "content" in str(empty.value).lower() or "empty" in str(empty.value).lower()
    with Client(live.base, api_key="wrong-key") as stranger, \
            pytest.raises(ConfigError, match="401"):
        stranger.stats(NS)
    with Client(live.base) as keyless, pytest.raises(ConfigError, match="api_key"):
        keyless.stats(NS)
    # checked against the request model before anything is sent
    with Client("http://127.0.0.1:9") as nowhere, pytest.raises(InvalidInputError,
                                                                 match="top_k"):
        nowhere.search("x", top_k=1000)
    with Client("http://127.0.0.1:9") as nowhere, pytest.raises(InvalidInputError):
        nowhere.search("x", views=["bm25"])


def test_async_client_answers_as_the_sync_one(live: Any, tmp_path: Path) -> None:
    async def run() -> dict[str, Any]:
        async with AsyncClient(live.base, api_key=live.key) as mem:
            item = await mem.add("Dana plays the cello every Sunday morning.", "episodic",
                                 namespace="dana")
            hits = await mem.search("what instrument does Dana play?", namespace="dana")
            got = await mem.get(item.id, namespace="dana")
            with pytest.raises(NotFoundError):
                await mem.get("nope", namespace="dana")
            count = await mem.export_jsonl(tmp_path / "dana.jsonl", namespace="dana")
            removed = await mem.remove(item.id, namespace="dana")
            gone = await mem.remove(item.id, namespace="dana")
            stats = await mem.stats("dana")
            return {"item": item, "hits": hits, "got": got, "count": count,
                    "removed": (removed, gone), "total": stats["total"]}

    out = asyncio.run(run())
    assert out["hits"][0].id == out["item"].id == out["got"].id
    assert out["got"].content == "Dana plays the cello every Sunday morning."
    assert out["count"] == 1 and out["removed"] == (True, False) and out["total"] == 0


class HangUp:
    """A real TCP server that accepts each connection and closes it without an answer
    (``hang`` True: keeps it open and silent); counts connections."""

    def __init__(self, hang: bool = False) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.hang = hang
        self.connections = 0
        self.held: list[socket.socket] = []
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}"
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.connections += 1
            if self.hang:
                self.held.append(conn)
            else:
                conn.recv(65536)
                conn.close()

    def close(self) -> None:
        self.sock.close()
        for conn in self.held:
            conn.close()


def test_reads_are_retried_on_a_dropped_connection_writes_are_not() -> None:
    server = HangUp()
    try:
        with Client(server.url, retries=2) as client:
            client.backoff = 0.01
            with pytest.raises(BackendUnavailableError, match="cannot reach"):
                client.get("some-id", namespace=NS)
            reads = server.connections
            with pytest.raises(BackendUnavailableError):
                client.add("a fact", namespace=NS)
            writes = server.connections - reads
            with Client(server.url, retries=0) as once, pytest.raises(
                    BackendUnavailableError):
                once.search("x", namespace=NS)
            single = server.connections - reads - writes
    finally:
        server.close()
    assert (reads, writes, single) == (3, 1, 1)


def test_timeout_is_a_typed_error_and_not_retried() -> None:
    server = HangUp(hang=True)
    try:
        with Client(server.url, timeout=0.5) as client, pytest.raises(
                BackendUnavailableError, match="did not answer in time"):
            client.search("x", namespace=NS)
    finally:
        server.close()
    assert server.connections == 1
    with pytest.raises(InvalidInputError, match="timeout"):
        Client("http://127.0.0.1:9", timeout=0)
    with pytest.raises(ConfigError, match="plain text"):
        Client("http://203.0.113.5:8765", api_key="k")


def test_the_cli_server_path_is_the_client() -> None:
    from hello_memory.interfaces.remote import ServerClient

    with ServerClient("http://127.0.0.1:9") as backend:
        assert isinstance(backend.client, Client)
    source = Path(client_module.__file__).parents[1].joinpath("remote.py").read_text()
    assert "httpx" not in source  # one HTTP engine: hello_memory/interfaces/client/


CLIENT_DOC = Path(__file__).resolve().parents[2] / "docs" / "CLIENT.md"
DOC_BLOCKS = re.findall(r"```python\n(.*?)```", CLIENT_DOC.read_text(encoding="utf-8"),
                        re.S)


def test_client_doc_examples_run_against_a_live_server(live: Any, tmp_path: Path) -> None:
    import os
    import subprocess
    import sys

    assert len(DOC_BLOCKS) >= 4
    env = {**os.environ, "HELLO_MEMORY_URL": live.base, "HELLO_MEMORY_API_KEY": live.key,
           "HELLO_MEMORY_CONFIG": "", **RULES}
    for n, block in enumerate(DOC_BLOCKS):
        out = subprocess.run([sys.executable, "-c", block], cwd=tmp_path, env=env,
                             capture_output=True, text=True, timeout=300)
        assert out.returncode == 0, f"block {n}: {out.stderr[-2000:]}"
        assert out.stdout.strip(), f"block {n} prints nothing"
    assert "404 no memory" in subprocess.run(
        [sys.executable, "-c", DOC_BLOCKS[-1]], cwd=tmp_path, env=env, capture_output=True,
        text=True, timeout=300).stdout
