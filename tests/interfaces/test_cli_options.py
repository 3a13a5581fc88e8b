"""The CLI's options come from the operation catalogue (issue 31): for every command
that runs a catalogue operation, each option that is a request field has that field's
default, bounds, choices and description (hello_memory/interfaces/catalogue/cli_options.py), so a
bound changed in the catalogue changes the CLI too."""

# no ``from __future__ import annotations``: the probe commands below are typed with
# local names, which typer reads from the evaluated annotations
import enum
from typing import Any, Literal, get_args, get_origin

import pytest
import typer
from pydantic import BaseModel, Field
from typer.testing import CliRunner

from hello_memory.interfaces.catalogue import Request
from hello_memory.interfaces.catalogue.admin import JobRequest
from hello_memory.interfaces.catalogue.cli_options import bounds, choices, field_type, option
from hello_memory.interfaces.catalogue.documents import AskRequest
from hello_memory.interfaces.catalogue.memory_requests import (
    AddMemory,
    ConsolidateRequest,
    ForgetRequest,
    SearchRequest,
)
from hello_memory.interfaces.cli import app

# command path -> (its request model, {CLI parameter: request field}, the CLI's own
# parameters, which no request field has: where to run, output form, repetition)
COMMANDS: dict[tuple[str, ...], tuple[type[BaseModel], dict[str, str], set[str]]] = {
    ("add",): (AddMemory, {"memory_type": "memory_type", "importance": "importance",
                           "session_id": "session_id", "user_id": "user_id",
                           "metadata": "metadata"}, {"content", "namespace", "as_json"}),
    ("search",): (SearchRequest, {"top_k": "top_k", "memory_type": "memory_types",
                                  "recipe": "recipe", "as_of": "as_of"},
                  {"query", "namespace", "explain", "as_json"}),
    ("forget",): (ForgetRequest, {"strategy": "strategy", "threshold": "threshold",
                                  "max_age_days": "max_age_days", "max_items": "max_items",
                                  "dry_run": "dry_run", "hard": "hard"},
                  {"ids", "namespace", "as_json"}),
    ("consolidate",): (ConsolidateRequest, {"from_type": "from_type", "to_type": "to_type",
                                            "threshold": "importance_threshold",
                                            "dry_run": "dry_run"}, {"namespace", "as_json"}),
    ("jobs", "consolidate"): (JobRequest, {"dry_run": "dry_run", "threshold": "threshold",
                                           "min_access": "min_access"}, set()),
    ("jobs", "forget"): (JobRequest, {"dry_run": "dry_run", "strategy": "strategy",
                                      "threshold": "threshold", "max_age_days": "max_age_days",
                                      "max_items": "max_items", "hard": "hard"}, set()),
    ("jobs", "reindex"): (JobRequest, {"dry_run": "dry_run"}, set()),
    ("jobs", "reconcile"): (JobRequest, {"dry_run": "dry_run"}, {"retry", "drop_failed"}),
    ("ask",): (AskRequest, {"top_k": "top_k", "max_context_tokens": "max_context_tokens",
                            "llm_calls": "llm_calls"}, {"question", "namespace", "config",
                                                        "as_json"}),
}
# the options every namespace job has (interfaces/cli/jobs.py): where and how often it runs
JOB_OPTIONS = {"namespace", "all_namespaces", "every", "max_runs", "as_json"}


def _command(path: tuple[str, ...]) -> Any:
    command: Any = typer.main.get_command(app)
    for name in path:
        command = command.commands[name]
    return command


def _choices(annotation: Any) -> list[str] | None:
    """The values an option's type allows: a Literal's, or a str enum's (a list)."""
    stack = [annotation]
    while stack:
        tp = stack.pop()
        if get_origin(tp) is Literal:
            return [str(v) for v in get_args(tp)]
        if isinstance(tp, type) and issubclass(tp, enum.Enum):
            return [str(m.value) for m in tp]
        stack.extend(get_args(tp))
    return None


@pytest.mark.parametrize("path", list(COMMANDS), ids=" ".join)
def test_each_catalogue_backed_option_is_its_request_field(path: tuple[str, ...]) -> None:
    model, fields, own = COMMANDS[path]
    params = {p.name: p for p in _command(path).params}
    expected_own = own | (JOB_OPTIONS if path[0] == "jobs" else set())
    assert set(params) == set(fields) | expected_own, path  # no option left by hand
    for name, field_name in fields.items():
        param, info = params[name], model.model_fields[field_name]
        where = f"{' '.join(path)} --{name}: {model.__name__}.{field_name}"
        assert param.param_type_name == "option", where
        assert param.default == info.default, where
        limits = bounds(info)
        assert (param.min, param.max) == (limits.get("min"), limits.get("max")), where
        allowed = choices(model, field_name)
        got = _choices(param.type_descriptor.annotation)
        assert got == (list(allowed) if allowed is not None else None), where
        if info.description is None:
            assert param.help is None, where
        else:
            assert param.help is not None and param.help.startswith(info.description), where


class Probe(Request):
    size: int = Field(3, ge=1, le=10, description="How many.")
    mode: Literal["fast", "slow"] | None = Field(None, description="Which way.")
    kinds: list[Literal["a", "b"]] | None = None


def _probe_app(model: type[BaseModel]) -> typer.Typer:
    probe = typer.Typer()
    Mode = field_type(model, "mode")  # noqa: N806
    Kinds = field_type(model, "kinds")  # noqa: N806

    @probe.command()
    def run(size: int = option(model, "size"),
            mode: Mode = option(model, "mode"),
            kinds: Kinds = option(model, "kinds", "--kind")) -> None:
        print(size, mode, [k.value for k in kinds or ()])

    return probe


def test_a_bound_changed_in_the_request_model_changes_the_cli() -> None:
    runner = CliRunner()
    ok = runner.invoke(_probe_app(Probe), ["--size", "10", "--mode", "slow", "--kind", "b"])
    assert ok.exit_code == 0 and ok.stdout.split() == ["10", "slow", "['b']"], ok.output
    assert runner.invoke(_probe_app(Probe), []).stdout.split()[0] == "3"  # the default
    assert runner.invoke(_probe_app(Probe), ["--mode", "medium"]).exit_code == 2

    class Wider(Probe):
        size: int = Field(4, ge=1, le=20, description="How many, now more.")
        mode: Literal["fast", "slow", "medium"] | None = Field(None, description="Which way.")

    wider = _probe_app(Wider)
    assert runner.invoke(wider, ["--size", "20", "--mode", "medium"]).exit_code == 0
    assert runner.invoke(wider, []).stdout.split()[0] == "4"
    assert "How many, now more." in runner.invoke(wider, ["--help"]).stdout
    assert runner.invoke(_probe_app(Probe), ["--size", "20"]).exit_code == 2


def test_an_open_bound_has_no_cli_form() -> None:
    class Open(Request):
        share: float = Field(0.5, gt=0, le=1)

    with pytest.raises(ValueError, match="open bound"):
        option(Open, "share")
