"""Who a question is about: the part of :class:`~hello_memory.retrieval.hybrid.HybridRetriever`
that reads the user's names and the people a question's role words refer to from the
graph, before the views run (docs/RETRIEVAL.md, "Who a question is about"; text/people.py).

``HybridRetriever`` inherits :class:`PeopleMixin`; the code is the retriever's own,
kept here so that no module of the search runs over 600 lines (issue 31).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any, TypeVar

from hello_memory.retrieval.planning import first_person_words
from hello_memory.text import tokenize
from hello_memory.text.people import (
    ROLE_WORDS,
    SELF_ENTITY,
    asked_roles,
    canonical_role,
    role_key,
    without_title,
)
from hello_memory.types import GraphHit, MemoryStatus

if TYPE_CHECKING:
    from hello_memory.retrieval._hybrid_state import RetrievalPlan
    from hello_memory.stores.bundle import Stores

T = TypeVar("T")

# "my old team lead", "my former boss", "my manager's predecessor", "我以前的老板": a
# role asked about in the past reaches every person it linked to, replaced or not
_PAST_ROLE = re.compile(r"\b(?:old|former|previous|ex|predecessor)\b|ex-|以前|之前|原来|前任",
                        re.I)
# what follows a role that owns the thing asked about: "my boss's dog", "我老板的狗"
_POSSESSIVE = re.compile(r"['’]s\b|的")


# Words that ask for a person without asking anything about them.
_ONLY_ASKING = frozenset(["who", "whom", "whose", "what", "whats", "name", "names",
                          "called", "call", "tell", "谁", "叫", "什么", "名字", "是"])


def _asks_about(question: str, names: Sequence[str]) -> bool:
    """Whether ``question`` (with ``names`` put in) asks something about them beyond
    who they are."""
    name_words = {t for n in names for t in tokenize(n)}
    return any(t not in _ONLY_ASKING and t not in name_words
               for t in tokenize(question, remove_stopwords=True))


class PeopleMixin:
    """Who a question is about (``about_whom``) and the graph's people behind it."""

    if TYPE_CHECKING:  # HybridRetriever's own (retrieval/hybrid.py)
        stores: Stores

        def _kept(self, ns: str, key: tuple[Any, ...], read: Callable[[], T], *,
                  graph: bool = False, fallback: Callable[[], Any] | None = None) -> T: ...

    def _linked_people(self, ns: str, node_names: Sequence[str], *,
                       current: bool = True) -> list[str]:
        """The people one hop from the graph nodes named ``node_names``: read once per
        namespace while neither its records nor its graph change (``_kept``); every
        search asks for the user's names, whatever the question (issue 27, item 2)."""
        return list(self._kept(
            ns, ("linked", tuple(node_names), current),
            lambda: self._people_one_hop(ns, node_names, current=current), graph=True))

    def _people_one_hop(self, ns: str, node_names: Sequence[str], *,
                        current: bool = True) -> list[str]:
        start = self.stores.graph.find_entities(ns, list(node_names))
        if not start:
            return []
        reached = self.stores.graph.neighbors(ns, [e.id for e in start], max_hops=1, limit=50)
        people = [h for h in reached if h.hops == 1 and h.type in ("person", "name")]
        if current and len(people) > 1:
            people = self._still_linked(ns, reached, people)
        return list(dict.fromkeys(h.name for h in people))

    def _still_linked(self, ns: str, reached: Sequence[GraphHit],
                      people: list[GraphHit]) -> list[GraphHit]:
        """Of several people a start node links to, those it still links to: a
        role's link was stated by the memories that mention both it and the person,
        and once every one of those is replaced ("from December I report to Ines
        instead of Tomasz"), so is the link. The graph keeps links as written
        (nothing is deleted: ``as_of`` shows the past); "my boss" asks about now, "my
        old team lead" (``_PAST_ROLE``) about them all. A link whose memories cannot
        be told stays; all stay when none would be left (a change in words the
        people rules do not link, "I've moved to Dr. Meijer's practice")."""
        stated = set().union(*(h.memory_ids for h in reached if h.hops == 0))
        linking = {id(h): h.memory_ids & stated for h in people}
        wanted = set().union(*linking.values())
        if not wanted:
            return people
        current = {i.id for i in self.stores.records.memories.get_items(ns, sorted(wanted))
                   if i.superseded_by is None and i.valid_to is None
                   and i.status == MemoryStatus.ACTIVE}
        kept = [h for h in people if not linking[id(h)] or linking[id(h)] & current]
        return kept or people

    def _roles_of(self, ns: str, persons: Sequence[str]) -> list[str]:
        """The user's roles for ``persons`` ("Qing" -> sister: "Lin Qing" is linked as
        the user's sister), from the role links the memories made
        (``MemoryManager.extract_links``); read once per namespace while neither its
        records nor its graph change (``_kept``, where both give a write generation),
        else once per namespace and memory count."""
        people = self._kept(ns, ("roles",), lambda: self._role_map(ns), graph=True,
                            fallback=lambda: self.stores.records.memories.namespace_totals(ns))
        return list(dict.fromkeys(r for p in persons for part in {p, *p.split()}
                                  for r in sorted(people.get(part.casefold(), ()))))

    def _role_map(self, ns: str) -> dict[str, set[str]]:
        """Each name part of a person the user's role links reach -> those roles."""
        found = self.stores.graph.find_entities(
            ns, sorted({role_key(SELF_ENTITY, r) for r in set(ROLE_WORDS.values())}))
        people: dict[str, set[str]] = {}
        prefix = role_key(SELF_ENTITY, "")
        for node in found:
            role = node.name.casefold()[len(prefix):]
            for h in self.stores.graph.neighbors(ns, [node.id], max_hops=1, limit=20):
                if h.hops == 1 and h.type in ("person", "name"):
                    for part in {h.name, *h.name.split()}:
                        people.setdefault(part.casefold(), set()).add(role)
        return people

    def about_whom(self, ns: str, plan: RetrievalPlan) -> RetrievalPlan:
        """Who the question is about (text/people.py): the user's names for a
        first-person question, and the people its role words refer to ("my husband's
        birthday" -> Tom Berg). A question whose role words resolve is also asked with
        the names in their place ("When is Tom Berg's birthday?")."""
        analysis = plan.analysis
        update: dict[str, Any] = {}
        # The user's names: a first-person question is about them, and a question
        # about someone else is not answered by a memory about the user.
        update["self_names"] = self._linked_people(ns, [SELF_ENTITY])
        resolved, roles, spans, unnamed, rewritten = self._asked_people(ns, analysis.query)
        # and the other way round: a person the question names is also who the
        # user's role words mean ("What does Qing do?" is answered by "姐姐…当法务顾问"
        # and by "my sister works at ...", when Qing is the user's sister)
        known = self._roles_of(ns, analysis.persons) if analysis.persons else []
        known += unnamed
        if known:
            update["resolved_roles"] = list(dict.fromkeys([*analysis.resolved_roles, *known]))
        if resolved:
            update["resolved"] = list(dict.fromkeys(resolved))
            update["resolved_roles"] = list(dict.fromkeys([*roles, *known]))
            # "What is my boss's dog called?" asks about the boss: a "my" that only
            # owns a resolved role that owns what is asked does not make the question
            # about the user ("when is my dentist appointment?" stays the user's, and
            # so does "who is my manager?", which asks the link itself)
            if analysis.first_person and _asks_about(rewritten, update["resolved"]) and all(
                    any(a <= m.start() < b for a, b in spans)
                    for m in first_person_words(analysis.query)):
                update["first_person"] = False
            # A role word that found its person is that person, not a thing to look up.
            update["entities"] = [e for e in analysis.entities if canonical_role(e) not in roles]
        if not update:
            return plan
        queries = plan.queries
        # "Who is my manager?" asks for the link itself: only a question that asks
        # something about the person ("my husband's birthday") is asked again by name.
        if (resolved and rewritten not in queries and plan.queries[0] == analysis.query
                and _asks_about(rewritten, update["resolved"])):
            queries = (*queries, rewritten)
        return replace(plan, analysis=analysis.model_copy(update=update), queries=queries)

    def _asked_people(self, ns: str, query: str
                      ) -> tuple[list[str], list[str], list[tuple[int, int]], list[str], str]:
        """The people the role words of ``query`` refer to, each chain of roles followed
        through the graph (``about_whom``'s part): the people reached, the roles that
        found them, the spans of the role phrases that own what is asked, the roles of
        the user no name is known for, and the query with the names in place of the
        role phrases that resolved to their end."""
        resolved: list[str] = []
        roles: list[str] = []
        spans: list[tuple[int, int]] = []
        unnamed: list[str] = []
        rewritten = query
        taken = len(rewritten) + 1
        for asked in sorted(asked_roles(query), key=lambda a: -a.span[0]):
            owners: list[str] = []
            current = [asked.owner]
            steps = 0
            for role in asked.chain:
                bare = [without_title(o) for o in current]
                keys = [role_key(o, role) for o in current]
                # "Lin Qing" is "Qing" too (a family name may come first)
                keys += [role_key(part, role) for o in bare if " " in o
                         for part in (o.split(" ", 1)[0], o.rsplit(" ", 1)[-1])]
                current = self._linked_people(ns, keys, current=not _PAST_ROLE.search(
                    query[asked.span[0]:asked.span[1] + 16]))
                if not current:
                    break
                # "my daughter's teacher" with no teacher known is still about the
                # daughter: the last people the chain reached.
                owners, steps = current, steps + 1
                roles.append(role)
            if not owners and asked.owner == SELF_ENTITY and len(asked.chain) == 1:
                # "妈妈喜欢什么花？" with no name known for mum is still about mum:
                # the role itself is the subject ("Mum loves gardenias" names it)
                unnamed.append(asked.chain[0])
            if owners:
                resolved += owners
                start, end = asked.span
                if _POSSESSIVE.match(query, end):
                    spans.append(asked.span)
                # Only a chain resolved to its end stands for the whole phrase, and
                # spans must not overlap an earlier replacement.
                if steps == len(asked.chain) and end <= taken:
                    rewritten = rewritten[:start] + " and ".join(owners) + rewritten[end:]
                    taken = start
        return resolved, roles, spans, unnamed, rewritten
