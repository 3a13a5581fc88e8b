"""CLI rough edges of issue 20: tables at 80 columns, a readable ``stats``, exit codes
exactly as the README's table says (one test per code), failing before any work, and
commands that embed nothing starting without the model."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console
from typer.testing import CliRunner

from hello_memory.embedding.sentence_transformer import SentenceTransformerEmbedder
from hello_memory.errors import BackendUnavailableError
from hello_memory.interfaces import cli as cli_module
from hello_memory.interfaces.cli import app
from hello_memory.memory.manager import MemoryManager

pytestmark = pytest.mark.slow
ENV = {"HELLO_MEMORY__SEMANTIC__EXTRACTOR": "rules", "HELLO_MEMORY_CONFIG": ""}
KEYS = "Frank keeps his spare keys under the blue pot."


def cli(data: Path, *args: str, code: int = 0) -> Any:
    result = CliRunner().invoke(app, ["--data-dir", str(data), *args], env=ENV)
    assert result.exit_code == code, (result.stdout, result.stderr, result.exception)
    return result


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    data = tmp_path_factory.mktemp("cli") / "d"
    mid = cli(data, "add", KEYS, "--type", "semantic", "-n", "frank").stdout.strip()
    return data, mid


def _no_model(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(self: Any) -> Any:
        raise AssertionError("this command must not load the embedding model")
    monkeypatch.setattr(SentenceTransformerEmbedder, "_load", refuse)


def test_search_table_reads_at_80_columns(store: tuple[Path, str],
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    data, mid = store
    monkeypatch.setattr(cli_module, "console", Console(width=80))
    out = cli(data, "search", "where are the spare keys?", "-n", "frank").stdout
    lines = out.splitlines()
    assert all(len(line) <= 80 for line in lines)
    assert any(KEYS in line for line in lines), out  # the memory on one line, not a word each
    assert any(f"id {mid}" in line for line in lines), out  # the full id, which show takes
    assert "sim" not in lines[1]  # breakdown columns only where they fit (--explain has them)
    cli(data, "show", mid, "-n", "frank")
    monkeypatch.setattr(cli_module, "console", Console(width=140))
    wide = cli(data, "search", "where are the spare keys?", "-n", "frank").stdout
    assert "recency" in wide and any(KEYS in line for line in wide.splitlines())
    hits = json.loads(cli(data, "search", "spare keys", "-n", "frank", "--json").stdout)["hits"]
    assert hits[0]["id"] == mid and {"score", "breakdown"} <= set(hits[0])


def test_stats_table_and_json_without_the_model(store: tuple[Path, str],
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    data, mid = store
    _no_model(monkeypatch)
    out = cli(data, "stats", "-n", "frank").stdout
    assert "{'" not in out and "semantic memories" in out and "vectors" in out
    assert json.loads(cli(data, "stats", "-n", "frank", "--json").stdout)["by_type"][
        "semantic"] == 1
    assert KEYS in cli(data, "show", mid, "-n", "frank").stdout


def test_exit_0_restore_of_a_forgotten_memory(store: tuple[Path, str]) -> None:
    data, mid = store
    cli(data, "forget", mid, "-n", "frank")
    assert "restored 1 of 1" in cli(data, "restore", mid, "-n", "frank").stdout


def test_exit_1_unexpected(store: tuple[Path, str], monkeypatch: pytest.MonkeyPatch) -> None:
    def boom(self: Any, namespace: Any = None) -> Any:
        raise RuntimeError("boom")
    monkeypatch.setattr(MemoryManager, "stats", boom)
    out = cli(store[0], "stats", "-n", "frank", code=1)
    assert "unexpected RuntimeError: boom" in out.stderr and "Traceback" not in out.stderr


def test_exit_2_bad_input(store: tuple[Path, str], monkeypatch: pytest.MonkeyPatch) -> None:
    data, _ = store
    _no_model(monkeypatch)  # refused before anything opens
    bad = cli(data, "add", "x", "--metadata", "not json", "-n", "frank", code=2)
    assert "--metadata is not valid JSON" in bad.stderr and "unexpected" not in bad.stderr
    working = cli(data, "add", "x", "--type", "working", "-n", "frank", code=2)
    assert working.stderr.count("\n") == 1  # one line, saying why
    assert "lives only as long as the process" in working.stderr


def test_exit_3_not_found(store: tuple[Path, str], tmp_path: Path,
                          monkeypatch: pytest.MonkeyPatch) -> None:
    data, mid = store
    _no_model(monkeypatch)
    missing = cli(data, "import", str(tmp_path / "nonexistent.jsonl"), code=3)
    assert "no such file" in missing.stderr and "unexpected" not in missing.stderr
    unknown = cli(data, "restore", "no-such-id", mid, "-n", "frank", code=3)
    assert "no-such-id" in unknown.stderr and "nothing restored" in unknown.stderr


def test_exit_3_ingest_fails_before_any_work(tmp_path: Path,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("hello_memory.rag.pipeline")

    def no_open(*a: Any, **k: Any) -> Any:
        raise AssertionError("no stores, no model, no progress bar")
    monkeypatch.setattr(MemoryManager, "open", no_open)
    out = cli(tmp_path / "d", "ingest", str(tmp_path / "nonexistent"), code=3)
    assert out.stderr.count("\n") == 1 and "nonexistent" in out.stderr
    assert out.stdout == ""


def test_exit_4_backend(store: tuple[Path, str], monkeypatch: pytest.MonkeyPatch) -> None:
    def down(self: Any, namespace: Any = None) -> Any:
        raise BackendUnavailableError("vector store down")
    monkeypatch.setattr(MemoryManager, "stats", down)
    assert "vector store down" in cli(store[0], "stats", "-n", "frank", code=4).stderr


def test_exit_130_interrupted(store: tuple[Path, str],
                              monkeypatch: pytest.MonkeyPatch) -> None:
    def stop(self: Any, namespace: Any = None) -> Any:
        raise KeyboardInterrupt
    monkeypatch.setattr(MemoryManager, "stats", stop)
    assert "interrupted" in cli(store[0], "stats", "-n", "frank", code=130).stderr


@pytest.mark.parametrize(("argv", "words"), [
    (["nosuchcmd"], "No such command 'nosuchcmd'"),
    (["add", "hello", "--importance", "2"], "--importance"),
    (["search", "q", "--as-of", "yesterdayish"], "--as-of"),
])
def test_usage_errors_are_one_line_with_exit_2(tmp_path: Path, argv: list[str],
                                               words: str) -> None:
    # the installed entry point (main), not CliRunner: click's own usage-error box is
    # what a user used to see here
    import subprocess
    import sys

    run = subprocess.run([sys.executable, "-c",
                          "from hello_memory.interfaces.cli import main; main()",
                          "--data-dir", str(tmp_path / "d"), *argv],
                         capture_output=True, text=True, timeout=120,
                         env={"PATH": "/usr/bin:/bin", "COLUMNS": "80"})
    assert run.returncode == 2, run.stderr
    lines = [ln for ln in run.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: ") and words in lines[0], lines
    assert "--help" in lines[0] and run.stdout == ""


def test_stats_and_show_import_neither_torch_nor_spacy(tmp_path: Path) -> None:
    # A fresh interpreter: the embedder and spaCy (which imports torch) load on first use,
    # and stats / show never use them (issue 20: commands that embed nothing start fast).
    import subprocess
    import sys

    code = ("import sys\nfrom hello_memory.interfaces.cli import main\ntry:\n    main()\n"
            "except SystemExit as e:\n    code = e.code\n"
            "print('LOADED', sorted(m for m in ('torch', 'spacy', 'sentence_transformers')"
            " if m in sys.modules), code)")
    for argv in (["stats", "-n", "a"], ["show", "nope", "-n", "a"]):
        run = subprocess.run([sys.executable, "-c", code, "--data-dir", str(tmp_path / "d"),
                              *argv], capture_output=True, text=True, timeout=120,
                             env={"PATH": "/usr/bin:/bin", "COLUMNS": "80"})
        last = run.stdout.strip().splitlines()[-1]
        assert last.startswith("LOADED [] "), (argv, run.stdout, run.stderr)
        assert last.endswith(" 0" if argv[0] == "stats" else " 3"), last
