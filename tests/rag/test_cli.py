"""`ingest` and `ask` commands through typer's runner, on a real data directory."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import pytest
import typer
from typer.testing import CliRunner

from hello_memory.interfaces.cli.rag import register

from .corpus import write_corpus

pytestmark = pytest.mark.slow


def _app() -> typer.Typer:
    app = typer.Typer()

    @app.callback()
    def root(config: Annotated[Path | None, typer.Option("--config")] = None,
             data_dir: Annotated[Path | None, typer.Option("--data-dir")] = None) -> None:
        """Stands in for the main CLI's root options."""

    register(app)
    return app


def test_ingest_folder_then_ask(tmp_path: Path) -> None:
    write_corpus(tmp_path / "docs")
    (tmp_path / "docs" / "broken.pdf").write_bytes(b"not a pdf")
    runner = CliRunner()
    env = {"HELLO_MEMORY_CONFIG": "", "COLUMNS": "200"}
    data = str(tmp_path / "data")
    result = runner.invoke(_app(), ["--data-dir", data, "ingest", str(tmp_path / "docs"),
                                    "-n", "kb"], env=env)
    assert result.exit_code == 1, result.output  # one file failed
    assert "files indexed" in result.output and "broken.pdf" in result.output
    assert "not a valid .pdf" in result.output

    result = runner.invoke(_app(), ["--data-dir", data, "ask", "when is the zeppelin launch?",
                                    "-n", "kb"], env=env)
    assert result.exit_code == 0, result.output
    assert "No LLM is configured" in result.output
    assert "[1] plan.pptx > Quarterly Plan" in result.output and "third quarter" in result.output

    result = runner.invoke(_app(), ["--data-dir", data, "ingest", str(tmp_path / "docs" /
                                    "plan.pptx"), "-n", "kb", "--json"], env=env)
    assert result.exit_code == 0, result.output
    assert '"skipped": 1' in result.output and '"files": 0' in result.output
