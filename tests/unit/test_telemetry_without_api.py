"""Tracing asked for without the OpenTelemetry API installed: no spans, and one
warning that names the extra (docs/OBSERVABILITY.md), instead of silence."""

from __future__ import annotations

import logging
import sys

import pytest

from hello_memory import telemetry


def test_tracing_without_the_api_warns_and_stays_off(
        monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    # A None entry in sys.modules makes ``import opentelemetry`` raise ImportError,
    # exactly as on a machine without the package.
    monkeypatch.setitem(sys.modules, "opentelemetry", None)
    with caplog.at_level(logging.WARNING, logger="hello_memory.telemetry"):
        on = telemetry.configure(tracing=True)
    assert on is False
    assert not telemetry.enabled()
    assert any("OpenTelemetry API is not installed" in r.getMessage()
               and "hello-memory[observability]" in r.getMessage()
               for r in caplog.records)


def test_tracing_off_says_nothing(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="hello_memory.telemetry"):
        assert telemetry.configure(tracing=False) is False
    assert not caplog.records
