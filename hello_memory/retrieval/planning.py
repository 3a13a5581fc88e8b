"""Query planning and reflection for the hybrid retriever (seed 001, stages 1 and 3).

Without an LLM everything here is rule-based and deterministic:

* :func:`analyze_query` pulls keywords, persons, other entities, locations and time
  expressions (resolved to calendar-true ranges against a reference time) out of the
  question and names its type (who / when / where / why / how / what / yes-no / count);
* :func:`decompose` splits a conjunctive question ("What did Alice buy and where did
  Bob go?", "张三去了哪里以及李四买了什么") into its parts, the original always first.

With an LLM, :class:`QueryPlanner` asks for the information requirements and at most
``max_queries`` targeted sub-queries (the original always included), and, after a
retrieval round, whether the results are complete and which gap queries to run. Any
LLM failure falls back to the rule path (logged and counted by ``call_or_fallback``).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import datetime, timezone
from typing import Literal

from pydantic import BaseModel, Field

from hello_memory.llm.base import LLMClient, Message, call_or_fallback
from hello_memory.text import contains_cjk, tokenize
from hello_memory.text.entities import EntityExtractor, RuleExtractor
from hello_memory.text.timeparse import TimeRange, direction_of, find_time_ranges

__all__ = [
    "Completeness",
    "GapQueries",
    "InformationPlan",
    "QueryAnalysis",
    "QueryPlanner",
    "RequiredInfo",
    "TargetedQueries",
    "analyze_query",
    "decompose",
    "first_person_words",
    "is_first_person",
    "question_type",
]

QuestionType = Literal["who", "when", "where", "why", "how", "what", "which", "yesno",
                       "count", "other"]

_QTYPE_EN = (("how many", "count"), ("how much", "count"), ("how often", "count"),
             ("who", "who"), ("whom", "who"), ("whose", "who"), ("when", "when"),
             ("what time", "when"), ("what year", "when"), ("where", "where"), ("why", "why"),
             ("how", "how"), ("which", "which"), ("what", "what"))
_QTYPE_ZH = (("多少", "count"), ("几", "count"), ("谁", "who"), ("什么时候", "when"),
             ("何时", "when"), ("哪天", "when"), ("哪年", "when"), ("哪里", "where"),
             ("哪儿", "where"), ("在哪", "where"), ("为什么", "why"), ("为何", "why"),
             ("怎么", "how"), ("如何", "how"), ("哪", "which"), ("什么", "what"))
_YESNO_EN = re.compile(r"^\s*(?:is|are|was|were|do|does|did|can|could|will|would|has|have|"
                       r"had|should)\b", re.I)
_PERSON_TYPES = {"person", "name"}
_PLACE_TYPES = {"place", "location", "gpe", "loc"}
_FIRST_PERSON_EN = re.compile(r"\b(?:i|me|my|mine|myself|i'm|i've|i'd|i'll)\b", re.I)
# 我 but not 我们 (we): a question about "us" is not about the user alone.
_FIRST_PERSON_ZH = re.compile("我(?!们)")


def first_person_words(query: str) -> list[re.Match[str]]:
    """Where the question refers to the speaker (I / my / me / 我)."""
    return [*_FIRST_PERSON_EN.finditer(query), *_FIRST_PERSON_ZH.finditer(query)]


def is_first_person(query: str) -> bool:
    """Whether the question is asked about the speaker (I / my / me / 我)."""
    return bool(first_person_words(query))


_ASKS_TIME = re.compile(r"\bhow\s+long\s+ago\b|\bsince\s+when\b|\bwhat\s+(?:date|day|month)\b"
                        r"|多久(?:以前|之前|前)|几号|几月", re.I)

_NOT_NAMES = {"what", "when", "where", "who", "why", "how", "which", "did", "does", "do",
              "is", "are", "was", "were", "would", "could", "has", "have", "the", "a", "an"}


class QueryAnalysis(BaseModel):
    """What a question asks for and what constrains it (the symbolic view's input)."""

    query: str
    question_type: QuestionType = "other"
    keywords: list[str] = Field(default_factory=list)
    persons: list[str] = Field(default_factory=list)
    entities: list[str] = Field(default_factory=list)
    locations: list[str] = Field(default_factory=list)
    time_expressions: list[str] = Field(default_factory=list)
    time_ranges: list[tuple[datetime, datetime]] = Field(default_factory=list)
    # "my manager", "我的老板": the question is about the user; ``self_names`` are the
    # names the namespace gave the user ("The user's name is Sofia Chen"), filled in
    # by the retriever from the graph.
    first_person: bool = False
    self_names: list[str] = Field(default_factory=list)
    # People the question's role words refer to ("my husband" -> "Tom Berg"), resolved
    # by the retriever from the namespace's role links (text/people.py).
    resolved: list[str] = Field(default_factory=list)
    resolved_roles: list[str] = Field(default_factory=list)  # canonical roles resolved

    @property
    def has_constraints(self) -> bool:
        return bool(self.persons or self.entities or self.locations or self.time_ranges)

    @property
    def asks_time(self) -> bool:
        """Whether the answer is a time: "when ...?", "what year", "how long ago",
        "什么时候", "哪天", "多久以前" (a memory that says when answers it)."""
        return self.question_type == "when" or bool(_ASKS_TIME.search(self.query))


# "when" asks a time when an auxiliary follows it ("when is", "when did"), when it opens
# the question without a subordinate clause's subject ("when I book, ..." does not), or
# ends it ("since when?"); elsewhere it is a conjunction (issue 26, scores a person can
# read: the when-factor only for questions that ask when).
_ASKS_WHEN_EN = re.compile(
    r"\bwhen(?:'s|\s+(?:is|are|was|were|am|do|does|did|will|would|should|shall|can|could|"
    r"has|have|had|might|must)\b)"
    r"|^\W*when\b(?!\s+(?:i|i'm|you|we|he|she|they|it|my|our|your|his|her|their)\b)"
    r"|\bwhen\W*$")


# The calendar's ends, a day in: a question "since 0001-01-01" at +14:00 is still a
# moment every store can hold in UTC (no OverflowError; issue 28's bad-input rule).
_FIRST_MOMENT = datetime(1, 1, 2, tzinfo=timezone.utc)
_LAST_MOMENT = datetime(9999, 12, 30, tzinfo=timezone.utc)


def _clamped(when: datetime) -> datetime:
    return min(max(when, _FIRST_MOMENT), _LAST_MOMENT)


def question_type(query: str) -> QuestionType:
    """The question's type from its wording (English and Chinese)."""
    low = query.lower()
    if contains_cjk(query):
        for cue, kind in _QTYPE_ZH:
            if cue in query:
                return kind  # type: ignore[return-value]
        if query.rstrip("？?").endswith(("吗", "么")):
            return "yesno"
    for cue, kind in _QTYPE_EN:
        if cue == "when" and not _ASKS_WHEN_EN.search(low):
            continue  # "which seat should I choose when I book?" does not ask when
        if re.search(rf"\b{cue}\b", low):
            return kind  # type: ignore[return-value]
    return "yesno" if _YESNO_EN.match(query) else "other"


def analyze_query(
    query: str,
    reference: datetime,
    *,
    extractor: EntityExtractor | None = None,
    namespace: str = "query",
    known_persons: Sequence[str] = (),
) -> QueryAnalysis:
    """Rule-based analysis: keywords (stopwords out), persons (``known_persons``
    mentioned, and names the extractor types as people), entities, locations, time
    expressions with their ranges resolved against ``reference``."""
    # A question's year-less date is a past one unless its wording looks ahead ("what's
    # on 9 December?", "when is my flight?"): issue 26, time that points the right way.
    ranges: list[TimeRange] = find_time_ranges(query, reference,
                                               direction=direction_of(query, "past"))
    extraction = (extractor or RuleExtractor()).extract(query, namespace)
    persons: list[str] = []
    entities: list[str] = []
    locations: list[str] = []
    low = query.lower()
    for name in known_persons:
        if name and re.search(rf"(?<!\w){re.escape(name.lower())}(?!\w)", low):
            persons.append(name)
    time_words = {r.text.lower() for r in ranges}
    for ent in extraction.entities:
        name = ent.name.strip()
        if not name or name.lower() in _NOT_NAMES or name.lower() in time_words:
            continue
        if ent.type == "time":
            continue
        if ent.type in _PERSON_TYPES and any(p.lower() == name.lower() for p in persons):
            continue
        if ent.type == "person" or (ent.type == "name" and not known_persons):
            persons.append(name)
        elif ent.type in _PLACE_TYPES:
            locations.append(name)
        else:
            entities.append(name)
    keywords = list(dict.fromkeys(tokenize(query, remove_stopwords=True)))
    return QueryAnalysis(
        query=query, question_type=question_type(query), keywords=keywords,
        persons=list(dict.fromkeys(persons)), entities=list(dict.fromkeys(entities)),
        locations=list(dict.fromkeys(locations)),
        time_expressions=[r.text for r in ranges],
        time_ranges=[(_clamped(r.start), _clamped(r.end)) for r in ranges],
        first_person=is_first_person(query))


# A conjunction joins two clauses when a question word or an auxiliary follows it.
_EN_SPLIT = re.compile(r"\s*(?:,\s*)?\b(?:and|as well as|also)\s+(?=(?:what|when|where|who|"
                       r"whom|why|how|which|did|does|do|is|are|was|were|has|have)\b)", re.I)
_ZH_SPLIT = re.compile(r"(?:，|,)?\s*(?:以及|并且|还有|另外|同时)\s*|[；;]\s*")


def decompose(query: str, *, max_parts: int = 4) -> list[str]:
    """The original question followed by its conjunctive parts (at most ``max_parts``
    strings in all); a question with one clause gives ``[query]``."""
    parts = _ZH_SPLIT.split(query) if contains_cjk(query) else _EN_SPLIT.split(query)
    parts = [p.strip(" ,，?？") for p in parts if len(tokenize(p, remove_stopwords=True)) >= 2]
    out = [query]
    if len(parts) > 1:
        out += [p for p in parts if p and p != query]
    return list(dict.fromkeys(out))[:max_parts]


# --- LLM schemas -----------------------------------------------------------------------
class RequiredInfo(BaseModel):
    info_type: str
    description: str = ""
    priority: Literal["high", "medium", "low"] = "medium"


class InformationPlan(BaseModel):
    """Information requirements of a question (seed 001, 3.1)."""

    question_type: str = "general"
    key_entities: list[str] = Field(default_factory=list)
    required_info: list[RequiredInfo] = Field(default_factory=list)
    minimal_queries_needed: int = Field(default=1, ge=1, le=8)


class TargetedQueries(BaseModel):
    queries: list[str] = Field(min_length=1)


class Completeness(BaseModel):
    """The reflection step's verdict on the current results."""

    assessment: Literal["complete", "incomplete", "no_results"]
    coverage_percentage: float = Field(default=0.0, ge=0, le=100)
    missing_info: list[str] = Field(default_factory=list)


class GapQueries(BaseModel):
    queries: list[str] = Field(default_factory=list)


_SYSTEM: Message = {"role": "system", "content": (
    "You plan searches over a personal memory store. Answer with one JSON object only.")}


def _ask(text: str) -> list[Message]:
    return [_SYSTEM, {"role": "user", "content": text}]


class QueryPlanner:
    """LLM planning and reflection with rule-based fallbacks (``llm`` may be None)."""

    def __init__(self, llm: LLMClient | None = None, *, max_queries: int = 4) -> None:
        self.llm = llm
        self.max_queries = max_queries

    def analyze_information_requirements(self, query: str) -> InformationPlan:
        """The information a question needs; fallback: one general requirement."""
        def fallback() -> InformationPlan:
            return InformationPlan(question_type=question_type(query),
                                   required_info=[RequiredInfo(info_type="general",
                                                               description=query)],
                                   minimal_queries_needed=len(decompose(query)))

        prompt = ("Analyse the question. JSON keys: question_type, key_entities (list), "
                  "required_info (list of {info_type, description, priority}), "
                  "minimal_queries_needed (1-4; fewer, more targeted queries are better).\n"
                  f"Question: {query}")
        return call_or_fallback(
            self.llm, lambda c: c.complete_json(_ask(prompt), InformationPlan, temperature=0.2),
            fallback, what="information requirement analysis")

    def generate_targeted_queries(self, query: str, plan: InformationPlan) -> list[str]:
        """At most ``max_queries`` sub-queries, the original always first;
        fallback: :func:`decompose`."""
        def llm_path(c: LLMClient) -> list[str]:
            needs = "; ".join(f"{r.info_type}: {r.description}" for r in plan.required_info)
            prompt = ("Write the minimal set of search queries that retrieve what the "
                      f"question needs. JSON: {{\"queries\": [...]}}.\nQuestion: {query}\n"
                      f"Needed information: {needs or 'general'}")
            return c.complete_json(_ask(prompt), TargetedQueries, temperature=0.2).queries

        queries = call_or_fallback(self.llm, llm_path,
                                   lambda: decompose(query, max_parts=self.max_queries),
                                   what="targeted query generation")
        return _with_original(query, queries, self.max_queries)

    def analyze_completeness(self, query: str, plan: InformationPlan,
                             contents: Sequence[str]) -> Completeness:
        """Whether ``contents`` answer the question; fallback (and an unreadable
        verdict): "incomplete" when there are results, so a round is not skipped
        by mistake; the caller stops anyway when no LLM is configured."""
        if not contents:
            return Completeness(assessment="no_results")

        def fallback() -> Completeness:
            return Completeness(assessment="incomplete")

        numbered = "\n".join(f"[{n}] {c}" for n, c in enumerate(contents[:20], 1))
        needs = "; ".join(r.info_type for r in plan.required_info) or "general"
        prompt = ("Do these memories contain everything needed to answer the question? "
                  "JSON keys: assessment (complete|incomplete), coverage_percentage (0-100), "
                  f"missing_info (list).\nQuestion: {query}\nNeeded: {needs}\n"
                  f"Memories:\n{numbered}")
        return call_or_fallback(
            self.llm, lambda c: c.complete_json(_ask(prompt), Completeness, temperature=0.1),
            fallback, what="completeness check")

    def generate_missing_info_queries(self, query: str, verdict: Completeness,
                                      contents: Sequence[str]) -> list[str]:
        """One to three gap queries; fallback: none (no new round)."""
        def llm_path(c: LLMClient) -> list[str]:
            have = "\n".join(f"- {x}" for x in contents[:10])
            prompt = ("Write 1-3 search queries for the information still missing. "
                      f"JSON: {{\"queries\": [...]}}.\nQuestion: {query}\n"
                      f"Missing: {'; '.join(verdict.missing_info) or 'unknown'}\n"
                      f"Already found:\n{have}")
            return c.complete_json(_ask(prompt), GapQueries, temperature=0.2).queries

        queries: list[str] = call_or_fallback(self.llm, llm_path, lambda: [],
                                              what="gap query generation")
        return [q.strip() for q in queries if q and q.strip() and q.strip() != query][:3]


def _with_original(query: str, queries: Sequence[str], limit: int) -> list[str]:
    out = [query] + [q.strip() for q in queries if isinstance(q, str) and q.strip()]
    return list(dict.fromkeys(out))[:limit]
