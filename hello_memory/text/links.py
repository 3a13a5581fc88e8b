"""The graph links of a memory: the entities and relations one stored text memory puts
in the entity graph (issue 31).

:class:`GraphLinks` is the function the stores call on every write to feed the graph
(``stores/bundle.py`` ``Extractor``; docs/ARCHITECTURE.md, "The write path") and the
inspector calls to show a memory's links (``MemoryManager.extract_links``). It is a
plain part built from the entity extractor alone: it knows neither the facade nor a
service, so ``MemoryManager.open`` hands it to ``open_stores(..., extractor=...)`` and
``Stores.open`` replays the index work a crash left with the links in place.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from hello_memory.text.people import SELF_ENTITY, role_key, role_links, self_names
from hello_memory.types import Entity, MemoryItem, MemoryType, Relation

if TYPE_CHECKING:
    from hello_memory.text.entities import EntityExtractor

__all__ = ["STORED_TYPES", "GraphLinks"]

# The memory types the stores hold as text (working memory lives in the process,
# perceptual memory in collections of its own): only these feed the graph.
STORED_TYPES = (MemoryType.EPISODIC, MemoryType.SEMANTIC)


class GraphLinks:
    """``links(item)``: the entities and relations ``item`` puts in the graph.

    A semantic memory gives its entities and relations (the entity extractor); every
    stored text memory (episodic too) gives who the user is and the people around them
    (text/people.py), so "my sister" resolves whatever type the fact was stored as
    (issue 26: a type does not switch features off). Building it reads nothing."""

    def __init__(self, extractor: EntityExtractor) -> None:
        self.extractor = extractor

    def __call__(self, item: MemoryItem) -> tuple[Sequence[Entity], Sequence[Relation]]:
        if item.memory_type not in STORED_TYPES:
            return (), ()
        entities: list[Entity] = []
        relations: list[Relation] = []
        if item.memory_type == MemoryType.SEMANTIC:
            ex = self.extractor.extract(item.content, item.namespace)
            entities, relations = list(ex.entities), list(ex.relations)
        # The user's names hang off one node, each role link ("The user's husband is
        # Tom Berg") off a node of its own, so a question can resolve "my husband".
        known = {e.id for e in entities}

        def node(name: str, kind: str) -> Entity:
            ent = Entity(item.namespace, name, kind)
            if ent.id not in known:
                known.add(ent.id)
                entities.append(ent)
            return ent

        names = self_names(item.content)
        if names:
            me = node(SELF_ENTITY, "self")
            relations += [Relation(item.namespace, me.id, node(n, "person").id, "named")
                          for n in names]
        for link in role_links(item.content):
            role = node(role_key(link.owner, link.role), "role")
            relations.append(Relation(item.namespace, role.id, node(link.person, "person").id,
                                      "is"))
        return entities, relations
