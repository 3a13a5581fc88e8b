"""The thin facade (issue 31): ``MemoryManager`` keeps under 300 lines, and what it
builds comes from services/build.py, whose options are the constructor's keywords."""

from __future__ import annotations

import inspect
from pathlib import Path
from typing import Any

import pytest

from hello_memory.memory import manager
from hello_memory.services import build

MAX_FACADE_LINES = 300


def test_the_facade_stays_under_300_lines() -> None:
    lines = Path(inspect.getfile(manager)).read_text(encoding="utf-8").splitlines()
    assert len(lines) < MAX_FACADE_LINES, "move the work into a service (services/)"


def test_every_option_has_a_default_and_a_type() -> None:
    assert set(build.FacadeOptions.__annotations__) == set(build.DEFAULTS)


def test_an_unknown_option_is_a_type_error_before_anything_is_built() -> None:
    stores: Any = object()  # never touched: the options are checked first
    with pytest.raises(TypeError, match="dedup_treshold"):
        build.build_facade(stores, {"dedup_treshold": 0.9})  # type: ignore[typeddict-unknown-key]
