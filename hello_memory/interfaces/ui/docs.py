"""``/docs``: Swagger UI from the package's own static files (``make ui-assets``)."""

from __future__ import annotations

from html import escape

from fastapi import FastAPI, Request
from fastapi.responses import HTMLResponse, PlainTextResponse, Response
from starlette.types import ASGIApp, Receive, Scope, Send

from hello_memory.interfaces.ui.paths import VENDOR_DIR

__all__ = ["DOCS_CSP", "add_docs", "missing_ui"]

# Swagger UI renders with React (styles set through the DOM, which CSP allows); its
# bundle and initializer are files of ours, so no inline script is needed.
DOCS_CSP = ("default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; "
            "img-src 'self' data:; connect-src 'self'; font-src 'self' data:; "
            "frame-ancestors 'none'; base-uri 'none'")
MISSING = ("the Swagger UI files are not in this installation "
           "(hello_memory/interfaces/ui/static/vendor/swagger-ui): run `make ui-assets`")


def add_docs(app: FastAPI) -> None:
    """Serve Swagger UI for ``app.openapi_url`` at ``/docs`` (the app is built with
    ``docs_url=None``, so this is the only docs page)."""

    @app.get("/docs", include_in_schema=False)
    def docs(request: Request) -> Response:
        if not (VENDOR_DIR / "swagger-ui" / "swagger-ui-bundle.js").is_file():
            return PlainTextResponse(MISSING, status_code=503)
        root = request.scope.get("root_path", "").rstrip("/")
        spec = escape(root + (app.openapi_url or "/openapi.json"), quote=True)
        static = escape(root + "/ui/static", quote=True)
        page = f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{escape(app.title)} - API docs</title>
<link rel="icon" type="image/png" href="{static}/vendor/swagger-ui/favicon-32x32.png">
<link rel="stylesheet" href="{static}/vendor/swagger-ui/swagger-ui.css">
</head><body>
<div id="swagger-ui" data-spec-url="{spec}"></div>
<script src="{static}/vendor/swagger-ui/swagger-ui-bundle.js"></script>
<script src="{static}/docs.js"></script>
</body></html>"""
        return HTMLResponse(page, headers={"Content-Security-Policy": DOCS_CSP,
                                           "Referrer-Policy": "no-referrer"})


def missing_ui(reason: str) -> ASGIApp:
    """A stand-in for ``/ui`` when the dashboard cannot run: 501 with the reason."""

    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        await PlainTextResponse(reason, status_code=501)(scope, receive, send)

    return app
