"""Running a stress test's threads (shared by the concurrency tests): the watchers
(readers that loop until ``stop`` is set) run beside the workers (writers that end on
their own); once every worker has ended, ``stop`` is set and the watchers are joined."""

from __future__ import annotations

import threading
from collections.abc import Sequence


def run_beside(workers: Sequence[threading.Thread], watchers: Sequence[threading.Thread],
               stop: threading.Event) -> None:
    """Start ``watchers`` and ``workers``, wait for the workers, then stop and join the
    watchers."""
    for t in [*watchers, *workers]:
        t.start()
    for t in workers:
        t.join()
    stop.set()
    for t in watchers:
        t.join()
