"""Documents of every supported format, written by the tests themselves."""

from __future__ import annotations

import json
from pathlib import Path

# One distinctive fact per format, so a search can tell which file answered.
FACTS = {
    "docx": ("Install Guide", "The installer needs forty gigabytes of free disk space."),
    "pptx": ("Quarterly Plan", "The zeppelin launch is scheduled for the third quarter."),
    "xlsx": ("Prices", "saffron"),
    "pdf": (None, "The warranty on the espresso machine lasts two years."),
    "html": ("Gardening", "Tomatoes need six hours of direct sunlight every day."),
    "md": ("Kitchen", "The sourdough starter is fed with rye flour every morning."),
    "txt": (None, "The lighthouse keeper winds the clock every Sunday evening."),
    "csv": (None, "Reykjavik"),
    "json": (None, "penguin colony census"),
}


def write_docx(path: Path) -> Path:
    from docx import Document

    doc = Document()
    doc.add_heading("Install Guide", 1)
    doc.add_paragraph("Read this before installing the appliance software.")
    doc.add_heading("Requirements", 2)
    doc.add_paragraph(FACTS["docx"][1])
    doc.save(str(path))
    return path


def write_pptx(path: Path) -> Path:
    from pptx import Presentation

    deck = Presentation()
    slide = deck.slides.add_slide(deck.slide_layouts[1])
    slide.shapes.title.text = "Quarterly Plan"
    slide.placeholders[1].text = FACTS["pptx"][1]
    deck.save(str(path))
    return path


def write_xlsx(path: Path) -> Path:
    from openpyxl import Workbook

    book = Workbook()
    sheet = book.active
    sheet.title = "Prices"
    for row in (["spice", "price per gram"], ["saffron", 11], ["pepper", 1]):
        sheet.append(row)
    book.save(str(path))
    return path


def write_pdf(path: Path, text: str | None = None) -> Path:
    from fpdf import FPDF

    pdf = FPDF()
    pdf.add_page()
    pdf.set_font("Helvetica", size=12)
    pdf.multi_cell(0, 10, text or (FACTS["pdf"][1] + "\n\nReturns are accepted for 30 days."))
    pdf.output(str(path))
    return path


def write_corpus(folder: Path) -> dict[str, Path]:
    """One file per supported format in ``folder``; returns format -> path."""
    folder.mkdir(parents=True, exist_ok=True)
    files = {
        "docx": write_docx(folder / "guide.docx"),
        "pptx": write_pptx(folder / "plan.pptx"),
        "xlsx": write_xlsx(folder / "prices.xlsx"),
        "pdf": write_pdf(folder / "warranty.pdf"),
    }
    (folder / "garden.html").write_text(
        "<html><head><title>Garden notes</title></head><body><h1>Gardening</h1>"
        f"<p>{FACTS['html'][1]}</p><h2>Pests</h2><p>Aphids dislike garlic spray.</p>"
        "</body></html>", encoding="utf-8")
    (folder / "kitchen.md").write_text(
        f"# Kitchen\n\n{FACTS['md'][1]}\n\n## Knives\n\nSharpen the knives monthly.\n",
        encoding="utf-8")
    (folder / "lighthouse.txt").write_text(FACTS["txt"][1] + "\n", encoding="utf-8")
    (folder / "capitals.csv").write_text("country,capital\nIceland,Reykjavik\nPeru,Lima\n",
                                         encoding="utf-8")
    (folder / "survey.json").write_text(json.dumps(
        {"survey": "penguin colony census", "birds": 5120, "island": "South Georgia"}),
        encoding="utf-8")
    files.update(html=folder / "garden.html", md=folder / "kitchen.md",
                 txt=folder / "lighthouse.txt", csv=folder / "capitals.csv",
                 json=folder / "survey.json")
    return files
