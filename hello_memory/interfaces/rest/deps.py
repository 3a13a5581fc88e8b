"""What a route needs from the app it runs in: the namespace and admin checks (FastAPI
dependencies over the app's :class:`~hello_memory.interfaces.rest.security.Access`) and
the app's managers.

:mod:`hello_memory.interfaces.rest.routes`, :mod:`hello_memory.interfaces.rest.documents`
and the dashboard (:mod:`hello_memory.interfaces.ui`) read them here, not from
:mod:`hello_memory.interfaces.rest.app`, which imports them back to build the app
(docs/ARCHITECTURE.md "Known debts": no import cycle).
:mod:`hello_memory.interfaces.rest.app` re-exports every name.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

from fastapi import Depends, FastAPI, Query, Request
from fastapi.security import APIKeyHeader, HTTPAuthorizationCredentials, HTTPBearer

from hello_memory.errors import HelloMemoryError
from hello_memory.interfaces.rest.security import Access

if TYPE_CHECKING:
    from hello_memory.interfaces.aio import AsyncMemoryManager
    from hello_memory.memory.manager import MemoryManager

__all__ = ["Admin", "Namespace", "admin_dependency", "async_manager_of", "manager_of",
           "manager_of_app", "namespace_dependency"]

_bearer = HTTPBearer(auto_error=False, description="API key as a bearer token")
_header_key = APIKeyHeader(name="X-API-Key", auto_error=False, description="API key")


async def namespace_dependency(
    request: Request,
    namespace: Annotated[str | None, Query(min_length=1, max_length=512, description=(
        "The namespace to act in; the API key must grant it. It may be left out when "
        "the key grants exactly one namespace (an exact name, no pattern): that one is "
        "used. Any other key must name one (400 namespace-required)."))] = None,
    bearer: Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)] = None,
    header_key: Annotated[str | None, Depends(_header_key)] = None,
) -> str:
    key = bearer.credentials if bearer is not None else header_key
    host = request.client.host if request.client else None
    access: Access = request.app.state.access
    return access.check(namespace, key, host)


Namespace = Annotated[str, Depends(namespace_dependency)]


async def admin_dependency(
    request: Request,
    bearer: Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)] = None,
    header_key: Annotated[str | None, Depends(_header_key)] = None,
) -> None:
    key = bearer.credentials if bearer is not None else header_key
    host = request.client.host if request.client else None
    access: Access = request.app.state.access
    access.check_admin(key, host)


Admin = Depends(admin_dependency)


def manager_of(request: Request) -> MemoryManager:
    manager: MemoryManager | None = request.app.state.manager
    if manager is None:  # only when the lifespan did not run (a misconfigured host)
        raise HelloMemoryError("the memory manager is not open")
    return manager


def async_manager_of(request: Request) -> AsyncMemoryManager:
    """The app's async facade: the catalogue's routes run every operation in its pool."""
    amm: AsyncMemoryManager | None = request.app.state.amm
    if amm is None:
        raise HelloMemoryError("the memory manager is not open")
    return amm


def manager_of_app(app: FastAPI) -> MemoryManager:
    manager: MemoryManager | None = app.state.manager
    if manager is None:
        raise HelloMemoryError("the memory manager is not open")
    return manager
