"""Grounded answers: pack whole chunks under a token budget, ask the LLM to answer
from them with numbered citations, or return the ranked passages when there is no LLM.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from hello_memory.llm.base import LLMClient, Message, call_or_fallback
from hello_memory.rag.types import Answer, Citation, RAGHit
from hello_memory.text.tokens import TokenCounter

__all__ = ["answer_question", "pack_context", "passage_block"]

_CITE_RE = re.compile(r"\[(\d{1,3})\]")

SYSTEM_PROMPT = (
    "You answer questions using only the numbered passages you are given. Cite every "
    "statement with the number of its passage in square brackets, e.g. [1] or [2][3]. If "
    "the passages do not contain the answer, say that you do not know. Answer in the "
    "language of the question."
)


def passage_block(number: int, hit: RAGHit) -> str:
    """How passage ``number`` appears in the prompt (and in the LLM-free answer)."""
    return f"[{number}] {hit.citation}\n{hit.content}"


def pack_context(hits: Sequence[RAGHit], budget: int, counter: TokenCounter
                 ) -> tuple[list[RAGHit], int]:
    """Whole chunks in rank order while they fit ``budget`` tokens (a chunk that does
    not fit is passed over for a smaller one further down); never a cut chunk."""
    packed: list[RAGHit] = []
    used = 0
    for hit in hits:
        cost = counter.count(passage_block(len(packed) + 1, hit)) + 2  # + separator
        if used + cost <= budget:
            packed.append(hit)
            used += cost
    return packed, used


def _citations(passages: Sequence[RAGHit], numbers: Sequence[int]) -> list[Citation]:
    return [Citation(n, passages[n - 1].source, passages[n - 1].heading_path,
                     passages[n - 1].chunk_id, passages[n - 1].document_id,
                     passages[n - 1].name) for n in numbers]


def _extractive(question: str, passages: Sequence[RAGHit], used: int, why: str) -> Answer:
    blocks = "\n\n".join(passage_block(i, h) for i, h in enumerate(passages, 1))
    text = f"{why} The most relevant passages for \"{question}\":\n\n{blocks}"
    return Answer(text=text, citations=_citations(passages, range(1, len(passages) + 1)),
                  passages=list(passages), used_llm=False, context_tokens=used)


def answer_question(question: str, hits: Sequence[RAGHit], *, llm: LLMClient | None,
                    budget: int, counter: TokenCounter, no_answer: str | None = None
                    ) -> Answer:
    """The answer to ``question`` from ``hits`` (ranked, best first). ``no_answer``
    says why there is no LLM answer (else: no LLM is configured) or, with no hits,
    why none is left."""
    passages, used = pack_context(hits, budget, counter)
    if not passages:
        why = (no_answer or "No indexed passage matches the question." if not hits else
               f"No passage fits the context budget of {budget} tokens.")
        return Answer(text=why, citations=[], passages=[], used_llm=False, context_tokens=0)
    context = "\n\n".join(passage_block(i, h) for i, h in enumerate(passages, 1))
    messages: list[Message] = [
        {"role": "system", "content": SYSTEM_PROMPT},
        {"role": "user", "content": f"Passages:\n\n{context}\n\nQuestion: {question}"},
    ]
    text = call_or_fallback(llm, lambda c: c.complete(messages).strip(), lambda: "",
                            what="grounded answer")
    if not text:
        why = ((no_answer or "No LLM is configured.") if llm is None
               else "The LLM gave no answer, so here are the passages instead.")
        return _extractive(question, passages, used, why)
    cited = sorted({int(n) for n in _CITE_RE.findall(text) if 1 <= int(n) <= len(passages)})
    numbers = cited or list(range(1, len(passages) + 1))
    return Answer(text=text, citations=_citations(passages, numbers), passages=list(passages),
                  used_llm=True, context_tokens=used)
