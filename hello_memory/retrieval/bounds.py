"""Bounds on the work of one query (issue 28, item 10; docs/RELIABILITY.md "Fair
service under heavy queries").

A query may be 10,000 characters (``limits.max_query_chars``). Most of what the views
do grows with what the planner finds in it, not with its length: the graph view walks
the neighbourhood of every name (persons, entities, locations), the soft constraints
check every name against every candidate, the symbolic view searches once per time
range, and a BM25 search scores one posting list per term. A maximum-length query of
names found 172 persons and took about two thirds of its time in the graph view alone,
so eight of them at once held every worker of the server for seconds.

Here those are capped, in the order the planner found them (so the result is the same
on every run and thread): a question names a handful of people, places and times;
past the caps a query is text to match, and the semantic view (the embedder reads its
first 256 tokens) and the first BM25 terms still match it. :func:`bounded_analysis` is
applied once, where the retriever plans; :func:`bounded_terms` where one sparse
search is built.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from hello_memory.retrieval.planning import QueryAnalysis

__all__ = ["MAX_QUERY_KEYWORDS", "MAX_QUERY_NAMES", "MAX_QUERY_TERMS", "MAX_TIME_RANGES",
           "bounded_analysis", "bounded_terms"]

# Persons, entities and locations of one query, each (the graph view walks one
# neighbourhood per name).
MAX_QUERY_NAMES = 16
# Keywords kept on the analysis.
MAX_QUERY_KEYWORDS = 64
# Time ranges (the symbolic view runs one range search and one mention lookup each).
MAX_TIME_RANGES = 8
# Terms of one BM25 (sparse) search.
MAX_QUERY_TERMS = 64


def bounded_analysis(analysis: QueryAnalysis) -> QueryAnalysis:
    """``analysis`` with at most :data:`MAX_QUERY_NAMES` persons, entities and
    locations, :data:`MAX_QUERY_KEYWORDS` keywords and :data:`MAX_TIME_RANGES` time
    ranges (the first found; the same object when nothing is over)."""
    caps = {"persons": MAX_QUERY_NAMES, "entities": MAX_QUERY_NAMES,
            "locations": MAX_QUERY_NAMES, "keywords": MAX_QUERY_KEYWORDS,
            "time_ranges": MAX_TIME_RANGES, "time_expressions": MAX_TIME_RANGES}
    update: dict[str, Any] = {name: list(getattr(analysis, name))[:cap]
                              for name, cap in caps.items()
                              if len(getattr(analysis, name)) > cap}
    return analysis.model_copy(update=update) if update else analysis


def bounded_terms(terms: Mapping[int, float]) -> dict[int, float]:
    """At most :data:`MAX_QUERY_TERMS` of a sparse query's ``terms`` (term index ->
    weight): the heaviest (content words weigh more than names), then by index, so
    the choice is the same on every run."""
    if len(terms) <= MAX_QUERY_TERMS:
        return dict(terms)
    keep = sorted(terms, key=lambda i: (-terms[i], i))[:MAX_QUERY_TERMS]
    return {i: terms[i] for i in keep}
