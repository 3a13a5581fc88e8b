"""hello_memory.kept.KeptValues: values kept at a generation, bounded, across threads."""

from __future__ import annotations

import threading

from hello_memory.kept import KeptValues


def test_a_value_is_found_only_at_the_generation_it_was_kept_at() -> None:
    kept: KeptValues[str, int] = KeptValues(10)
    kept.put({"a": 1, "b": 2}, (1, 0))
    assert kept.get(["a", "b", "c"], (1, 0)) == {"a": 1, "b": 2}
    assert kept.get(["a"], (1, 1)) == {}  # a write since: read again
    reads: list[str] = []

    def read() -> int:
        reads.append("a")
        return 10

    assert kept.get_or_read("a", (1, 1), read) == 10
    assert kept.get_or_read("a", (1, 1), read) == 10 and reads == ["a"]
    kept.put({"none": None}, (1, 1))  # type: ignore[dict-item]
    assert kept.get(["none"], (1, 1)) == {"none": None}  # a kept None is a value


def test_the_least_recently_used_go_beyond_capacity() -> None:
    kept: KeptValues[int, int] = KeptValues(3)
    kept.put({1: 1, 2: 2, 3: 3}, 0)
    assert kept.get([1], 0) == {1: 1}  # 1 is now the most recently used
    kept.put({4: 4}, 0)
    assert len(kept) == 3 and kept.get([1, 2, 3, 4], 0) == {1: 1, 3: 3, 4: 4}


def test_threads_keeping_and_reading_at_once_see_only_their_generation() -> None:
    """Stress: eight threads put and get overlapping keys at their own generations; a
    get never returns a value kept at another generation, and the bound holds."""
    kept: KeptValues[int, tuple[int, int]] = KeptValues(64)
    errors: list[str] = []

    def work(gen: int) -> None:
        for n in range(2000):
            key = n % 100
            kept.put({key: (gen, n)}, gen)
            for k, value in kept.get([key, (key + 1) % 100], gen).items():
                if value[0] != gen:
                    errors.append(f"key {k} at generation {gen} gave {value}")

    threads = [threading.Thread(target=work, args=(g,)) for g in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors[:3]
    assert len(kept) <= 64
