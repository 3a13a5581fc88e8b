"""Imported by the document-parse worker's fork server (:mod:`hello_memory.rag.safe_parse`)
before it forks any worker: MarkItDown and its converters are loaded once there, so a
worker starts in milliseconds instead of seconds."""

from __future__ import annotations

import contextlib

from hello_memory.rag import formats

with contextlib.suppress(Exception):  # without the rag extra the worker reports it
    formats._converter("preload", ".pdf")
