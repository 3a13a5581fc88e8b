"""The search views, registered by name: what every part that names a view reads.

A *view* ranks a namespace's memories for one question in its own way (dense
similarity, BM25, constraints, the entity graph; docs/RETRIEVAL.md). The hybrid search
runs the views a recipe names (all registered ones by default), fuses their rankings
and shows each view's rank in ``explain``. The recipes, the retriever's check of
``retrieval.view_weights``, the REST and MCP request schema (through the recipes) and
the fusion's shared-rank rule all read this registry, so a new view is one class plus
one line (issue 31)::

    from hello_memory.retrieval.registry import register_view

    class Newest:
        name = "newest"            # the name recipes, settings and explain use
        weight = 0.5               # its fusion weight unless retrieval.view_weights names it
        needs_vectors = False      # True: it reads req.vectors (the question's embeddings)
        shared_ranks = True        # equal scores share a rank in the fusion

        def rank(self, stores, req):
            items = stores.records.memories.list_items(req.namespace, limit=req.limit,
                                                       order="-event_time")
            return [(item.id, 1.0 / (1 + i)) for i, item in enumerate(items)]

    register_view(Newest())

The four built-in views are registered on first use, and so are working and perceptual
memory's views (retrieval/memory_views.py). A view may say which memory types it serves
(``memory_types``, default: the episodic and semantic memories of the text collection;
a search restricted to other types does not run it) and, for a view that is not chosen
by name but runs beside others, which views it runs with (``runs_with``); see
docs/RETRIEVAL.md, "Adding a view".
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from hello_memory.errors import InvalidInputError
from hello_memory.text.links import STORED_TYPES
from hello_memory.types import MemoryType

if TYPE_CHECKING:
    from hello_memory.retrieval.fusion import ViewResult
    from hello_memory.retrieval.views import ViewRequest
    from hello_memory.stores.bundle import Stores

__all__ = ["BUILT_IN_VIEWS", "MEMORY_VIEWS", "STORED_TYPES", "FunctionView", "View",
           "register_view", "registered_views", "runs_with", "served_types",
           "unregister_view", "view_named", "view_names"]

# The views every install has, in the order they run: chosen by name (recipes, views=)...
BUILT_IN_VIEWS = ("semantic", "lexical", "symbolic", "graph")
# ... and working and perceptual memory's, which run beside them (memory_views.py).
MEMORY_VIEWS = ("working", "perceptual")
# The name the retriever gives its own re-reading of Chinese and mixed text
# (_hybrid_language.py): a registered view cannot take it.
RESERVED = ("multilingual",)
_NAME = re.compile(r"^[a-z][a-z0-9_-]{0,31}$")


@runtime_checkable
class View(Protocol):
    """One ranking of a namespace's memories for a question (module docstring)."""

    @property
    def name(self) -> str:
        """The name recipes, settings and ``explain`` use."""
        ...

    @property
    def weight(self) -> float:
        """Its fusion weight unless ``retrieval.view_weights`` names it."""
        ...

    @property
    def needs_vectors(self) -> bool:
        """Whether it reads ``req.vectors`` (it is skipped where there are none)."""
        ...

    @property
    def shared_ranks(self) -> bool:
        """Whether equal scores share a rank in the fusion."""
        ...

    def rank(self, stores: Stores, req: ViewRequest) -> ViewResult:
        """(memory id, the view's own score) pairs, best first, at most ``req.limit``."""
        ...


def served_types(view: View) -> tuple[MemoryType, ...]:
    """The memory types ``view`` serves: its optional ``memory_types``, else the text
    collection's (:data:`STORED_TYPES`)."""
    return tuple(getattr(view, "memory_types", None) or STORED_TYPES)


def runs_with(view: View) -> tuple[str, ...] | None:
    """None for a view chosen by name; else the views it runs beside (its optional
    ``runs_with``): it runs after them, when one of them is chosen, and brings the
    records of what it finds (memory_views.RankedItems)."""
    names = getattr(view, "runs_with", None)
    return None if names is None else tuple(names)


@dataclass(frozen=True)
class FunctionView:
    """A view made of a function ``(stores, request) -> ranked list``."""

    name: str
    run: Callable[[Stores, ViewRequest], ViewResult]
    weight: float = 1.0
    needs_vectors: bool = False
    shared_ranks: bool = True
    memory_types: tuple[MemoryType, ...] = STORED_TYPES
    runs_with: tuple[str, ...] | None = None

    def rank(self, stores: Stores, req: ViewRequest) -> ViewResult:
        return self.run(stores, req)


_lock = threading.Lock()
_views: dict[str, View] = {}


def _built_ins() -> None:
    # Imported here, once: the views module needs the stores and text layers, which
    # this registry's readers (recipes, settings checks) do not.
    from hello_memory.retrieval import memory_views as mv
    from hello_memory.retrieval import views as v

    for view in (FunctionView("semantic", v.semantic_view, needs_vectors=True),
                 FunctionView("lexical", v.lexical_view),
                 # a count of constraints met, ordered within a count: kept as ranked
                 FunctionView("symbolic", v.symbolic_constraint_view, weight=0.5,
                              shared_ranks=False),
                 FunctionView("graph", v.graph_view, weight=0.5),
                 mv.WorkingView(),
                 mv.PerceptualView()):
        _views.setdefault(view.name, view)


def _ready() -> dict[str, View]:
    if not _views or BUILT_IN_VIEWS[0] not in _views:
        with _lock:
            if BUILT_IN_VIEWS[0] not in _views:
                built = dict(_views)
                _views.clear()
                _built_ins()
                _views.update(built)  # a view registered first keeps its place after
    return _views


def register_view(view: View, *, replace: bool = False) -> View:
    """Add ``view`` under ``view.name`` (lower case letters, digits, ``-`` and ``_``; not
    a name the retriever reserves). A name already registered is refused unless
    ``replace`` (which also lets a built-in view be wrapped, e.g. to trace it)."""
    if not isinstance(view, View):
        raise InvalidInputError(f"{view!r} is not a view: it needs name, weight, "
                                "needs_vectors, shared_ranks and rank(stores, request)")
    name = view.name
    if not isinstance(name, str) or not _NAME.match(name) or name in RESERVED:
        raise InvalidInputError(f"view name {name!r} must match {_NAME.pattern} and not be "
                                f"one of {list(RESERVED)}")
    if (isinstance(view.weight, bool) or not isinstance(view.weight, (int, float))
            or not 0 <= view.weight <= 100):
        raise InvalidInputError(f"view {name!r}: weight must be a number in [0, 100]")
    views = _ready()
    with _lock:
        if name in views and not replace:
            raise InvalidInputError(f"a view named {name!r} is already registered")
        views[name] = view
    return view


def unregister_view(name: str) -> None:
    """Remove a view that :func:`register_view` added (a built-in one stays)."""
    if name in BUILT_IN_VIEWS or name in MEMORY_VIEWS:
        raise InvalidInputError(f"{name!r} is a built-in view and cannot be removed")
    views = _ready()
    with _lock:
        if views.pop(name, None) is None:
            raise InvalidInputError(f"no view named {name!r} is registered")


def registered_views() -> dict[str, View]:
    """Name -> view, built-in ones first, then in the order they were registered."""
    views = _ready()
    with _lock:
        return dict(views)


def view_names() -> tuple[str, ...]:
    """The names of the registered views a recipe or a search may choose
    (:func:`registered_views`' order; not those that run beside others)."""
    return tuple(n for n, v in registered_views().items() if runs_with(v) is None)


def view_named(name: str) -> View:
    view = registered_views().get(name)
    if view is None:
        raise InvalidInputError(f"unknown view {name!r}; use one of {list(view_names())}")
    return view
