"""CLI options read from the operation catalogue's request models: the CLI's
counterpart of :func:`hello_memory.interfaces.catalogue.annotated` (how REST declares a field).

A command that runs a catalogue operation (``add``, ``search``, ``forget``,
``consolidate``, ``jobs consolidate`` / ``jobs forget``, ``ask``) declares each option
that maps to a request field through :func:`option`: the default, the bounds (``ge`` /
``le`` as ``min`` / ``max``), the help (the field's description) and, through
:func:`field_type`, the choices of a ``Literal`` field all come from the request
model, so a bound changed in the catalogue changes the CLI too
(docs/ARCHITECTURE.md, Layers: interfaces; ``tests/interfaces/test_cli_options.py``
holds every such option to its field). What stays the CLI's own: flag names, and a
``note`` after the description where the CLI takes the value in another form
(``--metadata`` as JSON text, ``--as-of`` with UTC when no offset is given). This
module lives in the catalogue package, beside the request models it reads; the CLI's
modules (``cli/__init__.py``, ``cli/jobs.py``, ``cli/rag.py``) import it.

The request models load without the facade (``catalogue/memory_requests.py``,
``catalogue/admin.py``, ``catalogue/documents.py``), so building the options costs the
CLI's start nothing it did not already import.
"""

from __future__ import annotations

import enum
from types import UnionType
from typing import Any, Literal, Union, get_args, get_origin

import typer
from annotated_types import Ge, Gt, Le, Lt
from pydantic import BaseModel
from pydantic.fields import FieldInfo
from pydantic_core import PydanticUndefined

__all__ = ["bounds", "choices", "field_help", "field_type", "option", "request_field"]


def request_field(model: type[BaseModel], name: str) -> FieldInfo:
    """The field ``name`` of a catalogue request model (KeyError naming both if none)."""
    try:
        return model.model_fields[name]
    except KeyError:
        raise KeyError(f"{model.__name__} has no field {name!r}") from None


def field_type(model: type[BaseModel], name: str) -> Any:
    """The field's type as the CLI parameter's annotation: a ``Literal`` field's values
    are then the option's choices (typer reads them). A list of ``Literal`` values,
    which typer cannot take, becomes a list of a ``str`` enum of those values."""
    annotation = request_field(model, name).annotation
    if get_origin(annotation) in (Union, UnionType):
        inner = [a for a in get_args(annotation) if a is not type(None)]
        if len(inner) == 1 and get_origin(inner[0]) is list:
            return _choice_list(model, name, inner[0]) | None
    if get_origin(annotation) is list:
        return _choice_list(model, name, annotation)
    return annotation


def _choice_list(model: type[BaseModel], name: str, annotation: Any) -> Any:
    (element,) = get_args(annotation)
    if get_origin(element) is not Literal:
        return annotation
    values = {str(v): str(v) for v in get_args(element)}
    return list[enum.Enum(f"{model.__name__}_{name}", values, type=str)]  # type: ignore[misc]


def choices(model: type[BaseModel], name: str) -> tuple[str, ...] | None:
    """The values a ``Literal`` field (or a list of them) allows; None for any other."""
    stack = [request_field(model, name).annotation]
    while stack:
        tp = stack.pop()
        if get_origin(tp) is Literal:
            return tuple(str(v) for v in get_args(tp))
        stack.extend(get_args(tp))
    return None


def bounds(info: FieldInfo) -> dict[str, Any]:
    """``min`` / ``max`` for typer from the field's ``ge`` / ``le``. An open bound
    (``gt`` / ``lt``) has no typer form: ValueError, so the CLI cannot drift from it."""
    out: dict[str, Any] = {}
    for meta in info.metadata:
        if isinstance(meta, Ge):
            out["min"] = meta.ge
        elif isinstance(meta, Le):
            out["max"] = meta.le
        elif isinstance(meta, (Gt, Lt)):
            raise ValueError(f"an open bound ({meta!r}) has no CLI form; use ge / le")
    return out


def field_help(info: FieldInfo, note: str = "") -> str | None:
    """The field's description, then ``note`` (the CLI's own form of the value)."""
    parts = [p for p in (info.description, note) if p]
    return " ".join(parts) or None


def option(model: type[BaseModel], name: str, *param_decls: str, note: str = "") -> Any:
    """A ``typer.Option`` for the request field ``name`` of ``model``: its default,
    bounds and description (module doc); ``param_decls`` are the CLI's flag names
    (default: typer's, from the parameter name)."""
    info = request_field(model, name)
    if info.default is PydanticUndefined:
        raise ValueError(f"{model.__name__}.{name} is required: an argument, not an option")
    return typer.Option(info.default, *param_decls, help=field_help(info, note),
                        **bounds(info))
