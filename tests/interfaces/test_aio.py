"""AsyncMemoryManager (issue 17, part 5): the manager's own methods run in a bounded
pool; results, errors and context variables come through unchanged."""

from __future__ import annotations

import asyncio
import contextvars
import inspect
import threading
from pathlib import Path
from typing import Any

import pytest

from hello_memory.errors import InvalidInputError, NotFoundError
from hello_memory.interfaces.aio import AsyncMemoryManager
from hello_memory.interfaces.tools.memory_tool import MemoryTool
from hello_memory.memory.manager import MemoryManager

REQUEST = contextvars.ContextVar("request", default="none")

pytestmark = pytest.mark.slow  # the real embedding model


def test_same_results_as_the_sync_manager(manager: MemoryManager) -> None:
    async def main() -> None:
        async with AsyncMemoryManager(manager, max_workers=2) as amm:
            item = await amm.add("Alice prefers green tea.", "semantic", namespace="alice")
            await amm.add_many([{"content": "Alice moved to Berlin.", "namespace": "alice"}])
            hits = await amm.search("what does Alice drink?", namespace="alice", touch=False)
            sync = manager.search("what does Alice drink?", namespace="alice", touch=False)
            assert [h.id for h in hits] == [h.id for h in sync]
            assert (await amm.get(item.id, namespace="alice")).content == item.content
            assert (await amm.stats("alice"))["total"] == 2
            assert await amm.forget_ids([item.id], namespace="alice") == [item.id]
            assert await amm.restore([item.id], namespace="alice") == 1
            with pytest.raises(NotFoundError):        # the typed error, unchanged
                await amm.get("no-such-id", namespace="alice")
            with pytest.raises(InvalidInputError):
                await amm.add("", namespace="alice")
            tool = MemoryTool(manager, namespace="alice")
            block = await amm.context_for_query(tool, "Where does Alice live?")
            assert "Berlin" in block
        # the facade wrapped a manager it did not open: that manager stays usable
        assert manager.stats("alice")["total"] == 2

    asyncio.run(main())


def test_methods_are_the_managers_own() -> None:
    # one implementation: each async method wraps MemoryManager's, same signature
    for name in ("add", "add_many", "search", "get", "update", "remove", "forget",
                 "consolidate", "export_jsonl", "import_jsonl", "clear"):
        wrapper = getattr(AsyncMemoryManager, name)
        assert wrapper.method is getattr(MemoryManager, name)
        assert wrapper.__doc__ == getattr(MemoryManager, name).__doc__


def test_pool_is_bounded_and_carries_context(manager: MemoryManager) -> None:
    running, peak, lock = 0, 0, threading.Lock()
    release = threading.Event()

    def blocking(n: int) -> tuple[int, str, str]:
        nonlocal running, peak
        with lock:
            running += 1
            peak = max(peak, running)
            if running == 2:
                release.set()
        release.wait(timeout=30)
        with lock:
            running -= 1
        return n, REQUEST.get(), threading.current_thread().name

    async def main() -> list[tuple[int, str, str]]:
        amm = AsyncMemoryManager(manager, max_workers=2)
        REQUEST.set("req-7")
        try:
            return list(await asyncio.gather(*(amm.run(blocking, n) for n in range(6))))
        finally:
            await amm.close()

    results = asyncio.run(main())
    assert [r[0] for r in results] == list(range(6))
    assert peak == 2                                  # never more than max_workers at once
    assert {r[1] for r in results} == {"req-7"}       # the caller's context variables
    assert all(r[2].startswith("hello-memory") for r in results)


def test_open_owns_and_closes(tmp_path: Path, embedder: Any) -> None:
    async def main() -> None:
        amm = await AsyncMemoryManager.open(data_dir=tmp_path / "d", embedder=embedder)
        await amm.add("owned", namespace="n")
        await amm.close()
        await amm.close()                             # twice: a no-op
        with pytest.raises(RuntimeError, match="closed"):
            await amm.stats("n")
        # the stores were closed: another manager can open the directory
        again = await AsyncMemoryManager.open(data_dir=tmp_path / "d", embedder=embedder)
        assert (await again.stats("n"))["total"] == 1
        await again.close()

    asyncio.run(main())
    assert inspect.iscoroutinefunction(AsyncMemoryManager.open)
    with pytest.raises(InvalidInputError):
        AsyncMemoryManager(None, max_workers=0)  # type: ignore[arg-type]
