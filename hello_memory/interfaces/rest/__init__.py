"""The REST API (FastAPI; ``server`` extra). Build it with :func:`create_app`."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

__all__ = ["create_app"]


def create_app(*args: Any, **kwargs: Any) -> Any:
    """See :func:`hello_memory.interfaces.rest.app.create_app` (imported on first call, so that
    importing this package does not need FastAPI)."""
    try:
        from hello_memory.interfaces.rest.app import create_app as build
    except ImportError as exc:
        from hello_memory.errors import ConfigError

        raise ConfigError("the REST API needs the server extra: "
                          f"pip install 'hello-memory[server]' ({exc})") from exc
    return build(*args, **kwargs)


if TYPE_CHECKING:
    from hello_memory.interfaces.rest.app import create_app  # noqa: F811
