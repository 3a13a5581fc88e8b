"""A REST answer is written in one pass (interfaces/rest/routes._Answer, issue 27) and its bytes are
the ones FastAPI's ``jsonable_encoder`` + Starlette's ``JSONResponse`` wrote before, for
JSON-native answers and for every value ``json`` cannot write by itself."""

from __future__ import annotations

import enum
import math
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any

import pytest
from fastapi.encoders import jsonable_encoder
from fastapi.responses import JSONResponse
from pydantic import BaseModel

from hello_memory.interfaces.rest.routes import _Answer
from hello_memory.types import MemoryType


class Colour(enum.Enum):
    RED = "red"


@dataclass
class Point:
    x: int
    when: datetime


class Model(BaseModel):
    name: str
    tags: set[str]


WHEN = datetime(2026, 12, 2, 8, 30, tzinfo=timezone.utc)
ANSWERS: list[Any] = [
    {"recipe": "hybrid", "hits": [{"id": "a", "score": 0.5, "content": "咖啡 ☕",
                                   "views": {"semantic": {"rank": 1, "score": 0.9}},
                                   "memory": {"metadata": {"n": [1, 2.5, None, True]}}}]},
    [],
    {"when": WHEN, "colour": Colour.RED, "type": MemoryType.SEMANTIC, "tags": {"x"},
     "pair": (1, "b")},
    {"point": Point(3, WHEN), "model": Model(name="n", tags={"t"})},
    {1: "int key", 2.5: "float key", None: "none key"},
    {Colour.RED: "an enum key"},
    "plain",
]


@pytest.mark.parametrize("answer", ANSWERS)
def test_the_bytes_of_the_long_way(answer: Any) -> None:
    before = JSONResponse(jsonable_encoder(answer), status_code=200).body
    assert _Answer(answer, status_code=200).body == before


def test_not_a_number_is_still_refused() -> None:
    with pytest.raises(ValueError):
        _Answer({"score": math.nan})
