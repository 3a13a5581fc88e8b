"""Where the dashboard's and the API docs' local files lie.

Its own module so that :mod:`hello_memory.interfaces.ui.web` and
:mod:`hello_memory.interfaces.ui.docs` read
the folders without importing the package's ``__init__``, which imports them back to
mount them (docs/ARCHITECTURE.md "Known debts": no import cycle). The package
re-exports both names.
"""

from __future__ import annotations

from pathlib import Path

__all__ = ["STATIC_DIR", "VENDOR_DIR"]

STATIC_DIR = Path(__file__).parent / "static"
VENDOR_DIR = STATIC_DIR / "vendor"
