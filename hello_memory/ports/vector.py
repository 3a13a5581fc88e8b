"""The vector index port: named dense (and sparse BM25) vectors per collection,
scoped by namespace, with a typed filter of our own.

Backends: ``QdrantEdgeVectorStore`` (embedded, the default), ``QdrantVectorStore``
(qdrant-client: its local mode for ``:memory:`` and a Qdrant server) and
``PgVectorStore`` (PostgreSQL) in ``stores/vector/``.

Every backend takes a :class:`VectorFilter` or None as ``filters`` and refuses a plain
mapping with a ``TypeError``; :meth:`VectorFilter.of` converts the mapping form the
callers built before (docs/ARCHITECTURE.md, "Ports"). The value types the port speaks
(:class:`CollectionSpec`, :data:`PayloadIndex`, :class:`Between`) are defined here;
``stores/vector/base.py`` re-exports them under their old names (``Range`` is
:class:`Between`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any, Literal, Protocol, runtime_checkable

from hello_memory.errors import InvalidInputError
from hello_memory.types import SparseVector, VectorHit, VectorPoint

Scalar = str | int | float | bool
Bound = float | datetime | None

# What a payload field may be indexed as (where the backend has payload indexes).
PayloadIndex = Literal["keyword", "integer", "float", "datetime", "bool", "text"]


@dataclass(frozen=True)
class CollectionSpec:
    """Shape of a collection: dense vector sizes by name, sparse vector names, and the
    payload fields to index (where the server supports payload indexes)."""

    name: str
    dense: Mapping[str, int]
    sparse: tuple[str, ...] = ()
    payload_indexes: Mapping[str, PayloadIndex] | None = None
    distance: Literal["cosine", "dot", "euclid"] = "cosine"


@dataclass(frozen=True)
class Between:
    """A payload value within ``[gte, lte]`` (both inclusive; None leaves that side
    open). Bounds are numbers or datetimes, never one of each. The one range type of
    the vector filter (``stores.vector.base.Range`` is this class)."""

    gte: Bound = None
    lte: Bound = None

    def __post_init__(self) -> None:
        if self.gte is None and self.lte is None:
            raise InvalidInputError("Between: give gte, lte or both")
        for bound in (self.gte, self.lte):
            if isinstance(bound, bool) or (
                    bound is not None and not isinstance(bound, (int, float, datetime))):
                raise InvalidInputError(f"Between: a bound is a number or a datetime, "
                                        f"not {type(bound).__name__}")
            if isinstance(bound, float) and not math.isfinite(bound):
                raise InvalidInputError("Between: a bound must be finite")
        if self.gte is not None and self.lte is not None:
            if isinstance(self.gte, datetime) != isinstance(self.lte, datetime):
                raise InvalidInputError("Between: both bounds are numbers or both datetimes")
            if _comparable(self.gte) > _comparable(self.lte):  # type: ignore[operator]
                raise InvalidInputError("Between: gte is above lte")


def _comparable(bound: Bound) -> Bound:
    """A naive datetime bound read as UTC (as the backends store and compare it), so a
    naive and an aware bound compare."""
    if isinstance(bound, datetime) and bound.tzinfo is None:
        return bound.replace(tzinfo=timezone.utc)
    return bound


# scalar: exact match (a float: the one value as a range, as Qdrant matches only str,
# int and bool exactly); tuple: any of the values (all str or all int); Between: a range
Condition = Scalar | tuple[Scalar, ...] | Between


def _check_condition(name: str, condition: object) -> None:
    """Refuse a condition no backend can answer the same way (InvalidInputError)."""
    if isinstance(condition, Between):
        return
    if isinstance(condition, tuple):
        if not condition:
            raise InvalidInputError(f"VectorFilter: {name} matches none of no values")
        if not (all(isinstance(v, str) for v in condition)
                or all(isinstance(v, int) and not isinstance(v, bool) for v in condition)):
            raise InvalidInputError(f"VectorFilter: {name}: any-of values must be all str "
                                    f"or all int")
        return
    if isinstance(condition, float) and not math.isfinite(condition):
        raise InvalidInputError(f"VectorFilter: {name}: a value must be finite")
    if not isinstance(condition, (str, int, float, bool)):
        raise InvalidInputError(f"VectorFilter: unsupported condition for {name}: "
                                f"{condition!r}")


def _legacy_condition(condition: Any) -> Any:
    """One value of the mapping form as a :data:`Condition`: a list or set is any of
    its values, a datetime the one instant; the rest is checked as given."""
    if isinstance(condition, (list, set, frozenset)):
        return tuple(condition)
    if isinstance(condition, datetime):
        return Between(gte=condition, lte=condition)
    return condition


@dataclass(frozen=True)
class VectorFilter:
    """Payload conditions that must all hold (AND), by payload field name.

    The namespace is never a condition here: every port call takes it separately and
    the backend always filters on it (decision 6). A dotted name reaches into a nested
    payload object (``"meta.src"``). A value matches a payload field equal to it or an
    array field holding it; an int matches an int (not ``1.0``, not ``true``), a bool a
    bool (not ``1``); a range skips values of another kind (a string that is no date).
    Every backend returns the same points for the same filter
    (``tests/contract/test_vector_filter.py``).
    """

    conditions: Mapping[str, Condition] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not isinstance(self.conditions, Mapping):
            raise TypeError(f"VectorFilter: conditions are a mapping of field name to "
                            f"condition, not {type(self.conditions).__name__}")
        for name, condition in self.conditions.items():
            if not isinstance(name, str) or not name or name == "namespace":
                raise InvalidInputError(f"VectorFilter: bad field name {name!r}")
            _check_condition(name, condition)
        object.__setattr__(self, "conditions", dict(self.conditions))

    @classmethod
    def where(cls, **conditions: Condition) -> VectorFilter:
        """``VectorFilter.where(memory_type=("episodic", "semantic"), status="active")``."""
        return cls(conditions)

    @classmethod
    def of(cls, filters: Mapping[str, Any] | VectorFilter) -> VectorFilter:
        """The filter a mapping of the form the backends took before (field -> scalar,
        list / tuple / set of values, ``Range``, datetime) stands for; a
        :class:`VectorFilter` is returned as it is. A bad condition raises
        InvalidInputError, a value that is no mapping TypeError."""
        if isinstance(filters, VectorFilter):
            return filters
        if not isinstance(filters, Mapping):
            raise TypeError(f"VectorFilter.of takes a mapping, not {type(filters).__name__}")
        return cls({name: _legacy_condition(value) for name, value in filters.items()})

    def and_(self, other: VectorFilter) -> VectorFilter:
        """Both filters' conditions; a field both name must carry the same condition."""
        merged = dict(self.conditions)
        for name, condition in other.conditions.items():
            if name in merged and merged[name] != condition:
                raise InvalidInputError(f"VectorFilter: two conditions on {name}")
            merged[name] = condition
        return VectorFilter(merged)

    def __bool__(self) -> bool:
        return bool(self.conditions)


@runtime_checkable
class VectorIndexPort(Protocol):
    """What the index engine, the views, perceptual memory, dedup, supersede, the
    lifecycle, maintenance, the RAG chunk index and the facade call on a vector store.
    Every read and delete takes the namespace; an empty one is an error."""

    def open(self) -> None:
        """Connect or open the files; idempotent."""
        ...

    def close(self) -> None:
        """Release the backend; the store may be opened again."""
        ...

    def ensure_collection(self, spec: CollectionSpec) -> None:
        """Create the collection if missing; a different vector size is an error."""
        ...

    def upsert(self, collection: str, points: Sequence[VectorPoint]) -> None:
        """Insert or replace points by id; checks every point before writing any."""
        ...

    def nearest(self, collection: str, query: Sequence[float] | SparseVector, *,
                namespace: str, using: str = "dense", limit: int = 10,
                filters: VectorFilter | None = None, score_threshold: float | None = None,
                ids: Sequence[str] | None = None, with_payload: bool = True
                ) -> list[VectorHit]:
        """The nearest points of ``namespace`` by the named vector, best first."""
        ...

    def nearest_batch(self, collection: str, queries: Sequence[Sequence[float]], *,
                      namespace: str, using: str = "dense", limit: int = 10,
                      filters: VectorFilter | None = None,
                      score_threshold: float | None = None) -> list[list[VectorHit]]:
        """:meth:`nearest` for many dense queries at once, payloads empty."""
        ...

    def retrieve(self, collection: str, ids: Sequence[str], *, namespace: str
                 ) -> list[VectorHit]:
        """Points by id (score 0.0), only those of ``namespace``."""
        ...

    def delete(self, collection: str, ids: Sequence[str], *, namespace: str) -> None:
        """Delete points by id; unknown ids are a no-op."""
        ...

    def set_payload(self, collection: str, ids: Sequence[str], payload: Mapping[str, Any], *,
                    namespace: str) -> None:
        """Merge ``payload`` into existing points (vectors untouched)."""
        ...

    def count(self, collection: str, *, namespace: str,
              filters: VectorFilter | None = None) -> int:
        """How many points of ``namespace`` match ``filters``."""
        ...

    def ids(self, collection: str, *, namespace: str) -> set[str]:
        """Every point id of ``namespace`` (reconcile)."""
        ...

    def clear(self, collection: str, *, namespace: str) -> None:
        """Delete every point of ``namespace`` in the collection, nothing else."""
        ...

    def collections(self) -> list[str]:
        """Every collection's name, sorted."""
        ...

    def optimize(self, collection: str) -> bool:
        """Build the search index where the backend builds it only on request; True if
        anything changed."""
        ...
