"""The public API: every name in ``hello_memory.__all__`` resolves, lazily."""

from __future__ import annotations

import subprocess
import sys

import hello_memory


def test_all_names_resolve() -> None:
    for name in hello_memory.__all__:
        assert getattr(hello_memory, name) is not None, name
    assert len(set(hello_memory.__all__)) == len(hello_memory.__all__)


def test_unknown_attribute_is_an_attribute_error() -> None:
    try:
        hello_memory.NoSuchThing  # noqa: B018
    except AttributeError as exc:
        assert "NoSuchThing" in str(exc)
    else:
        raise AssertionError("expected AttributeError")


def test_import_is_light() -> None:
    code = ("import sys, hello_memory; heavy = [m for m in ('torch', 'qdrant_client', "
            "'sentence_transformers', 'sklearn', 'spacy', 'neo4j') if m in sys.modules]; "
            "print(heavy)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True)
    assert out.stdout.strip() == "[]"
