"""Validation and filter parsing shared by the vector backends, free of any client
import (so the embedded Edge path never loads qdrant-client's generated models).

A :class:`~hello_memory.ports.vector.VectorFilter` is parsed once
(:func:`filter_conditions`) into :class:`Cond` entries, which each backend maps onto
its own classes: the semantics (and the errors for bad filters) are the same
everywhere (``tests/contract/test_vector_filter.py``).
"""

from __future__ import annotations

import math
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import date, datetime, timezone
from typing import Any, get_args

import numpy as np

from hello_memory.errors import (
    DimensionMismatchError,
    InvalidInputError,
    NamespaceRequiredError,
    VectorError,
)
from hello_memory.ports.vector import (
    Between,
    CollectionSpec,
    Condition,
    PayloadIndex,
    VectorFilter,
)
from hello_memory.types import SparseVector

DISTANCES = ("cosine", "dot", "euclid")
INDEX_TYPES = get_args(PayloadIndex)
# Qdrant stores float32: a finite float64 beyond this would become inf on the server.
_F32_MAX = float(np.finfo(np.float32).max)


@dataclass(frozen=True)
class Cond:
    """One parsed filter entry: ``kind`` is "value" (exact), "any" (any of ``values``),
    "range" (numbers) or "datetime" (``gte``/``lte`` datetimes or dates)."""

    key: str
    kind: str
    values: tuple[Any, ...] = ()
    gte: Any = None
    lte: Any = None


@dataclass(frozen=True)
class _Shape:
    """What upsert/search validate against, cached per (user-facing) collection."""

    dense: Mapping[str, int]
    sparse: frozenset[str]
    distance: str

    def need(self, collection: str, name: str, sparse: bool = False) -> None:
        have = self.sparse if sparse else self.dense
        if name not in have:
            kind = "sparse" if sparse else "dense"
            raise VectorError(
                f"collection {collection!r} has no {kind} vector {name!r} (it has {sorted(have)})"
            )


def _require_ns(namespace: str) -> None:
    if not isinstance(namespace, str) or not namespace.strip():
        raise NamespaceRequiredError(f"a non-empty namespace is required, got {namespace!r}")


def _uuid(value: object) -> str:
    """Canonical UUID string (Qdrant returns ids in this form)."""
    if isinstance(value, (str, uuid.UUID)):
        try:
            return str(uuid.UUID(str(value)))
        except ValueError:
            pass
    raise InvalidInputError(f"point ids must be UUID strings, got {value!r}")


def _search_ids(namespace: str, limit: object, ids: Sequence[str] | None) -> list[str] | None:
    """The argument checks every backend's ``search`` makes: a namespace, a positive
    int ``limit``, and ``ids`` as canonical UUIDs without repeats (None: unrestricted;
    an empty list: nothing can match)."""
    _require_ns(namespace)
    if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
        raise InvalidInputError(f"limit must be a positive int, got {limit!r}")
    return None if ids is None else list(dict.fromkeys(_uuid(i) for i in ids))


def _check_spec(spec: CollectionSpec) -> None:
    if spec.distance not in DISTANCES:
        raise InvalidInputError(f"unknown distance {spec.distance!r}")
    for name, size in spec.dense.items():
        if isinstance(size, bool) or not isinstance(size, int) or size < 1:
            raise InvalidInputError(f"vector {name!r} size must be a positive int: {size!r}")
    if set(spec.dense) & set(spec.sparse):
        raise InvalidInputError("a vector name cannot be both dense and sparse")
    for field, kind in (spec.payload_indexes or {}).items():
        if kind not in INDEX_TYPES:
            raise InvalidInputError(f"unknown payload index type {kind!r} for {field!r}")


def _dense(values: Any, collection: str, name: str, size: int) -> list[float]:
    """Validated float list: a 1-D numeric vector of the collection's size, all finite."""
    arr = np.asarray(values)
    if arr.ndim != 1 or arr.dtype.kind not in "fiu":
        raise VectorError(f"vector {name!r} must be a 1-D sequence of numbers")
    if arr.shape[0] != size:
        raise DimensionMismatchError(collection, size, int(arr.shape[0]), name)
    arr = arr.astype(np.float64, copy=False)
    if not np.isfinite(arr).all() or (arr.size and np.abs(arr).max() > _F32_MAX):
        raise VectorError(f"vector {name!r} for {collection!r} has NaN or infinite values")
    return arr.tolist()  # float64 items come out as Python floats


def _sparse_parts(vec: SparseVector, collection: str, name: str) -> tuple[list[int], list[float]]:
    """Validated (indices, values) of a sparse vector: unique uint32 indices, finite values."""
    idx = [int(i) for i in vec.indices]
    vals = [float(v) for v in vec.values]
    if len(idx) != len(vals) or any(i < 0 or i >= 2**32 for i in idx) or len(set(idx)) != len(idx):
        raise VectorError(
            f"sparse vector {name!r} for {collection!r}: indices must be unique uint32"
        )
    if not all(math.isfinite(v) and abs(v) <= _F32_MAX for v in vals):
        raise VectorError(f"sparse vector {name!r} for {collection!r} has NaN or inf values")
    return idx, vals


def _jsonable(value: Any) -> Any:
    """Datetimes become ISO strings (aware, naive taken as UTC) so local and server mode
    store the same thing and DatetimeRange filters match in both."""
    if isinstance(value, datetime):
        return (value if value.tzinfo else value.replace(tzinfo=timezone.utc)).isoformat()
    if isinstance(value, date):
        return value.isoformat()
    if isinstance(value, Mapping):
        return {k: _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if isinstance(value, np.generic):  # numpy scalars are not JSON serialisable
        return value.item()
    return value


def filter_conditions(filters: VectorFilter | None) -> list[Cond]:
    """The parsed conditions of a backend call's ``filters``: None or a
    :class:`VectorFilter`. A mapping (the form the backends took before) is refused
    with a TypeError naming :meth:`VectorFilter.of`, which converts it."""
    if filters is None:
        return []
    if not isinstance(filters, VectorFilter):
        raise TypeError(f"filters must be a VectorFilter or None, not "
                        f"{type(filters).__name__} (VectorFilter.of(mapping) converts one)")
    return [parse_condition(key, cond) for key, cond in filters.conditions.items()]


def parse_condition(key: str, cond: Condition) -> Cond:
    """One condition of a VectorFilter (checked when it was built): a tuple is any of
    its values, a Between a range, a float the one value as a range (Qdrant matches
    only str, int and bool exactly), str / int / bool an exact match."""
    if isinstance(cond, Between):
        return _range(key, cond.gte, cond.lte)
    if isinstance(cond, tuple):
        return Cond(key, "any", cond)
    if isinstance(cond, float):
        return _range(key, cond, cond)
    if isinstance(cond, (str, int, bool)):
        return Cond(key, "value", (cond,))
    raise InvalidInputError(f"unsupported filter value for {key!r}: {cond!r}")


def _range(key: str, gte: Any, lte: Any) -> Cond:
    """A range of datetimes or of numbers (the bounds' kinds checked by Between)."""
    if isinstance(gte, datetime) or isinstance(lte, datetime):
        return Cond(key, "datetime", gte=gte, lte=lte)
    return Cond(key, "range", gte=gte, lte=lte)


def iso(value: Any) -> str | None:
    """A datetime bound as an ISO string (naive taken as UTC), as payloads store them."""
    if value is None:
        return None
    if isinstance(value, datetime):
        return (value if value.tzinfo else value.replace(tzinfo=timezone.utc)).isoformat()
    if isinstance(value, date):
        return datetime(value.year, value.month, value.day, tzinfo=timezone.utc).isoformat()
    return str(value)
