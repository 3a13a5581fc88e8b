"""The memory inspector at ``/ui`` and the API docs at ``/docs``, both from local files.

:func:`mount` adds them to the REST app (``create_app`` calls it): ``/ui`` is a small
server-rendered dashboard (Jinja2) over the same :class:`MemoryManager` the REST API
serves, behind the same API keys and namespace grants; ``/docs`` is Swagger UI from
``static/vendor/`` (bundled from the npm registry by ``make ui-assets``), so neither
needs a network connection at run time.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

# the local files' folders (ui/paths.py, which ui.web and ui.docs read), re-exported
from hello_memory.interfaces.ui.paths import STATIC_DIR, VENDOR_DIR

if TYPE_CHECKING:
    from fastapi import FastAPI

__all__ = ["STATIC_DIR", "VENDOR_DIR", "mount"]


def mount(app: FastAPI) -> None:
    """Add ``/docs`` (offline Swagger UI) and the ``/ui`` dashboard to ``app``."""
    from hello_memory.interfaces.ui.docs import add_docs

    add_docs(app)
    try:
        import jinja2  # noqa: F401
    except ImportError:  # pragma: no cover - the server extra brings it
        from hello_memory.interfaces.ui.docs import missing_ui

        app.mount("/ui", missing_ui("the dashboard needs jinja2: pip install "
                                    "'hello-memory[server]'"), name="ui")
        return
    from hello_memory.interfaces.ui.web import build_ui

    app.mount("/ui", build_ui(app), name="ui")
