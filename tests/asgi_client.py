"""Synchronous calls into an ASGI app over httpx's ASGI transport (the real app, no
server process): shared by the REST tests of both venvs."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any

import httpx


class AsgiApi:
    """``api(method, url, **kwargs)`` -> ``httpx.Response``; ``headers`` go on every call."""

    def __init__(self, app: Any, headers: Mapping[str, str] | None = None) -> None:
        self.app = app
        self.headers = dict(headers or {})

    def __call__(self, method: str, url: str, **kwargs: Any) -> httpx.Response:
        headers = {**self.headers, **kwargs.pop("headers", {})}

        async def go() -> httpx.Response:
            transport = httpx.ASGITransport(app=self.app)
            async with httpx.AsyncClient(transport=transport, base_url="http://test") as c:
                return await c.request(method, url, headers=headers, **kwargs)
        return asyncio.run(go())
