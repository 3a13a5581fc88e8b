"""The entity extractor port: the entities and relations a text mentions.

Backends: ``RuleExtractor`` (the default, rules for English and Chinese) and
``SpacyExtractor`` (the ``nlp`` extra) in ``text/entities.py``; the LLM extraction of
``memory/extraction.py`` wraps one of them.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from hello_memory.types import Entity, Relation


class ExtractionResult(Protocol):
    """What a caller reads of an extraction (``text.entities.Extraction`` is one)."""

    @property
    def entities(self) -> tuple[Entity, ...]:
        """Entities in order of first mention, unique by id."""
        ...

    @property
    def relations(self) -> tuple[Relation, ...]:
        """Relations between those entities."""
        ...


@runtime_checkable
class EntityExtractorPort(Protocol):
    """What the graph indexer and the planner call to read entities from text."""

    def extract(self, text: str, namespace: str) -> ExtractionResult:
        """The entities and relations ``text`` mentions; entity ids are scoped by
        ``namespace``."""
        ...
