"""The package's version string, in a module of its own (core: it imports nothing).

The root package re-exports it as ``hello_memory.__version__``; :mod:`hello_memory.telemetry`
reads it here, since the root package's ``__init__`` names every public class and a
core module importing it closed an import cycle (docs/ARCHITECTURE.md "Known debts").
Keep it equal to ``version`` in pyproject.toml.
"""

from __future__ import annotations

__all__ = ["__version__"]

__version__ = "0.1.0"
