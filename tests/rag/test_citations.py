"""Citations name documents as people know them (issue 20): an uploaded file by the
name it was uploaded with, never by its path under <data_dir>/uploads; a file met in a
folder by its path under that folder; then the heading path."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import pytest
import typer
from asgi_client import AsgiApi  # tests/ is on sys.path
from typer.testing import CliRunner

from hello_memory.config import load_settings
from hello_memory.factory import open_stores
from hello_memory.interfaces.cli.rag import register
from hello_memory.interfaces.rest import create_app
from hello_memory.memory.manager import MemoryManager

pytestmark = pytest.mark.slow
KEY = {"Authorization": "Bearer k"}


def _leave_policy(path: Path) -> Path:
    from docx import Document

    doc = Document()
    doc.add_heading("Leave policy", 1)
    doc.add_paragraph("This policy covers every kind of leave.")
    doc.add_heading("Annual leave", 2)
    doc.add_paragraph("Every employee gets twenty-eight days of annual leave per year.")
    doc.add_heading("Sick leave", 2)
    doc.add_paragraph("Sick leave needs a doctor's note after three days.")
    doc.save(str(path))
    return path


def test_uploaded_document_is_cited_by_its_original_name(tmp_path: Path, embedder: Any
                                                         ) -> None:
    settings = load_settings(environ={}, data_dir=tmp_path / "data",
                             api={"api_keys": {"k": ["*"]}})
    mm = MemoryManager(open_stores(settings, embedder=embedder))
    try:
        api = AsgiApi(create_app(settings, manager=mm))
        data = _leave_policy(tmp_path / "x.docx").read_bytes()
        mime = "application/vnd.openxmlformats-officedocument.wordprocessingml.document"
        r = api("POST", "/v1/documents", params={"namespace": "hr"}, headers=KEY,
                files=[("files", ("C:\\Users\\me\\leave-policy.docx", data, mime))])
        assert r.status_code == 201 and r.json()["files"] == 1, r.text
        hits = api("POST", "/v1/documents/search", params={"namespace": "hr"}, headers=KEY,
                   json={"query": "how many days of annual leave?", "top_k": 1}).json()["hits"]
        assert hits[0]["citation"] == "leave-policy.docx > Leave policy > Annual leave"
        assert hits[0]["name"] == "leave-policy.docx"
        assert "uploads" in hits[0]["source"]  # the stored file, kept for re-ingesting
        answer = api("POST", "/v1/ask", params={"namespace": "hr"}, headers=KEY,
                     json={"question": "how many days of annual leave?"}).json()
        assert "[1] leave-policy.docx > Leave policy > Annual leave" in answer["text"]
        assert "uploads" not in answer["text"]
        assert answer["citations"][0]["label"] == (
            "[1] leave-policy.docx > Leave policy > Annual leave")
        # the same bytes uploaded under another name: the citation follows the new name
        api("POST", "/v1/documents", params={"namespace": "hr"}, headers=KEY,
            files=[("files", ("policy-2025.docx", data, mime))])
        hits = api("POST", "/v1/documents/search", params={"namespace": "hr"}, headers=KEY,
                   json={"query": "annual leave days", "top_k": 1}).json()["hits"]
        assert hits[0]["citation"].startswith("policy-2025.docx > ")
        # ask's LLM budget is part of the request; out of range is a 422
        assert api("POST", "/v1/ask", params={"namespace": "hr"}, headers=KEY,
                   json={"question": "annual leave?", "llm_calls": 9}).status_code == 422
        # deleting an uploaded document deletes the file kept for it
        uploads = settings.data_dir / "uploads" / "documents"
        kept = sorted(p for p in uploads.rglob("*") if p.is_file())
        assert len(kept) == 2
        r = api("DELETE", f"/v1/documents/{hits[0]['document_id']}",
                params={"namespace": "hr"}, headers=KEY)
        assert r.status_code == 200, r.text
        assert sorted(p for p in uploads.rglob("*") if p.is_file()) == [
            p for p in kept if p.name != "policy-2025.docx"]
    finally:
        mm.close()


def _app() -> typer.Typer:
    app = typer.Typer()

    @app.callback()
    def root(config: Annotated[Path | None, typer.Option("--config")] = None,
             data_dir: Annotated[Path | None, typer.Option("--data-dir")] = None) -> None:
        """Stands in for the main CLI's root options."""

    register(app)
    return app


def test_cli_cites_the_path_under_the_folder_ingested(tmp_path: Path) -> None:
    docs = tmp_path / "handbook"
    (docs / "hr").mkdir(parents=True)
    _leave_policy(docs / "hr" / "leave-policy.docx")
    runner = CliRunner()
    env = {"HELLO_MEMORY_CONFIG": "", "COLUMNS": "200"}
    data = str(tmp_path / "data")
    result = runner.invoke(_app(), ["--data-dir", data, "ingest", str(docs), "-n", "kb"],
                           env=env)
    assert result.exit_code == 0, result.output
    result = runner.invoke(_app(), ["--data-dir", data, "ask", "how many days of annual leave?",
                                    "-n", "kb"], env=env)
    assert result.exit_code == 0, result.output
    assert "[1] hr/leave-policy.docx > Leave policy > Annual leave" in result.output
    assert str(tmp_path) not in result.output
