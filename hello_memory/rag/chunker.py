"""Heading-aware Markdown chunking under a token bound.

The text is read as ATX headings (``#`` .. ``######``, outside code fences) and
blocks (paragraphs, tables, fenced code). Each heading opens a section whose heading
path ("Guide > Install") every chunk of it carries. Within a section, blocks are
packed greedily into chunks of at most ``chunk_size`` tokens; a block larger than that
is split at sentence boundaries, and a sentence larger than that is hard-split (at the
last whitespace in the second half of the window when there is one). Each chunk after
the first of a section starts with up to ``chunk_overlap`` tokens of the previous one.

Guarantees (the property tests check them):

* every non-whitespace character of the input lies inside some chunk's
  ``[start, end)`` span, and ``chunk.content == text[start:end]``;
* no chunk is empty or whitespace only, and every chunk counts at most
  ``chunk_size`` tokens (with the default counter; any counter whose counts grow with
  the text gives the same bound);
* it terminates: every chunk takes at least one block piece that no earlier chunk
  ended with, so the overlap can never stall the loop (a short paragraph followed by a
  large one is the classic way to make overlap logic spin forever).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

from hello_memory.errors import InvalidInputError
from hello_memory.text import split_sentences
from hello_memory.text.tokens import TokenCounter, default_token_counter

__all__ = ["Chunk", "MarkdownChunker", "heading_prefixes"]

HEADING_SEP = " > "
_HEADING_RE = re.compile(r"^ {0,3}(#{1,6})(?:[ \t]+(.*?))?[ \t#]*$")
_FENCE_RE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_NON_SPACE_RE = re.compile(r"\S")


@dataclass(frozen=True)
class Chunk:
    """A span ``[start, end)`` of the Markdown text with its heading path."""

    content: str
    heading_path: str
    start: int
    end: int
    token_count: int


@dataclass(frozen=True)
class _Block:
    start: int
    end: int
    level: int = 0  # 1..6 for a heading line, 0 for anything else
    title: str = ""


@dataclass
class _Section:
    path: str
    blocks: list[_Block]


def heading_prefixes(heading_path: str) -> list[str]:
    """``"A > B > C"`` -> ``["A", "A > B", "A > B > C"]`` (for prefix filters)."""
    parts = heading_path.split(HEADING_SEP) if heading_path else []
    return [HEADING_SEP.join(parts[: i + 1]) for i in range(len(parts))]


def _trim(text: str, start: int, end: int) -> tuple[int, int] | None:
    """``[start, end)`` without leading/trailing whitespace; None when nothing is left."""
    m = _NON_SPACE_RE.search(text, start, end)
    if m is None:
        return None
    end_ = end
    while end_ > start and text[end_ - 1].isspace():
        end_ -= 1
    return m.start(), end_


def _lines(text: str) -> Iterator[tuple[int, int]]:
    """(start, end) of every line, line break excluded."""
    pos = 0
    for line in text.splitlines(keepends=True):
        body = line.rstrip("\r\n\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029")
        yield pos, pos + len(body)
        pos += len(line)


class MarkdownChunker:
    """Split Markdown into :class:`Chunk` s of at most ``chunk_size`` tokens."""

    def __init__(self, chunk_size: int = 200, chunk_overlap: int = 30,
                 counter: TokenCounter | None = None) -> None:
        for name, value in (("chunk_size", chunk_size), ("chunk_overlap", chunk_overlap)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise InvalidInputError(f"{name} must be a non-negative int, got {value!r}")
        if chunk_size < 8:
            raise InvalidInputError(f"chunk_size must be at least 8 tokens, got {chunk_size}")
        if chunk_overlap * 2 > chunk_size:
            raise InvalidInputError(
                f"chunk_overlap ({chunk_overlap}) must be at most half of chunk_size "
                f"({chunk_size})")
        self.chunk_size = chunk_size
        self.chunk_overlap = chunk_overlap
        self.counter = counter or default_token_counter()

    def _count(self, text: str, start: int, end: int) -> int:
        return self.counter.count(text[start:end])

    # --- structure ------------------------------------------------------------------
    def _blocks(self, text: str) -> list[_Block]:
        blocks: list[_Block] = []
        para: tuple[int, int] | None = None
        fence: str | None = None

        def close() -> None:
            nonlocal para
            if para is not None:
                span = _trim(text, *para)
                if span is not None:
                    blocks.append(_Block(*span))
            para = None

        for start, end in _lines(text):
            line = text[start:end]
            fence_m = _FENCE_RE.match(line)
            if fence is not None:  # inside a fenced block: everything belongs to it
                para = (para[0] if para else start, end)
                if fence_m and fence_m.group(1)[0] == fence[0] \
                        and len(fence_m.group(1)) >= len(fence):
                    fence = None
                    close()
                continue
            if fence_m:
                close()
                fence = fence_m.group(1)
                para = (start, end)
                continue
            heading = _HEADING_RE.match(line)
            if heading and (heading.group(2) or "").strip():
                close()
                span = _trim(text, start, end)
                if span is not None:
                    blocks.append(_Block(*span, level=len(heading.group(1)),
                                         title=" ".join(heading.group(2).split())))
                continue
            if not line.strip():
                close()
                continue
            para = (para[0] if para else start, end)
        close()
        return blocks

    def _sections(self, text: str) -> list[_Section]:
        sections: list[_Section] = []
        stack: list[tuple[int, str]] = []
        current = _Section("", [])
        for block in self._blocks(text):
            if block.level:
                if current.blocks:
                    sections.append(current)
                while stack and stack[-1][0] >= block.level:
                    stack.pop()
                stack.append((block.level, block.title))
                current = _Section(HEADING_SEP.join(t for _, t in stack), [block])
            else:
                current.blocks.append(block)
        if current.blocks:
            sections.append(current)
        # A heading with no body of its own (a title right above its first
        # subsection) is carried into the next section, so it is covered without
        # becoming a chunk of one line.
        merged: list[_Section] = []
        carried: list[_Block] = []
        for section in sections:
            if len(section.blocks) == 1 and section.blocks[0].level and section is not sections[-1]:
                carried.extend(section.blocks)
                continue
            merged.append(_Section(section.path, carried + section.blocks))
            carried = []
        return merged

    # --- splitting ------------------------------------------------------------------
    def _units(self, text: str, block: _Block) -> Iterator[tuple[int, int]]:
        """Pieces of a block, each within the bound: the block itself, its sentences,
        or hard-split parts of a sentence."""
        if self._count(text, block.start, block.end) <= self.chunk_size:
            yield block.start, block.end
            return
        pos = block.start
        for sentence in split_sentences(text[block.start:block.end]):
            span = _trim(text, pos, pos + len(sentence))
            pos += len(sentence)
            if span is None:
                continue
            if self._count(text, *span) <= self.chunk_size:
                yield span
            else:
                yield from self._hard_split(text, *span)

    def _longest_prefix(self, text: str, start: int, end: int) -> int:
        """Largest ``p`` in ``[start, end]`` with ``count(text[start:p]) <= chunk_size``."""
        # Grow a window until it overflows (whitespace counts nothing, so a fixed
        # window could be too short), then binary search inside it.
        hi = min(end, start + self.chunk_size * 8 + 64)
        while hi < end and self._count(text, start, hi) <= self.chunk_size:
            hi = min(end, start + (hi - start) * 2)
        if self._count(text, start, hi) <= self.chunk_size:
            return hi
        lo = start  # invariant: count(lo) <= size < count(hi)
        while hi - lo > 1:
            mid = (lo + hi) // 2
            if self._count(text, start, mid) <= self.chunk_size:
                lo = mid
            else:
                hi = mid
        return lo

    def _hard_split(self, text: str, start: int, end: int) -> Iterator[tuple[int, int]]:
        pos = start
        while pos < end:
            cut = self._longest_prefix(text, pos, end)
            if cut >= end:
                span = _trim(text, pos, end)
                if span is not None:
                    yield span
                return
            cut = max(cut, pos + 1)  # one character over the bound: take it anyway
            half = pos + (cut - pos) // 2
            space = max((text.rfind(ws, half, cut) for ws in (" ", "\n", "\t")), default=-1)
            if space > half:
                cut = space
            span = _trim(text, pos, cut)
            if span is not None:
                yield span
            m = _NON_SPACE_RE.search(text, cut, end)
            pos = m.start() if m else end

    def _overlap_start(self, text: str, prev: tuple[int, int], new_end: int) -> int | None:
        """Where the next chunk starts inside the previous one, so that it repeats at
        most ``chunk_overlap`` tokens and still fits the bound; None for no overlap."""
        if self.chunk_overlap == 0:
            return None
        p_start, p_end = prev

        def fits(p: int) -> bool:
            return (self._count(text, p, p_end) <= self.chunk_overlap
                    and self._count(text, p, new_end) <= self.chunk_size)

        lo, hi = p_start + 1, p_end  # smallest p in [lo, hi] that fits (hi always does)
        while lo < hi:
            mid = (lo + hi) // 2
            if fits(mid):
                hi = mid
            else:
                lo = mid + 1
        p = lo
        # Start at a word: after the next whitespace, unless the text has none there
        # (Chinese), where any character boundary is a fine start.
        if p > p_start and not text[p - 1].isspace():
            m = re.compile(r"\s").search(text, p, p_end)
            if m is not None and not _has_cjk(text[p:m.start()]):
                p = m.start()
        m2 = _NON_SPACE_RE.search(text, p, p_end)
        if m2 is None or not fits(m2.start()):
            return None
        return m2.start()

    # --- packing --------------------------------------------------------------------
    def chunk(self, text: str) -> list[Chunk]:
        """Chunks of ``text`` in document order (empty list for blank text)."""
        if not isinstance(text, str):
            raise InvalidInputError(f"chunk() takes a str, got {type(text).__name__}")
        chunks: list[Chunk] = []
        for section in self._sections(text):
            prev: tuple[int, int] | None = None
            cur: tuple[int, int] | None = None
            for block in section.blocks:
                for u_start, u_end in self._units(text, block):
                    if cur is not None and self._count(text, cur[0], u_end) <= self.chunk_size:
                        cur = (cur[0], u_end)
                        continue
                    if cur is not None:
                        chunks.append(self._make(text, cur, section.path))
                        prev = cur
                    start = u_start
                    if prev is not None:
                        overlap = self._overlap_start(text, prev, u_end)
                        if overlap is not None:
                            start = overlap
                    cur = (start, u_end)
            if cur is not None:
                chunks.append(self._make(text, cur, section.path))
        return chunks

    def _make(self, text: str, span: tuple[int, int], path: str) -> Chunk:
        content = text[span[0]:span[1]]
        return Chunk(content=content, heading_path=path, start=span[0], end=span[1],
                     token_count=self.counter.count(content))


_CJK_RE = re.compile("[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff]")


def _has_cjk(text: str) -> bool:
    return _CJK_RE.search(text) is not None
