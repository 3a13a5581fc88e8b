"""Graph store over Bolt with the official ``neo4j`` driver (Neo4j 5; FalkorDB in tests).

Graph model (labels and property names are fixed; user text only travels as
query parameters, never inside the Cypher string)::

    (:Entity {id, namespace, name, normalized_name, type, properties})
    (:Entity)-[:RELATES {id, namespace, type, weight, properties, memory_ids}]->(:Entity)
    (:Memory {id, namespace})-[:MENTIONS]->(:Entity)

``properties`` is JSON text (Bolt properties cannot hold maps); ``memory_ids`` on a
relation lists the memories that state it. The Cypher stays within what both Neo4j 5
and FalkorDB accept.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any, TypeVar

try:
    import neo4j
    from neo4j import exceptions as nx
except ImportError as exc:  # pragma: no cover - depends on the environment
    raise ImportError(
        "Neo4jGraphStore needs the neo4j driver: pip install 'hello-memory[graph]'"
    ) from exc

from hello_memory.errors import (
    BackendUnavailableError,
    ConfigError,
    GraphStoreError,
    InvalidInputError,
)
from hello_memory.stores.graph import sqlite as common  # input checks shared by backends
from hello_memory.types import Entity, GraphHit, GraphStats, Relation, normalize_entity_name

__all__ = ["Neo4jGraphStore"]

logger = logging.getLogger(__name__)

T = TypeVar("T")
_BATCH = 500  # rows per UNWIND: bounds one statement's size and memory on the server

# (name, pattern, property): created with IF NOT EXISTS on Neo4j; plain on FalkorDB
_INDEXES = [
    ("hm_entity_id", "(n:Entity)", "n.id"),
    ("hm_entity_namespace", "(n:Entity)", "n.namespace"),
    ("hm_entity_normalized_name", "(n:Entity)", "n.normalized_name"),
    ("hm_memory_id", "(n:Memory)", "n.id"),
    ("hm_relates_id", "()-[n:RELATES]-()", "n.id"),
]

_MERGE_ENTITIES = """
UNWIND $rows AS r
MERGE (e:Entity {id: r.id})
ON CREATE SET e.namespace = $ns, e.name = r.name, e.normalized_name = r.norm,
              e.type = r.type, e.properties = coalesce(r.props, '{}')
ON MATCH SET e.properties = coalesce(r.props, e.properties)
"""
_MERGE_MENTIONS = """
MERGE (m:Memory {namespace: $ns, id: $mid})
WITH m
UNWIND $ids AS eid
MATCH (e:Entity {id: eid, namespace: $ns})
MERGE (m)-[:MENTIONS]->(e)
"""
_MERGE_RELATIONS = """
UNWIND $rows AS r
MATCH (s:Entity {id: r.src, namespace: $ns})
MATCH (t:Entity {id: r.dst, namespace: $ns})
MERGE (s)-[x:RELATES {id: r.id}]->(t)
ON CREATE SET x.namespace = $ns, x.type = r.type, x.weight = r.weight,
              x.properties = coalesce(r.props, '{}'), x.memory_ids = [$mid]
ON MATCH SET x.weight = r.weight, x.properties = coalesce(r.props, x.properties),
             x.memory_ids = CASE WHEN $mid IN x.memory_ids THEN x.memory_ids
                                 ELSE x.memory_ids + $mid END
"""
_EXISTING = "MATCH (e:Entity) WHERE e.namespace = $ns AND e.id IN $ids RETURN e.id AS id"
_MENTIONED_BY = "MATCH (:Memory {namespace: $ns, id: $mid})-[:MENTIONS]->(e) RETURN e.id AS id"
_DROP_MEMORY = "MATCH (m:Memory {namespace: $ns, id: $mid}) DETACH DELETE m"
# two statements, not SET ... WITH ... DELETE: FalkorDB silently skips that form
_UNSTATE = """
MATCH (:Entity {namespace: $ns})-[r:RELATES]->() WHERE $mid IN r.memory_ids
SET r.memory_ids = [x IN r.memory_ids WHERE x <> $mid]
RETURN r.id AS id
"""
_DROP_UNSTATED = """
MATCH (:Entity {namespace: $ns})-[r:RELATES]->() WHERE r.id IN $ids AND size(r.memory_ids) = 0
DELETE r
"""
_DROP_UNMENTIONED = """
UNWIND $ids AS eid
MATCH (e:Entity {id: eid, namespace: $ns})
OPTIONAL MATCH (e)<-[k:MENTIONS]-(:Memory)
WITH e, count(k) AS links WHERE links = 0
DETACH DELETE e
"""
_CLEAR = [  # batched so one huge namespace does not need one huge transaction
    "MATCH (e:Entity {namespace: $ns}) WITH e LIMIT $batch DETACH DELETE e RETURN count(*) AS n",
    "MATCH (m:Memory {namespace: $ns}) WITH m LIMIT $batch DETACH DELETE m RETURN count(*) AS n",
]
_FIND = """
MATCH (e:Entity) WHERE e.namespace = $ns AND e.normalized_name IN $names
RETURN e.name AS name, e.type AS type, e.properties AS properties
ORDER BY e.normalized_name, e.type
"""
_FIND_ALIASES = """
MATCH (e:Entity) WHERE e.namespace = $ns AND (e.normalized_name IN $names
  OR (e.type IN $person_types AND (e.normalized_name IN $firsts
      OR any(p IN $prefixes WHERE e.normalized_name STARTS WITH p))))
RETURN e.name AS name, e.type AS type, e.properties AS properties
ORDER BY e.normalized_name, e.type
"""
_NEIGHBORS_TEMPLATE = """
MATCH (s:Entity) WHERE s.namespace = $ns AND s.id IN $ids
MATCH p = (s)-[:RELATES*0..{max_hops}]-(e:Entity)
WHERE e.namespace = $ns
WITH e, min(length(p)) AS hops
ORDER BY hops, e.name, e.id
LIMIT $limit
OPTIONAL MATCH (m:Memory)-[:MENTIONS]->(e)
WHERE m.namespace = $ns
RETURN e.id AS id, e.name AS name, e.type AS type, hops, collect(m.id) AS memory_ids
"""
# Cypher cannot take a path length as a parameter: one fixed query per allowed depth,
# picked by a validated int, so no caller value is ever formatted into the text
_NEIGHBORS = {h: _NEIGHBORS_TEMPLATE.replace("{max_hops}", str(h)) for h in common.HOP_RANGE}
_FOR_ENTITIES = """
MATCH (m:Memory)-[:MENTIONS]->(e:Entity) WHERE m.namespace = $ns AND e.id IN $ids
RETURN DISTINCT m.id AS id
"""
_MEMORY_IDS = [
    "MATCH (m:Memory {namespace: $ns})-[:MENTIONS]->() RETURN DISTINCT m.id AS id",
    "MATCH (:Entity {namespace: $ns})-[r:RELATES]->() UNWIND r.memory_ids AS mid "
    "RETURN DISTINCT mid AS id",
]
_COUNTS = [
    "MATCH (e:Entity {namespace: $ns}) RETURN count(e) AS n",
    "MATCH (:Entity {namespace: $ns})-[r:RELATES]->() RETURN count(r) AS n",
    "MATCH (:Memory {namespace: $ns})-[k:MENTIONS]->() RETURN count(k) AS n",
]


def _batches(rows: list[T]) -> Iterator[list[T]]:
    for start in range(0, len(rows), _BATCH):
        yield rows[start : start + _BATCH]


class Neo4jGraphStore:
    """GraphStore on a Bolt server (Neo4j 5, or FalkorDB's Bolt endpoint)."""

    def __init__(
        self,
        uri: str,
        user: str | None = None,
        password: str | None = None,
        database: str | None = None,
        connection_timeout: float = 5.0,
    ) -> None:
        if connection_timeout <= 0:
            raise ConfigError(f"connection_timeout must be positive, got {connection_timeout!r}")
        self._uri = uri
        self._auth = (user, password or "") if user else None
        self._database = database
        self._timeout = float(connection_timeout)
        self._driver: neo4j.Driver | None = None  # no I/O until open()

    # --- lifecycle -------------------------------------------------------------------
    def open(self) -> None:
        """Connect (BackendUnavailableError within about ``connection_timeout`` when the
        server cannot be reached) and create the indexes idempotently."""
        if self._driver is not None:
            return
        try:
            driver = neo4j.GraphDatabase.driver(
                self._uri,
                auth=self._auth,
                connection_timeout=self._timeout,
                # the handshake and pool wait are bounded too, not only the TCP connect
                connection_acquisition_timeout=self._timeout,
                # recycle before typical proxy / firewall idle cut-offs (~5-10 min)
                max_connection_lifetime=300.0,
                # retries of transient failures must not hide an outage for long
                max_transaction_retry_time=3 * self._timeout,
            )
        except (ValueError, nx.ConfigurationError) as exc:
            raise ConfigError(f"invalid graph store URI {self._uri!r}: {exc}") from exc
        self._driver = driver
        try:
            with self._errors("connecting"):
                driver.verify_connectivity()
                for name, pattern, prop in _INDEXES:
                    self._ensure_index(name, pattern, prop)
        except Exception:
            self.close()
            raise

    def close(self) -> None:
        """Close the driver and its connections. Safe to call twice."""
        driver, self._driver = self._driver, None
        if driver is not None:
            driver.close()

    # --- writes ----------------------------------------------------------------------
    def add_mentions(
        self,
        namespace: str,
        memory_id: str,
        entities: Sequence[Entity],
        relations: Sequence[Relation] = (),
    ) -> None:
        """Upsert entities and relations and link them to ``memory_id`` in one write
        transaction (``UNWIND ... MERGE``). Relation endpoints must be given or stored."""
        ents, rels = common.validate_mentions(namespace, memory_id, entities, relations)
        if not ents and not rels:
            return
        ent_rows: list[dict[str, Any]] = [
            {"id": i, "name": e.name, "norm": normalize_entity_name(e.name), "type": e.type,
             "props": common.properties_json(e.properties, e.name) if e.properties else None}
            for i, e in ents.items()
        ]  # fmt: skip
        rel_rows: list[dict[str, Any]] = [
            {"id": i, "src": r.source_id, "dst": r.target_id, "type": r.type,
             "weight": float(r.weight),
             "props": common.properties_json(r.properties, r.type) if r.properties else None}
            for i, r in rels.items()
        ]  # fmt: skip
        wanted = sorted({i for r in rels.values() for i in (r.source_id, r.target_id)} - set(ents))
        ns, mid = namespace, memory_id

        def work(tx: neo4j.ManagedTransaction) -> None:
            for rows in _batches(ent_rows):
                tx.run(_MERGE_ENTITIES, rows=rows, ns=ns).consume()
            for ids in _batches(list(ents)):
                tx.run(_MERGE_MENTIONS, ids=ids, ns=ns, mid=mid).consume()
            for rows in _batches(rel_rows):
                tx.run(_MERGE_RELATIONS, rows=rows, ns=ns, mid=mid).consume()

        with self._errors(f"add_mentions for memory {memory_id!r}"):
            # checked before any write: FalkorDB has no rollback to undo a half write
            found = {r["id"] for r in self._read(_EXISTING, ns=ns, ids=wanted)} if wanted else set()
            if set(wanted) - found:
                missing = sorted(set(wanted) - found)
                raise InvalidInputError(
                    f"relation endpoints not found in namespace {namespace!r}: {missing}"
                )
            self._write(work)

    def remove_memory(self, namespace: str, memory_id: str) -> None:
        """Drop the memory's links, then entities and relations no memory mentions any
        more (relations of removed entities go with them), in one write transaction."""
        ns = common.validate_namespace(namespace)
        mid = common.validate_id(memory_id, "memory_id")

        def work(tx: neo4j.ManagedTransaction) -> None:
            ent_ids = [r["id"] for r in tx.run(_MENTIONED_BY, ns=ns, mid=mid)]
            tx.run(_DROP_MEMORY, ns=ns, mid=mid).consume()
            rel_ids = [r["id"] for r in tx.run(_UNSTATE, ns=ns, mid=mid)]
            if rel_ids:
                tx.run(_DROP_UNSTATED, ns=ns, ids=rel_ids).consume()
            if ent_ids:
                tx.run(_DROP_UNMENTIONED, ns=ns, ids=ent_ids).consume()

        with self._errors(f"remove_memory for {memory_id!r}"):
            self._write(work)

    def clear(self, namespace: str) -> None:
        """Delete every node and edge of ``namespace`` and nothing else."""
        ns = common.validate_namespace(namespace)
        with self._errors(f"clear of namespace {namespace!r}"):
            for query in _CLEAR:
                while self._read(query, ns=ns, batch=10_000, write=True)[0]["n"]:
                    pass

    # --- reads -----------------------------------------------------------------------
    def find_entities(self, namespace: str, names: Sequence[str], *,
                      aliases: bool = False) -> list[Entity]:
        """Entities whose normalised name equals one of ``names`` (any type); with
        ``aliases``, person-like entities sharing a first name (see GraphStore)."""
        ns = common.validate_namespace(namespace)
        wanted = common.normalized_names(names)
        if not wanted:
            return []
        with self._errors("find_entities"):
            if aliases:
                firsts, prefixes = common.alias_keys(wanted)
                rows = self._read(_FIND_ALIASES, ns=ns, names=wanted, firsts=firsts,
                                  prefixes=prefixes, person_types=list(common.PERSON_TYPES))
            else:
                rows = self._read(_FIND, ns=ns, names=wanted)
        return [Entity(ns, r["name"], r["type"], _load_properties(r["properties"])) for r in rows]

    def neighbors(
        self, namespace: str, entity_ids: Sequence[str], max_hops: int = 2, limit: int = 100
    ) -> list[GraphHit]:
        """Entities within ``max_hops`` undirected edges of ``entity_ids`` (starts at
        hops 0) with the memories mentioning them; sorted by hops, name; ``limit``."""
        ns = common.validate_namespace(namespace)
        ids = common.validate_ids(entity_ids, "entity id")
        max_hops, limit = common.validate_traversal(max_hops, limit)
        if not ids:
            return []
        with self._errors("neighbors"):
            rows = self._read(_NEIGHBORS[max_hops], ns=ns, ids=ids, limit=limit)
        return common.sort_hits(
            GraphHit(r["id"], r["name"], r["type"], int(r["hops"]), frozenset(r["memory_ids"]))
            for r in rows
        )

    def memory_ids_for_entities(self, namespace: str, entity_ids: Sequence[str]) -> set[str]:
        """Ids of memories that mention any of ``entity_ids``."""
        ns = common.validate_namespace(namespace)
        ids = common.validate_ids(entity_ids, "entity id")
        if not ids:
            return set()
        with self._errors("memory_ids_for_entities"):
            return {r["id"] for r in self._read(_FOR_ENTITIES, ns=ns, ids=ids)}

    def memory_ids(self, namespace: str) -> set[str]:
        """Every memory id that mentions an entity or states a relation in ``namespace``."""
        ns = common.validate_namespace(namespace)
        with self._errors("memory_ids"):
            return {r["id"] for query in _MEMORY_IDS for r in self._read(query, ns=ns)}

    def stats(self, namespace: str) -> GraphStats:
        """Entities, relations, and entity mention links (memory -> entity) in ``namespace``."""
        ns = common.validate_namespace(namespace)
        with self._errors("stats"):
            ents, rels, links = (int(self._read(q, ns=ns)[0]["n"]) for q in _COUNTS)
        return GraphStats(entities=ents, relations=rels, mentions=links)

    # --- helpers ---------------------------------------------------------------------
    def _require(self) -> neo4j.Driver:
        if self._driver is None:
            raise GraphStoreError("Neo4jGraphStore is not open: call open() first")
        return self._driver

    def _read(self, query: str, write: bool = False, **params: Any) -> list[neo4j.Record]:
        routing = neo4j.RoutingControl.WRITE if write else neo4j.RoutingControl.READ
        return self._require().execute_query(
            query, parameters_=params, database_=self._database, routing_=routing
        ).records

    def _write(self, work: Callable[[neo4j.ManagedTransaction], T]) -> T:
        with self._require().session(database=self._database) as session:
            return session.execute_write(work)

    def _ensure_index(self, name: str, pattern: str, prop: str) -> None:
        # only constants from _INDEXES are formatted here, never caller input
        try:
            self._read(f"CREATE INDEX {name} IF NOT EXISTS FOR {pattern} ON ({prop})", write=True)
            return
        except (nx.CypherSyntaxError, nx.DatabaseError) as exc:
            logger.debug("IF NOT EXISTS refused for index %s (%s); using the plain form", name, exc)
        try:
            self._read(f"CREATE INDEX FOR {pattern} ON ({prop})", write=True)
        except nx.Neo4jError as exc:
            # FalkorDB answers an existing index with a generic DatabaseError; Neo4j with
            # a ClientError "...AlreadyExists"; anything else is a real failure
            if not isinstance(exc, nx.DatabaseError) and "AlreadyExists" not in (exc.code or ""):
                raise
            logger.debug("index %s on %s treated as already present: %s", name, pattern, exc)

    @contextmanager
    def _errors(self, what: str) -> Iterator[None]:
        """Translate driver exceptions into hello-memory's tree at the boundary."""
        try:
            yield
        except (nx.ServiceUnavailable, nx.SessionExpired, nx.AuthError) as exc:
            raise BackendUnavailableError(
                f"graph server at {self._uri} unavailable ({what}; connection timeout "
                f"{self._timeout:g}s): {exc}"
            ) from exc
        except (nx.Neo4jError, nx.DriverError) as exc:
            raise GraphStoreError(f"{what} failed on {self._uri}: {exc}") from exc


def _load_properties(raw: object) -> dict[str, Any]:
    if not isinstance(raw, str):
        return {}
    try:
        loaded = json.loads(raw)
    except ValueError:  # written by someone else: do not fail a read over it
        return {}
    return loaded if isinstance(loaded, dict) else {}
