"""Headings of a PDF, from its text layer.

A PDF has no heading markup, but its text layer says how each line is set: font
size and font name (``Helvetica-Bold``). MarkItDown's text keeps none of that, so a
handbook comes out as one section. Here pdfminer's layout analysis (the library
MarkItDown reads PDFs with) gives the text boxes in reading order, line by line with
their characters' fonts, and:

* the body size is the size most characters are set in;
* a short line (at most 15 words, no sentence end) set larger than the body
  (x 1.15), or in bold at body size while the body is not bold, is a heading; its
  level is the rank of its size among the heading sizes (largest: ``#``), bold at
  body size coming last;
* lines are read top to bottom, and columns left to right (a gutter no narrow line
  crosses; a title across the columns cuts the page into bands);
* consecutive heading lines of the same style are one heading; lines of a text box,
  or close below each other in one column, are one paragraph (a word hyphenated at a
  line end is joined); page numbers ("12", "Page 3 of 9") are left out.

:func:`pdf_markdown` returns None when no line qualifies: the caller keeps
MarkItDown's conversion (which also lays out tables).
"""

from __future__ import annotations

import io
import re
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass

__all__ = ["pdf_markdown"]

_BOLD = re.compile(r"bold|black|heavy|semibold|demi", re.IGNORECASE)
_PAGE_NUMBER = re.compile(r"^(page\s+)?\d{1,4}(\s*(of|/)\s*\d{1,4})?$", re.IGNORECASE)
_SENTENCE_END = (".", ",", ";", ":", "!", "?", "。", "，", "；")
HEADING_RATIO = 1.15
MAX_HEADING_WORDS = 15
MAX_HEADING_CHARS = 120


@dataclass(frozen=True)
class _Line:
    text: str
    size: float  # the most common character size of the line, rounded to 0.5 pt
    bold: bool  # most of its characters are in a bold face
    chars: int
    box: int  # which text box pdfminer put it in
    x0: float
    x1: float
    y0: float  # PDF coordinates: y grows upwards
    y1: float


def _lines(data: bytes) -> list[_Line]:
    from pdfminer.high_level import extract_pages
    from pdfminer.layout import LAParams, LTChar, LTTextContainer, LTTextLine

    out: list[_Line] = []
    box_no = 0
    for page in extract_pages(io.BytesIO(data), laparams=LAParams()):
        on_page: list[_Line] = []
        for box in page:
            if not isinstance(box, LTTextContainer):
                continue
            box_no += 1
            for line in box:
                if not isinstance(line, LTTextLine):
                    continue
                chars = [c for c in line if isinstance(c, LTChar) and c.get_text().strip()]
                text = " ".join(line.get_text().split())
                if not chars or not text:
                    continue
                sizes = Counter(round(c.size * 2) / 2 for c in chars)
                bold = sum(1 for c in chars if _BOLD.search(c.fontname or "")) * 2 > len(chars)
                on_page.append(_Line(text, sizes.most_common(1)[0][0], bold, len(chars), box_no,
                                     line.x0, line.x1, line.y0, line.y1))
        out += _reading_order(on_page)
    return out


def _reading_order(lines: list[_Line], depth: int = 0) -> list[_Line]:
    """Lines of one page (or column) top to bottom, columns left to right.

    A column gutter is an x-interval in the middle of the text that no line narrower
    than 60% of the text width crosses, at least a character wide, with text on both
    sides at the same height. Lines crossing it (a title over two columns) cut the page
    into bands; within each band the left column comes before the right one, each
    ordered the same way (three columns: the right part splits again)."""
    top_down = sorted(lines, key=lambda ln: (-round(ln.y1), ln.x0))
    if len(lines) < 4 or depth > 3:
        return top_down
    left, right = min(ln.x0 for ln in lines), max(ln.x1 for ln in lines)
    width = right - left
    narrow = sorted((ln.x0, ln.x1) for ln in lines if ln.x1 - ln.x0 < 0.6 * width)
    gutter: tuple[float, float] | None = None
    reach = left
    min_gap = max(6.0, min((ln.size for ln in lines), default=6.0))
    for x0, x1 in narrow:
        if x0 - reach >= min_gap and reach > left + 0.15 * width \
                and x0 < right - 0.15 * width \
                and (gutter is None or x0 - reach > gutter[1] - gutter[0]):
            gutter = (reach, x0)
        reach = max(reach, x1)
    if gutter is None:
        return top_down
    cut = (gutter[0] + gutter[1]) / 2
    cols = ([ln for ln in lines if ln.x1 <= cut], [ln for ln in lines if ln.x0 >= cut])
    spanning = sorted((ln for ln in lines if ln.x0 < cut < ln.x1), key=lambda ln: -ln.y1)
    beside = (min(ln.y0 for ln in cols[0]) < max(ln.y1 for ln in cols[1])
              and min(ln.y0 for ln in cols[1]) < max(ln.y1 for ln in cols[0]))
    if not beside:
        return top_down
    out: list[_Line] = []
    bounds = [float("inf"), *(ln.y1 for ln in spanning), float("-inf")]
    for i in range(len(bounds) - 1):
        hi, lo = bounds[i], bounds[i + 1]
        if i:
            out.append(spanning[i - 1])
        for col in cols:
            band = [ln for ln in col if lo < (ln.y0 + ln.y1) / 2 <= hi]
            out += _reading_order(band, depth + 1)
    return out


def _is_heading_text(text: str) -> bool:
    return (len(text) <= MAX_HEADING_CHARS and len(text.split()) <= MAX_HEADING_WORDS
            and not text.endswith(_SENTENCE_END) and any(ch.isalpha() for ch in text))


def _join(lines: list[str]) -> str:
    """The lines of one paragraph as one line; "manage-" + "ment" -> "management"."""
    text = ""
    for piece in lines:
        if text.endswith("-") and piece[:1].islower() and text[-2:-1].isalpha():
            text = text[:-1] + piece
        else:
            text = f"{text} {piece}" if text else piece
    return text


def pdf_markdown(data: bytes) -> str | None:
    """Markdown of a PDF with its headings as ATX headings, in reading order; None when
    the text layer shows no heading (or cannot be laid out)."""
    try:
        lines = [ln for ln in _lines(data) if not _PAGE_NUMBER.match(ln.text)]
    except Exception:  # noqa: BLE001 - a layout failure: MarkItDown's text (or error) then
        return None
    if not lines:
        return None
    body, body_bold = _body_style(lines)

    def style(ln: _Line) -> tuple[float, bool] | None:
        if not _is_heading_text(ln.text):
            return None
        if ln.size >= body * HEADING_RATIO:
            return (ln.size, True)
        if ln.bold and not body_bold and ln.size >= body:
            return (body, False)  # bold at body size: below every larger heading
        return None

    styles = {s for ln in lines if (s := style(ln)) is not None}
    if not styles:
        return None
    ranked = sorted(styles, key=lambda s: (-s[0], not s[1]))
    level = {s: min(6, i + 1) for i, s in enumerate(ranked)}
    return "\n\n".join(_blocks(lines, style, level)) + "\n"


def _body_style(lines: list[_Line]) -> tuple[float, bool]:
    """The body text's size (the size most characters are set in) and whether the body
    is bold (most characters are) (``pdf_markdown``'s part)."""
    weight: Counter[float] = Counter()
    bold_chars = 0
    for ln in lines:
        weight[ln.size] += ln.chars
        bold_chars += ln.chars if ln.bold else 0
    body = weight.most_common(1)[0][0]
    body_bold = bold_chars * 2 > sum(weight.values())
    return body, body_bold


def _same_paragraph(a: _Line | None, b: _Line) -> bool:
    """``b`` goes on ``a``'s paragraph: the same text box, or the next line below in
    the same column, set alike, at most ~0.7 of a line apart."""
    if a is None:
        return False
    if a.box == b.box:
        return True
    gap = a.y0 - b.y1
    return (a.size == b.size and abs(a.x0 - b.x0) <= 2 * a.size
            and -0.2 * a.size <= gap <= 0.7 * a.size)


def _blocks(lines: list[_Line], style: Callable[[_Line], tuple[float, bool] | None],
            level: Mapping[tuple[float, bool], int]) -> list[str]:
    """The Markdown blocks of ``lines`` in order (``pdf_markdown``'s part): consecutive
    heading lines of one style are one heading at its ``level``, the other lines
    paragraphs."""
    blocks: list[str] = []
    para: list[str] = []
    heading: list[str] = []
    heading_style: tuple[float, bool] | None = None
    prev: _Line | None = None

    def flush_para() -> None:
        if para:
            blocks.append(_join(para))
            para.clear()

    def flush_heading() -> None:
        nonlocal heading_style
        if heading and heading_style is not None:
            blocks.append("#" * level[heading_style] + " " + " ".join(heading))
        heading.clear()
        heading_style = None

    for ln in lines:
        s = style(ln)
        if s is not None:
            flush_para()
            if heading and (s != heading_style or not _same_paragraph(prev, ln)):
                flush_heading()
            heading.append(ln.text)
            heading_style = s
        else:
            flush_heading()
            if not _same_paragraph(prev, ln):
                flush_para()
            para.append(ln.text)
        prev = ln
    flush_para()
    flush_heading()
    return blocks
