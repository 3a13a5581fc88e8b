"""The context block: the memories relevant to a query, packed into a token budget for
a prompt (docs/RETRIEVAL.md, "The context block").

:class:`ContextBuilder` is the one builder: :meth:`MemoryTool.get_context_for_query
<hello_memory.interfaces.tools.memory_tool.MemoryTool.get_context_for_query>` and the catalogue's
``context`` operation (REST ``POST /v1/context``, MCP, the CLI) both call it. It lives
apart from :mod:`hello_memory.interfaces.tools.memory_tool`, which is built from the catalogue,
so that the catalogue can build a block without importing the tool back
(docs/ARCHITECTURE.md "Known debts": no import cycle).
"""

from __future__ import annotations

import unicodedata
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

from hello_memory.errors import InvalidInputError
from hello_memory.retrieval.progressive import ProgressiveLoader
from hello_memory.text.tokens import TokenCounter, default_token_counter
from hello_memory.types import MemoryItem, MemoryType
from hello_memory.validation import require_namespace, validate_content

if TYPE_CHECKING:
    from hello_memory.memory.manager import MemoryManager

__all__ = ["CONTEXT_CANDIDATES", "STANDING_SHARE", "ContextBuilder"]

# The most of a context block's budget the standing facts may take.
STANDING_SHARE = 0.15
# How many of the search's hits a context block looks at (whole memories, best first).
CONTEXT_CANDIDATES = 30
CONTEXT_HEADER = "Relevant memories (id, date, type: content):"
STANDING_HEADER = "Standing facts (kept in every context):"
# The block's first line when only standing facts are shown (no longer than the two).
STANDING_ONLY_HEADER = "Standing facts (id, date, type: content), kept in every context:"


def _same_text(a: str, b: str) -> bool:
    """Equal up to Unicode form, case and whitespace (the same turn, typed again)."""
    def norm(text: str) -> str:
        return " ".join(unicodedata.normalize("NFKC", text).casefold().split())
    return norm(a) == norm(b)


class ContextBuilder:
    """Context blocks of one namespace's memories, at most ``context_tokens`` tokens by
    default (``token_counter`` counts them; ``loader`` finds the standing facts)."""

    def __init__(self, manager: MemoryManager, *, namespace: str, context_tokens: int = 1500,
                 token_counter: TokenCounter | None = None,
                 loader: ProgressiveLoader | None = None) -> None:
        if context_tokens < 20:
            raise InvalidInputError("token budgets must be at least 20 tokens")
        self.manager = manager
        self.namespace = require_namespace(namespace)
        self.context_tokens = context_tokens
        self.counter = token_counter or default_token_counter()
        # A lower relevance bar than the loader's default: MiniLM cosines of clearly
        # related sentences often sit between 0.25 and 0.5 (on the project's assistant
        # set, benchmarks/assistant.py, 0.3 left 9 of 76 answers out of the block, 0.25
        # leaves 7; unrelated questions stay under it). A context block also keeps a
        # small share for the standing facts (allergies, preferences, who the user is):
        # they shape answers to questions that never name them.
        self.loader = loader or ProgressiveLoader(manager, token_counter=self.counter,
                                                  relevance_threshold=0.25,
                                                  default_max_tokens=context_tokens,
                                                  standing_share=STANDING_SHARE)

    def build(self, query: str, max_tokens: int | None = None, *,
              reference_time: datetime | None = None, recipe: str | None = None) -> str:
        """A block of the memories relevant to ``query`` to put in a prompt, at most
        ``max_tokens`` tokens (default ``context_tokens``); empty when nothing is.

        The block is the one search's ranking (docs/RETRIEVAL.md, "The context block"):
        ``MemoryManager.search`` with the same ``reference_time`` and ``recipe``, its
        hits in its order when the question's evidence is at least
        ``retrieval.min_score`` (none otherwise), one line per memory
        (``- [handle] date type: content``; the handle is the id's first 8 characters,
        about 6 tokens where the uuid costs 25, and every call that takes an id takes
        it: ``MemoryManager.resolve_id``). Memories are whole: one that does not fit the
        budget left is skipped for the next that does, never cut mid-text. The turn
        being answered (a working-memory turn with the query's text, as
        :meth:`MemoryTool.record_turn` keeps it) is left out, and stored memories come before the
        conversation's own turns. The standing facts (the most important semantic
        memories, at most STANDING_SHARE of the budget) follow under a header of
        their own."""
        validate_content(query, limits=getattr(self.manager, "limits", None))
        budget = self.context_tokens if max_tokens is None else max_tokens
        if isinstance(budget, bool) or not isinstance(budget, int) or budget < 0:
            raise InvalidInputError(f"max_tokens must be a non-negative integer, got {budget!r}")
        # The header and its newline are paid before the lines are packed; the standing
        # facts' header only when standing facts are shown.
        room = budget - self.counter.count(CONTEXT_HEADER) - 1
        if room <= 0:
            return ""
        turn = {i.id for i in self.manager.working.list(self.namespace)
                if _same_text(i.content, query)}
        floor = self.manager.retriever.settings.min_score
        hits = self.manager.search(query, top_k=CONTEXT_CANDIDATES, namespace=self.namespace,
                                   reference_time=reference_time, recipe=recipe)
        # A question nothing plainly answers (its evidence under the floor) gets no
        # memories; one that is answered gets the search's hits in its order, whatever
        # the time / when / subject factors made of their scores (docs/RETRIEVAL.md)
        answered = bool(hits) and hits[0].breakdown.evidence >= floor
        found = [h.item for h in hits if h.id not in turn] if answered else []
        # the conversation itself never outranks what was remembered (a stable sort)
        found.sort(key=lambda i: i.memory_type is MemoryType.WORKING)
        every_standing = self.loader.standing_facts(self.namespace, turn)
        standing = [i for i in every_standing if i.id not in {f.id for f in found}]
        handles = self._handles([*found, *every_standing])
        standing_head = self.counter.count(STANDING_HEADER) + 1
        share = min(int(budget * STANDING_SHARE), room - standing_head)
        standing_lines, used = self._pack(standing, share, handles)
        relevant, relevant_used, shown = self._pack_ids(
            found, room - (used + standing_head if standing_lines else 0), handles)
        if relevant:
            # a standing fact the search found but the relevant lines had no room for
            # is still a standing fact: packed again, leaving out only what is shown
            again = [i for i in every_standing if i.id not in shown]
            standing_lines, _ = self._pack(again, min(share, room - relevant_used
                                                      - standing_head), handles)
        if not relevant:
            # without the first header, the standing facts may use its room too
            only = budget - self.counter.count(STANDING_ONLY_HEADER) - 1
            lines = self._pack(standing, only, handles)[0] if standing and only > 0 else []
            return "\n".join([STANDING_ONLY_HEADER, *lines]) if lines else ""
        return "\n".join([CONTEXT_HEADER, *relevant,
                          *([STANDING_HEADER, *standing_lines] if standing_lines else [])])

    def _handles(self, items: Sequence[MemoryItem]) -> dict[str, str]:
        """Every line's handle, read once for the block (one statement;
        docs/PERFORMANCE.md, "Short handles")."""
        return self.manager.short_ids([i.id for i in items], namespace=self.namespace)

    def _pack(self, items: Sequence[MemoryItem], room: int, handles: Mapping[str, str]
              ) -> tuple[list[str], int]:
        """The lines of ``items``, in order, that fit ``room`` tokens whole (one that does
        not fit is skipped for the next that does), and the tokens they take; each
        memory named by its handle in ``handles``."""
        lines, used, _ = self._pack_ids(items, room, handles)
        return lines, used

    def _pack_ids(self, items: Sequence[MemoryItem], room: int, handles: Mapping[str, str]
                  ) -> tuple[list[str], int, set[str]]:
        """``_pack``, and the ids of the memories it packed."""
        lines: list[str] = []
        used = 0
        packed: set[str] = set()
        for item in items:
            line = self._context_line({"id": handles[item.id],
                                       "type": item.memory_type.value,
                                       "layer": "full", "content": item.content,
                                       "event_time": item.event_time})
            cost = self.counter.count(line) + 1  # and its newline
            if used + cost <= room:
                lines.append(line)
                used += cost
                packed.add(item.id)
        return lines, used, packed

    def _context_line(self, entry: Mapping[str, Any]) -> str:
        content = " ".join(str(entry["content"]).split())
        if entry["layer"] != "timeline":  # a timeline line already starts "date type: "
            content = (f"{entry['event_time'].date().isoformat()} {entry['type']}: "
                       f"{content}")
        return f"- [{entry['id']}] {content}"
