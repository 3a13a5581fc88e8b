"""OpenTelemetry spans for memory operations (docs/OBSERVABILITY.md).

Off unless ``observability.tracing`` is true *and* the OpenTelemetry API is importable;
when off, every helper here is a no-op that costs one attribute read. hello-memory only
emits spans through the global tracer provider: the application installs the SDK and an
exporter (``opentelemetry-sdk``), as OpenTelemetry intends for libraries.

Span names and attributes follow the GenAI semantic conventions where they apply
(``gen_ai.operation.name`` = ``create_memory`` / ``search_memory`` / ``update_memory`` /
``delete_memory``, ``gen_ai.memory.record.count``, ``gen_ai.retrieval.top_k``); the rest
are ``hello_memory.*``. A namespace is never recorded, only a short hash of it
(``hello_memory.namespace.hash``), and query text only with ``capture_query``.
"""

from __future__ import annotations

import functools
import hashlib
import logging
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any, TypeVar

from hello_memory._version import __version__

__all__ = ["STORE_ID", "configure", "enabled", "namespace_hash", "span", "traced",
           "wrap_for_thread"]

STORE_ID = "hello-memory"
_SCOPE = "hello_memory"

T = TypeVar("T")
F = TypeVar("F", bound=Callable[..., Any])


class _State:
    tracer: Any = None  # an opentelemetry Tracer while tracing is on
    capture_query = False


_state = _State()


def configure(*, tracing: bool, capture_query: bool = False,
              provider: Any = None) -> bool:
    """Turn spans on or off for this process; returns whether they are on (False when
    the OpenTelemetry API is not installed). ``provider`` is a tracer provider to use
    instead of the global one."""
    _state.capture_query = bool(capture_query)
    if not tracing:
        _state.tracer = None
        return False
    try:
        from opentelemetry import trace
    except ImportError:  # the API comes with the server extra; without it, no spans
        _state.tracer = None
        logging.getLogger(__name__).warning(
            "observability.tracing is on but the OpenTelemetry API is not installed: "
            "no spans (pip install 'hello-memory[observability]')")
        return False
    _state.tracer = (provider.get_tracer(_SCOPE, __version__) if provider is not None
                     else trace.get_tracer(_SCOPE, __version__))
    return True


def enabled() -> bool:
    return _state.tracer is not None


def capture_query() -> bool:
    return _state.tracer is not None and _state.capture_query


def namespace_hash(namespace: str) -> str:
    """A stable, short, non-reversible tag for a namespace (spans never carry names)."""
    return hashlib.sha256(namespace.encode("utf-8", "surrogatepass")).hexdigest()[:16]


class _Span:
    """What a ``with span(...)`` block gets: set attributes on the live span."""

    __slots__ = ("_span",)

    def __init__(self, otel_span: Any) -> None:
        self._span = otel_span

    def set(self, key: str, value: Any) -> None:
        if self._span is not None and value is not None:
            self._span.set_attribute(key, value)


_NOOP = _Span(None)


@contextmanager
def span(name: str, attributes: Mapping[str, Any] | None = None) -> Iterator[_Span]:
    """A span named ``name`` (a child of the current one); exceptions are recorded on
    it and re-raised."""
    tracer = _state.tracer
    if tracer is None:
        yield _NOOP
        return
    attrs = {k: v for k, v in (attributes or {}).items() if v is not None}
    with tracer.start_as_current_span(name, attributes=attrs) as live:
        yield _Span(live)


def wrap_for_thread(fn: Callable[[], T], name: str,
                    attributes: Mapping[str, Any] | None = None) -> Callable[[], T]:
    """``fn`` run later (in a pool thread) as a child span of the span current *now*:
    thread pools do not carry OpenTelemetry's context across by themselves."""
    if _state.tracer is None:
        return fn
    from opentelemetry import context as otel_context

    parent = otel_context.get_current()

    def run() -> T:
        token = otel_context.attach(parent)
        try:
            with span(name, attributes) as live:
                result = fn()
                if isinstance(result, list):
                    live.set("hello_memory.view.hits", len(result))
                return result
        finally:
            otel_context.detach(token)

    return run


def traced(operation: str, *, name: str | Callable[..., str] | None = None,
           count: Callable[[Any], int | None] | None = None,
           query_arg: int | None = None, top_k_arg: int | None = None
           ) -> Callable[[F], F]:
    """Decorate a facade method: one span per call, ``gen_ai.operation.name`` =
    ``operation``, the namespace hashed, ``gen_ai.memory.record.count`` from
    ``count(result)`` when given, and the query text (positional argument
    ``query_arg``) only when ``capture_query`` is on. ``name`` is the span's name, or a
    function of the call's arguments that returns it."""

    def deco(fn: F) -> F:
        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            if _state.tracer is None:
                return fn(*args, **kwargs)
            attrs: dict[str, Any] = {"gen_ai.operation.name": operation,
                                     "gen_ai.memory.store.id": STORE_ID}
            ns = kwargs.get("namespace")
            if isinstance(ns, str) and ns:
                attrs["hello_memory.namespace.hash"] = namespace_hash(ns)
            top_k = kwargs.get("top_k")
            if top_k is None and top_k_arg is not None and len(args) > top_k_arg:
                top_k = args[top_k_arg]
            if isinstance(top_k, int):
                attrs["gen_ai.retrieval.top_k"] = top_k
            if (_state.capture_query and query_arg is not None and len(args) > query_arg
                    and isinstance(args[query_arg], str)):
                attrs["gen_ai.memory.query.text"] = args[query_arg]
            span_name = (name(*args, **kwargs) if callable(name)
                         else name or f"{operation} {STORE_ID}")
            with span(span_name, attrs) as live:
                result = fn(*args, **kwargs)
                if count is not None:
                    live.set("gen_ai.memory.record.count", count(result))
                return result

        return wrapper  # type: ignore[return-value]

    return deco
