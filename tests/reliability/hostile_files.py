"""Hostile documents made on the spot (nothing checked in): a DOCX zip bomb, a PDF
flate bomb, a PDF of many pages, and an ordinary DOCX and PDF to compare with."""

from __future__ import annotations

import io
import zipfile
import zlib


def small_docx(text: str = "An ordinary document about the harbour office.") -> bytes:
    import docx

    document = docx.Document()
    document.add_paragraph(text)
    buf = io.BytesIO()
    document.save(buf)
    return buf.getvalue()


def docx_zip_bomb(expanded_mb: int = 400) -> bytes:
    """A valid DOCX whose document.xml inflates to ``expanded_mb`` MB (about 1 MB
    packed for 1 GB: deflate's ratio on one repeated byte is ~1,000)."""
    base = zipfile.ZipFile(io.BytesIO(small_docx("bomb")))
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as z:
        for info in base.infolist():
            if info.filename != "word/document.xml":
                z.writestr(info.filename, base.read(info.filename))
        with z.open("word/document.xml", "w", force_zip64=True) as member:
            member.write(base.read("word/document.xml")[:-40])
            block = b" " * (1 << 20)
            for _ in range(expanded_mb):
                member.write(block)
    return out.getvalue()


def _pdf(objects: list[bytes]) -> bytes:
    """A PDF of ``objects`` (object 1 the catalog) with a correct xref table."""
    out = io.BytesIO()
    out.write(b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n")
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(out.tell())
        out.write(b"%d 0 obj\n" % number + body + b"\nendobj\n")
    xref = out.tell()
    out.write(b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1))
    for offset in offsets:
        out.write(b"%010d 00000 n \n" % offset)
    out.write(b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n"
              % (len(objects) + 1, xref))
    return out.getvalue()


def pdf_flate_bomb(expanded_mb: int = 300) -> bytes:
    """A one-page PDF whose content stream is ``expanded_mb`` MB of text operators
    packed with FlateDecode (about 0.45 MB for 300 MB)."""
    packer = zlib.compressobj(9)
    head = b"BT /F1 12 Tf 72 720 Td (bomb) Tj ET\n"
    packed = [packer.compress(head)]
    block = b"0 0 m " * ((1 << 20) // 6)
    for _ in range(expanded_mb):
        packed.append(packer.compress(block))
    packed.append(packer.flush())
    stream = b"".join(packed)
    return _pdf([
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R "
        b"/Resources << /Font << /F1 5 0 R >> >> >>",
        b"<< /Length %d /Filter /FlateDecode >>\nstream\n" % len(stream) + stream
        + b"\nendstream",
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
    ])


def many_page_pdf(pages: int = 1500) -> bytes:
    from fpdf import FPDF

    pdf = FPDF()
    pdf.set_font("helvetica", size=12)
    for i in range(pages):
        pdf.add_page()
        pdf.cell(text=f"Page {i} of the long report.")
    return bytes(pdf.output())


def small_pdf(text: str = "An ordinary PDF about the harbour office.") -> bytes:
    from fpdf import FPDF

    pdf = FPDF()
    pdf.add_page()
    pdf.set_font("helvetica", size=12)
    pdf.cell(text=text)
    return bytes(pdf.output())
