"""The REST routes, generated from the operation catalogue
(:mod:`hello_memory.interfaces.catalogue`):
one ``async def`` route per operation, at the operation's method and path under
``/v1``, calling its handler through the app's
:class:`~hello_memory.interfaces.aio.AsyncMemoryManager` (its bounded pool: at most
``max_workers`` operations run at once; issue 17, ARCHITECTURE decision 8).

What REST adds, the same for every operation: the required ``namespace`` query
parameter checked against the API key (an admin operation needs an admin key), path
parameters from ``{field}`` in the path, the fields the operation sends in the query
string, the rest as the JSON body (which may be left out when every field has a
default), an upload's file(s) as multipart form data with the other fields as form
fields (:mod:`.documents` keeps them; a query file lives only for the call); a call
reaches the app's one RAG pipeline and job scheduler; errors are problem objects
(:mod:`.problems`); an operation with a response of its own (export's file, a
thumbnail's PNG) answers it.
"""

from __future__ import annotations

import inspect
import json
import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Annotated, Any, get_origin

from fastapi import APIRouter, Body, File, Form, Path, Query, Request, Response, UploadFile
from fastapi.encoders import jsonable_encoder
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ValidationError, create_model
from pydantic.fields import FieldInfo

from hello_memory.interfaces.catalogue import (
    Call,
    Catalogue,
    Operation,
    annotated,
    default_catalogue,
)

# The request models, under the names this module gave them before the catalogue.
from hello_memory.interfaces.catalogue.memories import (  # noqa: F401
    AddMany,
    AddMemory,
    ConsolidateRequest,
    ContextRequest,
    ForgetRequest,
    RecipeName,
    RestoreRequest,
    SearchRequest,
    UpdateMemory,
)
from hello_memory.interfaces.rest.deps import Admin, Namespace, async_manager_of
from hello_memory.interfaces.rest.documents import pipeline_of, save_upload, temporary_upload

__all__ = ["build_router", "router"]


def _field_param(name: str, info: FieldInfo, kind: Any) -> inspect.Parameter:
    """A path or query parameter carrying the request field's type, bounds, default
    and description."""
    where = kind(description=info.description) if kind in (Query, Form) else kind()
    default = inspect.Parameter.empty if info.is_required() else info.default
    return inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=default,
                             annotation=annotated(info, where))


def _body_model(op: Operation, outside: set[str]) -> type[BaseModel] | None:
    """The request model less the path and query fields (None when nothing is left)."""
    fields = {k: v for k, v in op.request.model_fields.items() if k not in outside}
    if not fields:
        return None
    if not outside:
        return op.request
    model: type[BaseModel] = create_model(  # type: ignore[call-overload]
        op.request.__name__ + "Body", __config__=op.request.model_config,
        **{k: (v.annotation, v) for k, v in fields.items()})
    return model


def _many(op: Operation) -> bool:
    """Whether the operation's upload field takes a list of files (else one)."""
    assert op.rest is not None and op.rest.upload is not None
    return get_origin(op.request.model_fields[op.rest.upload].annotation) is list


def _upload_param(op: Operation) -> inspect.Parameter:
    assert op.rest is not None and op.rest.upload is not None
    info = op.request.model_fields[op.rest.upload]
    kind: Any = list[UploadFile] if _many(op) else UploadFile
    return inspect.Parameter(op.rest.upload, inspect.Parameter.KEYWORD_ONLY,
                             annotation=Annotated[kind, File(description=info.description)])


@asynccontextmanager
async def _kept(op: Operation, request: Request, namespace: str, files: Any
                ) -> AsyncIterator[Any]:
    """The upload field's value: each file kept under ``<data_dir>/uploads/<area>/``
    (``{"path", "name"}``), or, without ``keep_upload``, in a temporary file removed
    when the call is done."""
    assert op.rest is not None
    amm = async_manager_of(request)
    uploads = files if isinstance(files, list) else [files]
    if op.rest.keep_upload:
        kept = [await amm.run(save_upload, request, namespace, f, op.area) for f in uploads]
        yield kept if _many(op) else kept[0]
        return
    temps: list[dict[str, str]] = []
    try:
        for f in uploads:
            temps.append(await amm.run(temporary_upload, f))
        yield temps if _many(op) else temps[0]
    finally:
        for t in temps:
            os.unlink(t["path"])


def _params(op: Operation) -> list[inspect.Parameter]:
    """The endpoint's parameters: REST's own, then the request's fields (path, upload
    and form, body, query)."""
    assert op.rest is not None
    rest = op.rest
    in_path = set(rest.path_fields)
    in_query = (set(op.request.model_fields) - in_path if not rest.has_body
                else set(rest.query))
    outside = in_path | in_query | ({rest.upload} if rest.upload else set())
    body_model = _body_model(op, outside) if rest.has_body else None
    params = [inspect.Parameter("request", inspect.Parameter.KEYWORD_ONLY,
                                annotation=Request)]
    if op.scope != "admin":
        params.append(inspect.Parameter("namespace", inspect.Parameter.KEYWORD_ONLY,
                                        annotation=Namespace))
    params += [_field_param(n, op.request.model_fields[n], Path) for n in rest.path_fields]
    if rest.upload is not None:  # the other fields are form fields of the upload
        params.append(_upload_param(op))
        params += [_field_param(n, f, Form) for n, f in op.request.model_fields.items()
                   if n not in outside]
    elif body_model is not None:
        # a body whose every field has a default may be left out (the defaults then)
        optional = not any(f.is_required() for f in body_model.model_fields.values())
        params.append(inspect.Parameter(
            "body", inspect.Parameter.KEYWORD_ONLY, annotation=Annotated[
                body_model | None if optional else body_model, Body()],
            default=None if optional else inspect.Parameter.empty))
    params += [_field_param(n, f, Query) for n, f in op.request.model_fields.items()
               if n in in_query]
    return params


def _parsed(op: Operation, arguments: dict[str, Any]) -> BaseModel:
    try:
        return op.request.model_validate(arguments)
    except ValidationError as exc:
        raise RequestValidationError(exc.errors()) from None


class _Answer(JSONResponse):
    """An operation's JSON answer, written in one pass: what the catalogue's serialisers
    give is already JSON (dicts, lists, strings, numbers), so only what ``json`` cannot
    write itself (a date, a set, an enum of no JSON type) goes through FastAPI's
    ``jsonable_encoder``, which used to walk every answer, value by value: about half a
    millisecond of a search's five hits (issue 27). The bytes are Starlette's
    ``JSONResponse``'s."""

    def render(self, content: Any) -> bytes:
        try:
            text = json.dumps(content, ensure_ascii=False, allow_nan=False, indent=None,
                              separators=(",", ":"), default=jsonable_encoder)
        except TypeError:  # a key json cannot write (an enum, a tuple): the long way
            text = json.dumps(jsonable_encoder(content), ensure_ascii=False,
                              allow_nan=False, indent=None, separators=(",", ":"))
        return text.encode("utf-8")


def _answer(op: Operation, call: Call, result: Any) -> Any:
    assert op.rest is not None
    rest = op.rest
    if rest.respond is not None:
        return rest.respond(result, call)
    status = rest.status_of(result) if rest.status_of is not None else rest.status
    if status == 204:
        return Response(status_code=204)
    return _Answer(op.serialise(result), status_code=status)


def _endpoint(op: Operation) -> Any:
    assert op.rest is not None
    rest = op.rest
    params = _params(op)

    async def endpoint(**kwargs: Any) -> Any:
        request: Request = kwargs.pop("request")
        namespace: str = kwargs.pop("namespace", "")
        body: BaseModel | None = kwargs.pop("body", None)
        amm = async_manager_of(request)
        call = Call(amm.manager, namespace, request.app.state.settings,
                    documents=pipeline_of(request.app), jobs=request.app.state.jobs,
                    writer=request.app.state.writer)
        arguments = {**(body.model_dump(exclude_unset=True) if body is not None else {}),
                     **kwargs}
        if rest.upload is None:
            req = _parsed(op, arguments)
            # an add waits for the server's writer without holding an operation slot
            run = amm.run_waiting if op.batched and call.writer is not None else amm.run
            return _answer(op, call, await run(op.invoke, call, req))  # in a pool
        if rest.before is not None:
            rest.before(call)
        async with _kept(op, request, namespace, arguments.pop(rest.upload)) as files:
            req = _parsed(op, {**arguments, rest.upload: files})
            return _answer(op, call, await amm.run(op.invoke, call, req))

    endpoint.__signature__ = inspect.Signature(params)  # type: ignore[attr-defined]
    endpoint.__name__ = op.name
    endpoint.__doc__ = op.doc
    return endpoint


def build_router(catalogue: Catalogue | None = None) -> APIRouter:
    """One route per operation of ``catalogue`` (default: every operation), tagged
    with its area (memories, media, documents, admin)."""
    router = APIRouter(prefix="/v1")
    for op in (catalogue or default_catalogue()).on("rest"):
        assert op.rest is not None
        extra: dict[str, Any] = {}
        if op.rest.respond is not None:
            extra = {"response_class": Response, "responses": {200: {
                "content": {op.rest.respond_type: {}}, "description": op.summary}}}
        router.add_api_route(
            op.rest.path, _endpoint(op), methods=[op.rest.method],
            status_code=op.rest.status, name=op.name, summary=op.summary,
            description=op.doc, dependencies=[Admin] if op.scope == "admin" else None,
            tags=[op.area], **extra)
    return router


router = build_router()
