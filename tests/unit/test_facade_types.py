"""The facade's types (issue 16): no public method of ``MemoryManager`` returns
``Any``; the dataclass reports have one JSON form, ``as_dict()``."""

from __future__ import annotations

import inspect
import re

from hello_memory.memory.manager import MemoryManager
from hello_memory.memory.reports import ConsolidateReport, ForgetReport
from hello_memory.types import MemoryType


def test_reports_as_dict_are_json_ready() -> None:
    forget = ForgetReport("time", "u", ("a", "b"), dry_run=True, hard=False)
    assert forget.as_dict() == {"strategy": "time", "namespace": "u", "ids": ["a", "b"],
                                "count": 2, "dry_run": True, "hard": False}
    con = ConsolidateReport("u", MemoryType.EPISODIC, MemoryType.SEMANTIC, False,
                            promoted=("t",), merged={"t": ("a", "b")},
                            removed_sources=("a", "b"), deduplicated={"s": ("d",)})
    assert con.as_dict() == {"namespace": "u", "from_type": "episodic", "to_type": "semantic",
                             "dry_run": False, "promoted": ["t"], "merged": {"t": ["a", "b"]},
                             "removed_sources": ["a", "b"], "deduplicated": {"s": ["d"]},
                             "count": 2}


def test_the_facade_returns_no_any() -> None:
    """Every public method and property of MemoryManager names what it returns."""
    loose = {}
    for name, member in inspect.getmembers(MemoryManager):
        if name.startswith("_"):
            continue
        fn = member.fget if isinstance(member, property) else member
        ret = getattr(fn, "__annotations__", {}).get("return")
        if ret is None or re.search(r"\bAny\b", str(ret)):
            loose[name] = ret
    assert loose == {}
