"""The "Lifecycle defaults" table of the docs (docs/JOBS.md; the README's until issue 29)
is the ``jobs`` settings: every field, each with its default (and configs/default.yaml,
the package's default.yaml, says the same)."""

from __future__ import annotations

from pathlib import Path

import yaml

from hello_memory.config import JobsSettings, load_settings

REPO = Path(__file__).resolve().parents[2]


def _table() -> dict[str, object]:
    text = (REPO / "docs" / "JOBS.md").read_text(encoding="utf-8")
    section = text.split("## Lifecycle defaults", 1)[1]
    rows: dict[str, object] = {}
    in_table = False
    for line in section.splitlines():
        if line.startswith("| setting |"):
            in_table = True
            continue
        if in_table and not line.startswith("|"):
            break
        if in_table and not line.startswith("| ---"):
            name, default = (cell.strip().strip("`") for cell in line.split("|")[1:3])
            rows[name.removeprefix("jobs.")] = yaml.safe_load(default)
    return rows


def test_readme_table_matches_the_settings() -> None:
    defaults = JobsSettings().model_dump()
    assert _table() == defaults
    shipped = load_settings(REPO / "configs" / "default.yaml", environ={}).jobs
    assert shipped.model_dump() == defaults
