"""The heading-aware chunker: structure, bounds, overlap, termination, coverage."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hello_memory.errors import InvalidInputError
from hello_memory.rag.chunker import MarkdownChunker, heading_prefixes
from hello_memory.text.tokens import default_token_counter

COUNT = default_token_counter().count


def covered(text: str, chunks: list) -> None:
    """Every non-whitespace character lies in a chunk span; spans are the content."""
    inside = [False] * len(text)
    for c in chunks:
        assert text[c.start:c.end] == c.content
        assert c.content.strip() == c.content and c.content
        for i in range(c.start, c.end):
            inside[i] = True
    missing = [i for i, ch in enumerate(text) if not ch.isspace() and not inside[i]]
    assert not missing, f"uncovered characters at {missing[:10]}"


def test_heading_paths_and_sections() -> None:
    text = ("# Guide\n\nIntro paragraph.\n\n## Install\n\nRun the installer.\n\n"
            "### Linux\n\nUse the package.\n\n## Use\n\nStart it.\n")
    chunks = MarkdownChunker(50, 10).chunk(text)
    assert [c.heading_path for c in chunks] == [
        "Guide", "Guide > Install", "Guide > Install > Linux", "Guide > Use"]
    assert chunks[1].content == "## Install\n\nRun the installer."
    covered(text, chunks)


def test_heading_without_body_is_carried_into_the_next_section() -> None:
    text = "# Title\n## Part\nBody text here.\n"
    [chunk] = MarkdownChunker(50, 10).chunk(text)
    assert chunk.heading_path == "Title > Part"
    assert chunk.content == text.strip()


def test_hashes_in_code_fences_are_not_headings() -> None:
    text = "# Real\n\n```bash\n# a comment, not a heading\n\necho hi\n```\n\nAfter the code.\n"
    chunks = MarkdownChunker(60, 10).chunk(text)
    assert {c.heading_path for c in chunks} == {"Real"}
    assert "# a comment" in chunks[0].content


def test_paragraphs_pack_up_to_the_bound_with_overlap() -> None:
    paras = [f"Paragraph number {i} talks about topic {i} in a few plain words." for i in range(30)]
    text = "\n\n".join(paras)
    chunker = MarkdownChunker(60, 15)
    chunks = chunker.chunk(text)
    assert len(chunks) > 3
    assert all(c.token_count <= 60 for c in chunks)
    for a, b in zip(chunks, chunks[1:], strict=False):
        assert b.start < a.end, "consecutive chunks share an overlap"
        assert COUNT(text[b.start:a.end]) <= 15
    covered(text, chunks)


def test_large_paragraph_splits_at_sentences() -> None:
    sentences = [f"Sentence {i} is short and ends here." for i in range(40)]
    text = " ".join(sentences)
    chunks = MarkdownChunker(40, 0).chunk(text)
    assert len(chunks) > 1
    for c in chunks:  # cut between sentences, never inside one
        assert c.content.startswith("Sentence") and c.content.endswith("here.")
    covered(text, chunks)


@pytest.mark.timeout(20)
def test_short_paragraph_then_huge_paragraph_terminates() -> None:
    """The reference implementation loops forever here: the overlap carried from a short
    paragraph plus a paragraph larger than a chunk never fits, so it never advances."""
    huge = " ".join(["endless"] * 3000)  # one paragraph, no sentence ends
    text = f"Tiny intro.\n\n{huge}\n\nTiny outro."
    chunks = MarkdownChunker(50, 20).chunk(text)
    assert chunks[0].content.startswith("Tiny intro.")
    assert chunks[-1].content.endswith("Tiny outro.")
    assert all(0 < c.token_count <= 50 for c in chunks)
    pairs = zip(chunks, chunks[1:], strict=False)
    assert all(b.end > a.end for a, b in pairs), "every chunk advances"
    covered(text, chunks)


def test_huge_single_word_and_cjk_are_hard_split_within_bound() -> None:
    text = "x" * 5000 + "\n\n" + "我们在杭州讨论了知识图谱的设计" * 80
    chunks = MarkdownChunker(32, 8).chunk(text)
    assert all(0 < c.token_count <= 32 for c in chunks)
    assert any("杭州" in c.content for c in chunks)
    covered(text, chunks)


def test_blank_input_gives_no_chunks_and_bad_settings_are_refused() -> None:
    assert MarkdownChunker().chunk("  \n\n\t ") == []
    with pytest.raises(InvalidInputError):
        MarkdownChunker(100, 60)
    with pytest.raises(InvalidInputError):
        MarkdownChunker(4, 0)


def test_heading_prefixes() -> None:
    assert heading_prefixes("A > B > C") == ["A", "A > B", "A > B > C"]
    assert heading_prefixes("") == []


_words = st.sampled_from(["alpha", "beta", "数据", "知识图谱", "x" * 40, "3.14", "end.", "！",
                          "gpt-4o", "e.g.", "😀", "\t", "  "])
_lines = st.one_of(
    st.lists(_words, min_size=1, max_size=30).map(" ".join),
    st.builds(lambda n, t: "#" * n + " " + t, st.integers(1, 6), _words),
    st.just("```"), st.just(""), st.text(min_size=1, max_size=60),
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(lines=st.lists(_lines, max_size=40), size=st.integers(8, 80),
       overlap_share=st.floats(0, 0.5))
def test_property_coverage_and_bound(lines: list[str], size: int, overlap_share: float) -> None:
    text = "\n".join(lines)
    overlap = int(size * overlap_share)
    chunks = MarkdownChunker(size, overlap).chunk(text)
    covered(text, chunks)
    assert all(c.token_count == COUNT(c.content) <= size for c in chunks)
    assert all(b.start > a.start for a, b in zip(chunks, chunks[1:], strict=False))
