"""PDF headings recovered from the text layer (issue 20): a PDF set with larger and
bold headings becomes several chunks with heading paths, in reading order, columns
included; a PDF without headings keeps MarkItDown's text."""

from __future__ import annotations

from pathlib import Path

import pytest

from hello_memory.rag import RAGPipeline
from hello_memory.rag.loaders import to_markdown
from hello_memory.rag.pdf import pdf_markdown

from .corpus import write_pdf

pytestmark = pytest.mark.slow


def write_handbook(path: Path) -> Path:
    from fpdf import FPDF

    pdf = FPDF()
    pdf.add_page()

    def heading(text: str, size: int) -> None:
        pdf.set_font("Helvetica", "B", size)
        pdf.multi_cell(0, size * 0.6, text)
        pdf.ln(2)

    def para(text: str) -> None:
        pdf.set_font("Helvetica", "", 11)
        pdf.multi_cell(0, 6, text)
        pdf.ln(3)

    heading("Employee Handbook", 22)
    para("This handbook describes how the company works. Read it in your first week.")
    heading("Annual leave", 16)
    para("Every employee gets twenty-eight days of annual leave per year, including "
         "public holidays, and books them in the leave planner.")
    heading("Carrying over", 13)
    para("Up to five unused days may be carried over into the next year.")
    pdf.set_font("Helvetica", "", 9)
    pdf.cell(0, 6, "1", align="C")  # a page number
    pdf.add_page()
    heading("Field guide", 16)
    y = pdf.get_y() + 2
    for x, title, text in (
            (10, "Birds", "Owls hunt at night and swallow their prey whole. The barn owl "
                          "nests in old farm buildings and church towers."),
            (110, "Trees", "Oaks can live for a thousand years. Their acorns feed jays, "
                           "squirrels and wild boar through the winter.")):
        pdf.set_font("Helvetica", "B", 13)
        pdf.set_xy(x, y)
        pdf.cell(90, 8, title)
        pdf.set_font("Helvetica", "", 11)
        pdf.set_xy(x, y + 10)
        pdf.multi_cell(90, 6, text)
    pdf.output(str(path))
    return path


def test_headings_levels_and_reading_order(tmp_path: Path) -> None:
    md = pdf_markdown(write_handbook(tmp_path / "handbook.pdf").read_bytes())
    assert md is not None
    headings = [line for line in md.splitlines() if line.startswith("#")]
    assert headings == ["# Employee Handbook", "## Annual leave", "### Carrying over",
                        "## Field guide", "### Birds", "### Trees"]
    # two columns read one after the other, each paragraph whole
    birds, trees = md.index("### Birds"), md.index("### Trees")
    owl = md.index("The barn owl nests in old farm buildings and church towers.")
    assert birds < owl < trees < md.index("Oaks can live for a thousand years. Their acorns "
                                          "feed jays, squirrels and wild boar")
    assert "\n1\n" not in md  # the page number is left out


def test_pdf_with_headings_becomes_chunks_with_heading_paths(rag: RAGPipeline,
                                                             tmp_path: Path) -> None:
    path = write_handbook(tmp_path / "handbook.pdf")
    report = rag.ingest([path], namespace="kb")
    assert report.files == 1 and report.failed == []
    [doc] = rag.documents("kb")
    chunks = rag.index.records.documents.document_chunks("kb", doc.id)
    assert [c.heading_path for c in chunks] == [
        "Employee Handbook", "Employee Handbook > Annual leave",
        "Employee Handbook > Annual leave > Carrying over",
        "Employee Handbook > Field guide > Birds", "Employee Handbook > Field guide > Trees"]
    [hit] = rag.search("carry over unused leave days", namespace="kb", top_k=1)
    assert hit.citation == "handbook.pdf > Employee Handbook > Annual leave > Carrying over"
    assert doc.title == "Employee Handbook"


def test_pdf_without_headings_keeps_markitdown_text(tmp_path: Path) -> None:
    data = write_pdf(tmp_path / "plain.pdf").read_bytes()
    assert pdf_markdown(data) is None
    markdown, _ = to_markdown("plain.pdf", ".pdf", data)
    assert "The warranty on the espresso machine lasts two years." in markdown
    assert not any(line.startswith("#") for line in markdown.splitlines())
