"""The retrieval views: semantic, lexical, symbolic and graph (ARCHITECTURE decision 2).

Each view turns a :class:`ViewRequest` into a ranked list of ``(memory_id, score)``:

* **semantic** - dense cosine search for every (sub-)query; a memory keeps its best
  cosine over the queries.
* **lexical** - BM25 (the sparse vector in Qdrant, en + zh tokenisation) for every
  (sub-)query; a memory keeps its best BM25 score. Person names weigh less and never
  match alone (see :func:`lexical_query`).
* **symbolic** - the question's constraints. Time ranges and a session are hard filters
  run as a filtered dense search; persons, entities and locations are matched against
  the records of the candidate pool (speaker / persons / participants metadata, the
  user id, words of the content), because the vector payload does not carry them.
  Matches are ranked by how many constraints they meet, then by their cosine.
* **graph** - the entity neighbourhood of the question's names in the graph store:
  memories that link two of them or are about a neighbour of one, weighted by how
  specific each name is (see :func:`graph_view`).

A view with no constraint to work on (no time range, person, entity or location for
the symbolic view; no known entity for the graph view) returns nothing rather than
noise. Filters given by the caller (memory types, user, session, time range, minimum
importance) apply to every view.
"""

from __future__ import annotations

import math
import re
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import timedelta
from functools import cached_property, lru_cache
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from hello_memory.memory.episodic import payload_filters
from hello_memory.memory.scoring import graph_proximity
from hello_memory.ports.vector import VectorFilter
from hello_memory.retrieval.bounds import bounded_terms
from hello_memory.retrieval.fusion import ViewResult
from hello_memory.retrieval.planning import QueryAnalysis
from hello_memory.stores.bundle import DENSE, MEMORY_COLLECTION, Stores
from hello_memory.stores.records import ItemFilter
from hello_memory.text import contains_cjk
from hello_memory.text.attributes import asked_attributes, attributes_of, subjects_of
from hello_memory.text.bm25 import BM25_VECTOR, term_index
from hello_memory.text.people import ROLE_WORDS, SELF_ENTITY, canonical_role, without_title
from hello_memory.types import MemoryItem, SparseVector, normalize_entity_name

if TYPE_CHECKING:
    from hello_memory.retrieval.parts import SearchParts

__all__ = [
    "NAME_TERM_WEIGHT", "VIEW_NAMES", "ViewRequest", "graph_view", "lexical_query",
    "about_named", "about_someone_else", "about_subject", "lexical_view", "person_matches",
    "semantic_view", "symbolic_constraint_view", "symbolic_pool_view",
]

VIEW_NAMES = ("semantic", "lexical", "symbolic", "graph")
_MICRO = timedelta(microseconds=1)
_PERSON_KEYS = ("speaker", "persons", "participants", "person", "author")


@dataclass(frozen=True)
class ViewRequest:
    """What every view gets: the namespace, the queries (original first), their dense
    vectors (None when no embedder is used), the analysis of the original question,
    the caller's filter and how many candidates each view returns.

    ``flt`` is the one filter of a search, from the facade to the views (issue 31):
    a view that searches vectors reads it in the vector store's form through
    :attr:`filters` (``payload_filters(flt)``); one that reads records checks ``flt``
    on them. ``question`` is the caller's own query (default: the first of
    ``queries``); ``parts`` lends the memory types' parts to the views that search
    them (retrieval/memory_views.py)."""

    namespace: str
    queries: Sequence[str]
    vectors: Sequence[npt.NDArray[np.float32]] | None
    analysis: QueryAnalysis
    flt: ItemFilter = field(default_factory=ItemFilter)
    limit: int = 50
    min_similarity: float = 0.0  # the semantic view's cosine floor
    # The symbolic view runs beside the graph view and counts who a memory names.
    symbolic: bool = False
    question: str = ""
    parts: SearchParts | None = None
    # the namespace holds active memories only (the retriever's _all_active): the
    # vector queries leave the status condition out (payload_filters)
    all_active: bool = False

    def __post_init__(self) -> None:
        if not self.question and self.queries:
            object.__setattr__(self, "question", self.queries[0])

    @cached_property
    def filters(self) -> VectorFilter:
        """``flt`` in the vector store's form (memory/episodic.py ``payload_filters``),
        derived once per request and passed through as it is."""
        return payload_filters(self.flt, all_active=self.all_active)


def _best(lists: Sequence[Sequence[tuple[str, float]]]) -> list[tuple[str, float]]:
    best: dict[str, float] = {}
    for hits in lists:
        for memory_id, score in hits:
            if memory_id not in best or score > best[memory_id]:
                best[memory_id] = score
    return sorted(best.items(), key=lambda kv: -kv[1])


def _dense(stores: Stores, req: ViewRequest, vector: npt.NDArray[np.float32],
           filters: VectorFilter, limit: int,
           ids: Sequence[str] | None = None, *, positive: bool = True
           ) -> list[tuple[str, float]]:
    hits = stores.vectors.nearest(MEMORY_COLLECTION, vector.tolist(), namespace=req.namespace,
                                 using=DENSE, limit=limit, filters=filters,
                                 ids=ids, with_payload=False)  # ids and scores are all a view reads
    # A non-positive cosine is no evidence of relevance (as in the memory types), unless
    # another constraint (a time range) is the evidence and the cosine only orders.
    return [(h.id, h.score) for h in hits if h.score > 0 or not positive]


def semantic_view(stores: Stores, req: ViewRequest) -> ViewResult:
    if not req.vectors:
        return []
    best = _best([_dense(stores, req, v, req.filters, req.limit) for v in req.vectors])
    return [(m, s) for m, s in best if s >= req.min_similarity][: req.limit]


# How much a query term that is (part of) a person's name counts in the lexical view,
# against 1 for every other term: a name or possessive alone ("Anna's") must not win,
# but among memories that match the question's other words, naming the person helps.
NAME_TERM_WEIGHT = 0.5


def _sparse_search(stores: Stores, req: ViewRequest, terms: Mapping[int, float],
                   filters: VectorFilter, limit: int,
                   ids: Sequence[str] | None = None) -> list[tuple[str, float]]:
    terms = bounded_terms(terms)  # one search's work stays bounded (bounds.py)
    indices = sorted(terms)
    sparse = SparseVector(tuple(indices), tuple(terms[i] for i in indices))
    hits = stores.vectors.nearest(MEMORY_COLLECTION, sparse, namespace=req.namespace,
                                 using=BM25_VECTOR, limit=limit,
                                 filters=filters, ids=ids, with_payload=False)
    return [(h.id, h.score) for h in hits if h.score > 0]


def name_terms(stores: Stores, persons: Sequence[str]) -> set[int]:
    """Lexical term indices of the words of the question's person names."""
    return {term_index(t) for p in persons for t in stores.lexical.terms(p)}


def without_times(query: str, analysis: QueryAnalysis) -> str:
    """``query`` without the time expressions the planner resolved: "last", "next
    week", 上周 are the symbolic view's constraints, not words to match ("last" would
    find "lasts"; issue 26)."""
    for expression in analysis.time_expressions:
        if expression:
            query = query.replace(expression, " ")
    return query


def lexical_query(stores: Stores, req: ViewRequest, query: str,
                  filters: VectorFilter, limit: int) -> list[tuple[str, float]]:
    """BM25 for one query in which the words of the question's person names weigh
    :data:`NAME_TERM_WEIGHT` and cannot match alone: candidates come from the other
    words, then are scored with the names too. The people the question's role words
    refer to ("my husband" -> Tom Berg) join at the names' weight and may find
    candidates: naming them is what answers the question. A query of names only is
    plain BM25."""
    terms = {term_index(t) for t in stores.lexical.terms(without_times(query, req.analysis))}
    if not terms:
        terms = {term_index(t) for t in stores.lexical.terms(query)}
    if not terms:
        return []
    resolved = name_terms(stores, req.analysis.resolved)
    names = (terms & name_terms(stores, req.analysis.persons)) - resolved
    content = terms - names - resolved
    if not names and not resolved or not content and not resolved:
        return _sparse_search(stores, req, dict.fromkeys(terms, 1.0), filters, limit)
    found = _sparse_search(stores, req, dict.fromkeys(content | resolved, 1.0), filters, limit)
    if not found:
        return []
    weights = {**dict.fromkeys(names | resolved, NAME_TERM_WEIGHT),
               **dict.fromkeys(content, 1.0)}
    return _sparse_search(stores, req, weights, filters, len(found), ids=[m for m, _ in found])


def lexical_view(stores: Stores, req: ViewRequest) -> ViewResult:
    lists = [lexical_query(stores, req, q, req.filters, req.limit) for q in req.queries]
    return _best(lists)[: req.limit]


def _within(flt: ItemFilter, lo: Any, hi: Any) -> ItemFilter | None:
    """``flt`` with its event-time range intersected with [lo, hi]; None if empty."""
    lo = max(lo, flt.since) if flt.since is not None else lo
    hi = min(hi, flt.until) if flt.until is not None else hi
    return replace(flt, since=lo, until=hi) if lo <= hi else None


# At most this many memories whose text mentions a time in a question's range are
# ranked by the symbolic view (the latest mentions first).
MENTION_CANDIDATES = 1000


def symbolic_constraint_view(stores: Stores, req: ViewRequest) -> ViewResult:
    """Hard constraints (time ranges): memories inside a question's time range, by
    cosine (or BM25 without vectors). Nothing when the question names no time.

    A memory is inside the range when its event time is, or when its text mentions a
    time overlapping it (``hm_memory_times``, resolved when it was written: "I went
    there yesterday", said on 2023-05-08, is inside "7 May 2023"; issue 15)."""
    if not req.analysis.time_ranges:
        return []
    lists = []
    for start, end in req.analysis.time_ranges:
        # Ranges are half-open; the store's range (Between) is inclusive: stop a microsecond early.
        within = _within(req.flt, start, end - _MICRO)
        if within is not None:
            # the store's form, as for req.filters
            filters = payload_filters(within, all_active=req.all_active)
            if req.vectors:
                lists.append(_dense(stores, req, req.vectors[0], filters, req.limit,
                                    positive=False))
            else:
                lists.append(lexical_query(stores, req, req.queries[0], filters, req.limit))
        mentioned = stores.records.memories.mentioning(req.namespace, start, end,
                                                       limit=MENTION_CANDIDATES)
        if not mentioned:
            continue
        if req.vectors:  # the caller's filters (payload) still hold
            lists.append(_dense(stores, req, req.vectors[0], req.filters, req.limit,
                                ids=mentioned, positive=False))
        else:
            terms = {term_index(t) for t in stores.lexical.terms(req.queries[0])}
            if terms:
                lists.append(_sparse_search(stores, req, dict.fromkeys(terms, 1.0),
                                            req.filters, req.limit, ids=mentioned))
    return _best(lists)[: req.limit]


def _same_person(a: str, b: str) -> bool:
    """Equal names, or a one-word name that is the other's first name ("Tom" and
    "Tom Berg"): person aliases within a namespace (docs/RETRIEVAL.md)."""
    a, b = normalize_entity_name(a), normalize_entity_name(b)
    if a == b:
        return True
    if (" " in a) == (" " in b):
        return False
    return a.split(" ", 1)[0] == b.split(" ", 1)[0]


def person_matches(item: MemoryItem, persons: Sequence[str]) -> bool:
    """Whether ``item`` is about one of ``persons``: its speaker / persons /
    participants metadata or user id names them, a first name matching a full name
    (the content alone does not count: a person merely mentioned is the lexical
    view's business)."""
    if item.user_id and any(_same_person(item.user_id, p) for p in persons):
        return True
    for key in _PERSON_KEYS:
        value = item.metadata.get(key)
        values = value if isinstance(value, (list, tuple)) else [value]
        # A memory listing everyone (e.g. all participants of a chat) singles out no one.
        if key != "speaker" and len(values) > 1:
            continue
        if any(isinstance(v, str) and any(_same_person(v, p) for p in persons)
               for v in values):
            return True
    return False


def _mentions(item: MemoryItem, names: Sequence[str]) -> int:
    """How many of ``names`` the content mentions: as whole words, or for Chinese
    (written without spaces) anywhere."""
    low = item.content.lower()
    return sum(1 for n in names if (n in item.content if contains_cjk(n) else re.search(
        rf"(?<!\w){re.escape(n.lower())}(?!\w)", low)))


# The user, named without a name: "The user ...", "the user's", "I", "my", "我".
_SELF_REFERENCE = re.compile(r"\b(?:the user|user's|i|i'm|i've|my|me|mine|myself)\b|我(?!们)",
                             re.I)


def _has_person_metadata(item: MemoryItem) -> bool:
    return bool(item.user_id) or any(item.metadata.get(k) for k in _PERSON_KEYS)


def _names_in(item: MemoryItem, persons: Sequence[str]) -> bool:
    """The content names one of ``persons``; a full name also by its first name alone
    ("Tom" for Tom Berg, but not "Tom Hanks")."""
    bare = [without_title(p) for p in persons]
    if _mentions(item, bare):
        return True
    for name in bare:
        first, _, rest = name.partition(" ")
        if rest and not contains_cjk(first) and re.search(
                rf"(?<!\w)(?i:{re.escape(first)})(?!\w)(?!\s+[A-Z][a-z])", item.content):
            return True
        if not rest and _mentions(item, [name]):
            return True
    return False


_PARENT_WORDS = {"mum", "mom", "mummy", "mommy", "mama", "dad", "daddy", "papa"}


@lru_cache(maxsize=256)
def _role_words(roles: tuple[str, ...]) -> tuple[re.Pattern[str] | None, tuple[str, ...]]:
    """The words of ``roles`` (ROLE_WORDS, fixed at import): the English ones as one
    pattern, the others as they are. Cached: a search asks this of every candidate
    with the same roles, and walking ROLE_WORDS each time was a share of its cost
    (issue 27, docs/PERFORMANCE.md "Other fast paths")."""
    words = [w for w, r in ROLE_WORDS.items() if r in roles]
    en = [w for w in words if not contains_cjk(w)]  # "fiancée" too (text/people.py)
    # "Mum loves gardenias": a parent's word, capitalised, is the user's parent's name
    bare = [w.capitalize() for w in en if w in _PARENT_WORDS]
    pattern = re.compile(r"\b(?:my|her|his|our|the user's)\s+(?:" + "|".join(en) + r")\b"
                         + (r"|(?-i:\b(?:" + "|".join(bare) + r")\b)" if bare else ""),
                         re.I) if en else None
    return pattern, tuple(w for w in words if contains_cjk(w))


def _names_role(item: MemoryItem, roles: Sequence[str]) -> bool:
    """The content calls someone by one of ``roles`` as the user's ("妈妈", "her
    mother", "the user's husband"; not "Tom's boss" or "李伟的老婆"): for a resolved
    role, a memory that says "妈妈" is about the person resolved."""
    if not roles:
        return False
    en, others = _role_words(tuple(roles))
    if en is not None and en.search(item.content):
        return True
    for word in others:
        for m in re.finditer(re.escape(word), item.content):
            owner = re.search("([\u4e00-\u9fff]{1,3})的$", item.content[:m.start()])
            if owner is None or owner.group(1).endswith(("我", "用户", "我们")):
                return True
    return False


def _about(item: MemoryItem, persons: Sequence[str]) -> bool:
    if not persons:
        return False
    if person_matches(item, persons):
        return True
    return not _has_person_metadata(item) and _names_in(item, persons)


def about_subject(item: MemoryItem, analysis: QueryAnalysis) -> int:
    """How many of the question's subjects ``item`` is about (0-3): the persons it
    names (person metadata, or for a memory without any, its content naming them),
    the people its role words refer to ("my husband" -> Tom Berg), and for a
    first-person question the user (a self-reference, or a name the namespace gave the
    user). "Who is my manager?" then prefers "The user reports to Raj" (the user and
    Raj) over "Tom's manager is Lena", and "What does Mia refuse to eat?" Mia's."""
    met = 1 if _about(item, analysis.persons) else 0
    met += 1 if (_about(item, analysis.resolved)
                 or _names_role(item, analysis.resolved_roles)) else 0
    if analysis.first_person and (_about_user(item) or _about(item, analysis.self_names)):
        met += 1
    return met


_THIRD_PERSON_LEAD = re.compile(r"^\W*(?:he|she|they|his|her|their|its?)\b", re.I)


def _about_user(item: MemoryItem) -> bool:
    """Whether the text is about the user: "I", "we", "my phone", "我", a note with its
    subject left out ("Went bouldering with Priya"), but not "my sister Anna works at
    ..." (that is the sister's fact). One reading of who a memory is about, shared with
    the superseder (text/attributes.py ``subjects_of``; issue 26)."""
    if _THIRD_PERSON_LEAD.search(item.content):
        return False
    return SELF_ENTITY in subjects_of(item.content[:2000])


# Someone a memory is about, by name: "Anna's manager ...", "Tom plays ...".
# A capitalised word opening a sentence is a subject only when a verb follows it ("Tom
# plays", "Anna is", "Priya moved"): "Went bouldering with Priya" and "Dentist on 9
# December" are the user's own notes with the subject left out (issue 26).
_NAMED_SUBJECT = re.compile(r"(?:^|[.;!?]\s+)(?P<lead>[A-Z][a-z]+(?:\s+[A-Z][a-z]+)?)"
                            r"(?=\s+(?:is|was|has|had|will|can|does|did|and|[a-z]+(?:s|ed))\b)"
                            r"|\b(?P<own>[A-Z][a-z]+(?:\s+[A-Z][a-z]+)?)['’]s\b")
_NOT_SUBJECTS = {"the", "a", "an", "this", "that", "these", "those", "when", "where", "while",
                 "after", "before", "at", "in", "on", "if", "we", "i", "it", "they", "she", "he",
                 "her", "his", "our", "my", "there", "then", "yesterday", "today", "last"}


def about_named(item: MemoryItem, analysis: QueryAnalysis) -> bool:
    """Whether ``item`` is about a person the question names or its role words reach
    ("Ines", "my niece" -> Lily); the user does not count."""
    return bool(_about(item, analysis.persons) or _about(item, analysis.resolved)
                or _names_role(item, analysis.resolved_roles))


def _about_kin_only(item: MemoryItem, analysis: QueryAnalysis) -> bool:
    """Whether every subject of ``item`` is kin of a person the question names, through a
    role the question does not ask about: "Daniel's brother Felix works as a sound
    engineer" is Felix's job, not Daniel's ("what does Daniel do for a living?")."""
    subjects = subjects_of(item.content[:2000])
    if not subjects or not all(":" in s for s in subjects):
        return False
    names = {n for p in analysis.persons for n in
             (normalize_entity_name(p), normalize_entity_name(p).split(" ", 1)[0])}
    asked = {canonical_role(r) for r in analysis.resolved_roles}
    question = analysis.query.casefold()
    return all(owner in names and canonical_role(role) not in asked
               and role.casefold() not in question
               for owner, role in (s.split(":", 1) for s in subjects))


def about_someone_else(item: MemoryItem, analysis: QueryAnalysis) -> bool:
    """Whether ``item`` is plainly about a person the question does not ask about:
    the question has a subject (a person, a role, the user), the memory is about none
    of them and names someone else as its subject ("Anna's manager is Priya" for
    "who is my manager?"). Memories with person metadata are judged by it elsewhere."""
    if not (analysis.persons or analysis.resolved or analysis.first_person
            or analysis.resolved_roles):
        return False
    if _has_person_metadata(item):
        return False
    if analysis.persons and _about_kin_only(item, analysis):
        return True
    if (analysis.resolved_roles and not (analysis.persons or analysis.resolved
                                         or analysis.first_person)
            and subjects_of(item.content[:2000]) == {SELF_ENTITY}):
        # "妈妈喜欢什么花？" (no name known for mum) is not answered by the user's own
        # "我最喜欢吃妈妈做的红烧肉", which mentions her but is about the user
        return True
    if about_subject(item, analysis):
        return False
    if analysis.resolved_roles and not analysis.persons:
        # "When was my niece born?" is not answered by "妈妈的生日是11月8号": a memory
        # whose only subjects are kin the question's roles do not pass through
        subjects = subjects_of(item.content[:2000])
        if subjects and all(s.startswith("role:") for s in subjects) and not subjects & {
                f"role:{canonical_role(r)}" for r in analysis.resolved_roles}:
            return True
    if not analysis.first_person and (_about_user(item)
                                      or _about(item, analysis.self_names)):
        return True  # about the user, and the question is about someone else
    if analysis.first_person and not analysis.persons and not analysis.resolved:
        return True  # "where do I work?" is not answered by "My sister Anna works at ..."
    for m in _NAMED_SUBJECT.finditer(item.content):
        name = m.group("lead") or m.group("own")
        if name and name.split(" ", 1)[0].casefold() not in _NOT_SUBJECTS:
            return True
    return False


def symbolic_pool_view(items: Sequence[MemoryItem], order: Mapping[str, float],
                       analysis: QueryAnalysis, timed: Collection[str] = ()) -> ViewResult:
    """Soft constraints (the subject person, entities, locations) checked on the
    records of the candidate pool. ``order`` is the pool's relevance so far (higher
    first), used to rank memories that meet the same number of constraints.

    A question asking for a time ("when did ...?", "什么时候") is answered by a memory
    that says when: the memories in ``timed`` (their text mentions a time,
    ``hm_memory_times``; issue 15) meet one constraint more."""
    names = [*analysis.entities, *analysis.locations]
    asks_time = analysis.asks_time and bool(timed)
    # "What car do I drive?" asks for an attribute: a memory stating it ("Sold the
    # Yaris and picked up a Zoe") meets one constraint more (text/attributes.py; issue 26)
    asked = asked_attributes(analysis.query)
    if not (analysis.persons or analysis.first_person or analysis.resolved or names
            or asks_time or asked):
        return []
    scored = []
    for item in items:
        met = about_subject(item, analysis)
        met += _mentions(item, names)
        if asks_time and item.id in timed:
            met += 1
        if asked and asked & attributes_of(item.content[:2000]):
            met += 1
        if met:
            scored.append((item.id, float(met), order.get(item.id, 0.0)))
    scored.sort(key=lambda t: (-t[1], -t[2]))
    return [(memory_id, met) for memory_id, met, _ in scored]


# A name linked to at most this many memories singles them out: naming it is evidence
# enough ("tell me about Pixel"). A name more memories mention (the user, a partner)
# says only who a memory is about, which the lexical and symbolic views already see.
SPECIFIC_MENTIONS = 3
# A name more memories than this mention gives no graph evidence at all (see graph_view).
HUB_MENTIONS = 100


def _graph_groups(stores: Stores, req: ViewRequest, wanted: list[list[str]],
                  max_hops: int) -> tuple[list[dict[str, float]], list[set[str]], list[bool]]:
    """Each group of names walked through the graph (``graph_view``'s part): the
    memories it reaches with their proximity, those naming it directly, and whether it
    is a person the question names; a group the graph does not know, or a hub, is left
    out."""
    persons = set(req.analysis.persons)
    groups: list[dict[str, float]] = []
    direct: list[set[str]] = []
    of_person: list[bool] = []
    for aliases in wanted:
        seeds = stores.graph.find_entities(req.namespace, aliases, aliases=True)
        if not seeds:
            continue
        seed_ids = [e.id for e in seeds]
        # A name this many memories mention is a hub: its neighbourhood is most of the
        # namespace and singles nothing out, and walking it costs what the rest of the
        # search costs (docs/PERFORMANCE.md). One cheap read of the seeds decides.
        if len(stores.graph.memory_ids_for_entities(req.namespace, seed_ids)) > HUB_MENTIONS:
            continue
        best = graph_proximity(stores.graph, req.namespace, seed_ids, max_hops=max_hops)
        groups.append(best)
        direct.append({m for m, value in best.items() if value == 1.0})  # hops 0: 1 / (1 + 0)
        of_person.append(aliases[0] in persons)
    return groups, direct, of_person


def graph_view(stores: Stores, req: ViewRequest, *, max_hops: int = 2) -> ViewResult:
    """Relational evidence from the entity graph (only semantic memories feed it).

    Each name of the question (person, entity or location; a first name also finds
    the full name and back) is one *group* of start entities. Within a group a memory
    scores ``1 / (1 + hops)`` of its nearest linked entity; the groups add up, each
    weighted by its specificity, an IDF over the memories the search reached
    (``ln(1 + reached / mentioning)``, scaled so the rarest group counts 1): a name
    that every memory mentions says little. A memory whose only evidence is naming one
    of the question's names directly gets nothing here when that name is a person the
    question is about and the symbolic view runs (it counts such mentions), or more than
    :data:`SPECIFIC_MENTIONS` memories name it: "mentions Anna" is no answer to "who
    is Anna's manager?" (the lexical and symbolic views see mentions), so the graph
    then votes only for memories that link two of the question's names, or that are
    about a neighbour of one (multi-hop: "Anna's husband" -> his employer). A name
    more than :data:`HUB_MENTIONS` memories mention is left out altogether.
    """
    # One group per person or thing; the user's names are one person.
    wanted: list[list[str]] = [[n] for n in dict.fromkeys(
        [*req.analysis.persons, *req.analysis.entities, *req.analysis.locations])]
    selfish = (req.analysis.first_person and not req.analysis.persons
               and bool(req.analysis.self_names))
    if selfish:
        wanted.append(list(req.analysis.self_names))
    if not wanted:
        return []
    groups, direct, of_person = _graph_groups(stores, req, wanted, max_hops)
    if not groups:
        return []
    total = len(set().union(*groups))
    idf = [math.log(1 + total / max(1, len(d))) for d in direct]
    top = max(idf) or 1.0
    totals: dict[str, float] = {}
    for best, weight in zip(groups, idf, strict=True):
        for memory_id, value in best.items():
            totals[memory_id] = totals.get(memory_id, 0.0) + weight / top * value
    evidence = {m: sum(1 for g in groups if m in g) for m in totals}
    # Naming the user is never news in a first-person question: it is the last group.
    # Naming a person the question is about is the symbolic view's evidence when it runs
    # (it matches the people of every memory, of every type); counted here too, it lifts the
    # memories that feed the graph (semantic ones) over the answer ("where does Alice
    # live?": "Alice prefers green tea" over "Alice moved to Berlin").
    common = [d for n, d in enumerate(direct) if len(d) > SPECIFIC_MENTIONS
              or (selfish and n == len(direct) - 1) or (req.symbolic and of_person[n])]
    only_direct = {m for m in totals if evidence[m] == 1 and any(m in d for d in common)}
    ranked = [(m, s) for m, s in totals.items() if m not in only_direct]
    return sorted(ranked, key=lambda kv: (-kv[1], kv[0]))[: req.limit]
