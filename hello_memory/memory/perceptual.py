"""Perceptual memory: text, images and audio, one vector collection per modality.

Modalities get separate collections because their vectors differ in size and space:
``perceptual_text`` (the text embedder), ``perceptual_image`` (CLIP) and
``perceptual_audio`` (CLAP). A query is encoded in the TARGET collection's space: a
text query can search any modality (CLIP's / CLAP's text tower for media), an image
query only images, an audio query only audio. Hits are joined to their records (the
truth) and scored with the PERCEPTUAL profile, (0.8·similarity + 0.2·recency) ×
(0.8 + 0.4·importance).

Writes follow the records-first path of the one index-maintenance engine
(hello_memory/stores/indexing.py, ARCHITECTURE decision 1): validate and encode, commit
the record with its "media" outbox row, then apply that row (this class is the "media"
kind's indexer: it reads the current record and upserts or deletes its vector).
Register the memory with ``Stores.register_indexer(MemoryType.PERCEPTUAL, memory)``
(before ``Stores.open()``) so it shares the stores' engine and its backlog is replayed
at open; on its own it keeps an engine of its own over the same outbox.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from hello_memory.embedding.base import Embedder
from hello_memory.embedding.clap import ClapEncoder, audio_mime_type
from hello_memory.embedding.clip import ClipEncoder, MediaSource, image_mime_type, read_media
from hello_memory.errors import (
    CollectionNotFoundError,
    ConfigError,
    HelloMemoryError,
    InvalidInputError,
    PerceptualNotConfiguredError,
    StoreError,
)
from hello_memory.memory import scoring
from hello_memory.memory.scoring import PERCEPTUAL, ScoringProfile, SearchHit
from hello_memory.ports.vector import Between, Condition, VectorFilter
from hello_memory.stores.bundle import DENSE, PAYLOAD_INDEXES, memory_payload
from hello_memory.stores.indexing import IndexEngine
from hello_memory.stores.records import ItemFilter, OutboxEntry, RecordStore
from hello_memory.stores.vector.base import CollectionSpec, VectorStore
from hello_memory.types import MemoryItem, MemoryStatus, MemoryType, Modality, VectorPoint, utcnow
from hello_memory.validation import (
    require_namespace,
    validate_content,
    validate_importance,
    validate_item,
    validate_top_k,
)

log = logging.getLogger(__name__)

__all__ = ["COLLECTIONS", "PerceptualMemory", "ReindexReport"]

COLLECTIONS = {m: f"perceptual_{m.value}" for m in Modality}
CANDIDATE_FACTOR = 4
_ALL = tuple(Modality)
_RESERVED = ("source", "source_sha256", "caption", "mime_type", "size_bytes")
_SETTINGS = {Modality.IMAGE: "perceptual.image.pretrained",
             Modality.AUDIO: "perceptual.audio.checkpoint"}


# What image and audio memory import (the multimodal extra).
MULTIMODAL_MODULES = ("open_clip", "laion_clap", "PIL")


def missing_multimodal_modules() -> list[str]:
    """The multimodal extra's modules that are not installed (found without importing)."""
    import importlib.util

    return [m for m in MULTIMODAL_MODULES if importlib.util.find_spec(m) is None]


@dataclass
class ReindexReport:
    """What :meth:`PerceptualMemory.reindex` did, by memory id (skipped: with why)."""

    reindexed: list[str] = field(default_factory=list)
    present: list[str] = field(default_factory=list)
    skipped: dict[str, str] = field(default_factory=dict)


def _modality(value: Modality | str, what: str) -> Modality:
    try:
        return Modality(value)
    except ValueError as exc:
        raise InvalidInputError(f"{what} must be one of text, image, audio: {value!r}") from exc


class PerceptualMemory:
    """Multimodal memories over a record store and a vector store (see module doc)."""

    memory_type = MemoryType.PERCEPTUAL

    def __init__(
        self,
        records: RecordStore,
        vectors: VectorStore,
        *,
        text_embedder: Embedder,
        image_encoder: ClipEncoder | None = None,
        audio_encoder: ClapEncoder | None = None,
        profile: ScoringProfile = PERCEPTUAL,
        clock: Callable[[], datetime] = utcnow,
    ) -> None:
        self.records = records
        self.vectors = vectors
        self.text_embedder = text_embedder
        self.image_encoder = image_encoder
        self.audio_encoder = audio_encoder
        self.profile = profile
        self._clock = clock
        self._ready: set[Modality] = set()
        self.engine = IndexEngine(lambda: self.records.outbox)
        self.engine.register("media", self)

    def attach(self, engine: IndexEngine) -> None:
        """Apply this memory's rows through ``engine`` (the stores' one engine: shared
        per-key locks, one backlog replay) instead of an engine of its own."""
        self.engine = engine
        engine.register("media", self)

    # lifecycle ---------------------------------------------------------------------
    def open(self) -> None:
        """Open both stores (a no-op when already open) and create the collection of
        every configured modality; loads the encoders to learn their dimensions."""
        self._collections()
        self.engine.replay(["media"])  # what a crash left pending

    def _collections(self) -> None:
        """Open both stores and make every configured modality's collection (no replay:
        the "media" indexer calls this with key locks held)."""
        self.records.open()
        self.vectors.open()
        for modality in Modality:
            if modality not in self._ready and self._encoder_or_none(modality) is not None:
                self.vectors.ensure_collection(CollectionSpec(
                    name=COLLECTIONS[modality],
                    dense={DENSE: int(self._encoder_or_none(modality).dimension)},
                    payload_indexes=PAYLOAD_INDEXES))
                self._ready.add(modality)

    def close(self) -> None:
        """Close both stores (also for other users of the same store objects)."""
        self.vectors.close()
        self.records.close()
        self._ready.clear()

    def __enter__(self) -> PerceptualMemory:
        self.open()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _encoder_or_none(self, modality: Modality) -> Any:
        return {Modality.TEXT: self.text_embedder, Modality.IMAGE: self.image_encoder,
                Modality.AUDIO: self.audio_encoder}[modality]

    def has_encoder(self, modality: Modality) -> bool:
        """Whether this memory can embed ``modality`` (its encoder is configured)."""
        return self._encoder_or_none(modality) is not None

    def _require(self, modality: Modality) -> None:
        """Fail with the setting to change when a modality has no encoder; create the
        collection on first use."""
        if self._encoder_or_none(modality) is None:
            missing = missing_multimodal_modules()
            if missing and modality != Modality.TEXT:
                raise PerceptualNotConfiguredError(
                    f"perceptual {modality.value} memory needs the multimodal extra "
                    f"(missing: {', '.join(missing)}): pip install "
                    "'hello-memory[multimodal]'")
            raise ConfigError(
                f"perceptual {modality.value} memory needs an encoder: set "
                f"{_SETTINGS[modality]} (pass {modality.value}_encoder=...)")
        if modality not in self._ready:
            self._collections()

    # encoding ----------------------------------------------------------------------
    def _encode(self, modality: Modality, data: Any) -> npt.NDArray[np.float32]:
        """One vector: ``data`` is the text of a text memory, else a path or bytes."""
        self._require(modality)
        enc = self._encoder_or_none(modality)
        batch = {Modality.TEXT: "embed", Modality.IMAGE: "embed_images",
                 Modality.AUDIO: "embed_audio"}[modality]
        return np.asarray(getattr(enc, batch)([data])[0], dtype=np.float32)

    def _query_vector(self, query: Any, query_modality: Modality,
                      target: Modality) -> npt.NDArray[np.float32]:
        """Encode ``query`` in the TARGET collection's space."""
        if query_modality is Modality.TEXT:
            validate_content(query, limits=self.records.limits)
            self._require(target)
            return np.asarray(self._encoder_or_none(target).embed_query(query), dtype=np.float32)
        if target is not query_modality:
            raise InvalidInputError(
                f"an {query_modality.value} query can only search {query_modality.value} "
                f"memories: {target.value} vectors live in another encoder's space; "
                f"describe what you look for in a text query instead")
        if not isinstance(query, (str, Path, bytes, bytearray)):
            raise InvalidInputError(f"an {query_modality.value} query must be a path or bytes, "
                                    f"got {type(query).__name__}")
        return self._encode(target, bytes(query) if isinstance(query, bytearray) else query)

    # writes ------------------------------------------------------------------------
    def add(
        self,
        namespace: str,
        *,
        modality: Modality | str,
        content: str | None = None,
        source: MediaSource | None = None,
        caption: str | None = None,
        importance: float = 0.5,
        user_id: str | None = None,
        session_id: str | None = None,
        event_time: datetime | None = None,
        metadata: dict[str, Any] | None = None,
    ) -> MemoryItem:
        """Store one memory: ``content`` for text, ``source`` (path or bytes) for image
        and audio, with an optional ``caption``. Everything is validated and encoded
        before anything is written; invalid input writes nothing."""
        require_namespace(namespace)
        mod = _modality(modality, "modality")
        if metadata is not None and not isinstance(metadata, dict):
            raise InvalidInputError("metadata must be a dict")
        if taken := sorted(set(metadata or {}) & set(_RESERVED)):
            raise InvalidInputError(f"metadata keys {taken} are set by perceptual memory")
        meta: dict[str, Any] = dict(metadata or {})
        if caption is not None:
            meta["caption"] = validate_content(caption, limits=self.records.limits)
        data, path = None, None
        if mod is Modality.TEXT:
            if source is not None:
                raise InvalidInputError("a text memory takes content=, not source=")
            body = validate_content(content, limits=self.records.limits)
        else:
            if content is not None or source is None:
                raise InvalidInputError(f"an {mod.value} memory takes source= (a path or bytes) "
                                        "and optionally caption=, not content=")
            self._require(mod)  # a missing encoder is a config fault: say so before any I/O
            data, path = read_media(source)
            digest = hashlib.sha256(data).hexdigest()
            body = caption or (Path(path).name if path else f"{mod.value} sha256:{digest[:12]}")
            sniff = image_mime_type if mod is Modality.IMAGE else audio_mime_type
            meta.update(source=path, source_sha256=digest, mime_type=sniff(data),
                        size_bytes=len(data))
        item = MemoryItem(content=body, namespace=namespace, memory_type=MemoryType.PERCEPTUAL,
                          modality=mod, importance=importance, user_id=user_id,
                          session_id=session_id, metadata=meta)
        if event_time is not None:
            item.event_time = event_time
        validate_item(item, self.records.limits)
        try:  # encode the bytes just hashed, so the vector matches source_sha256
            vector = self._encode(mod, body if data is None else data)
        except InvalidInputError as exc:
            raise InvalidInputError(f"source {path or '(bytes)'}: {exc}") from exc
        rows = self.records.memories.add_items([item])
        self._raise_failure(self.engine.apply_entries(rows, {item.id: (item.content, vector)}),
                            item.id)
        return item

    def _raise_failure(self, result: Any, memory_id: str) -> None:
        failure = self.engine.first_failure(result, {memory_id})
        if failure is not None:
            raise failure  # the write is durable, its row pending (reconcile retries)

    @staticmethod
    def _payload(item: MemoryItem) -> dict[str, Any]:
        return {**memory_payload(item), "source": item.metadata.get("source")}

    def _upsert(self, item: MemoryItem, vector: npt.NDArray[np.float32]) -> None:
        point = VectorPoint(id=item.id, vectors={DENSE: vector.tolist()},
                            payload=self._payload(item))
        self.vectors.upsert(COLLECTIONS[item.modality], [point])

    def _drop_vectors(self, namespace: str, ids: Sequence[str] | None,
                      modalities: Sequence[Modality] = _ALL) -> None:
        """Delete points (all of ``namespace`` when ``ids`` is None). A collection this
        process never created may not exist: nothing to delete there."""
        for modality in modalities:
            name = COLLECTIONS[modality]
            try:
                if ids is None:
                    self.vectors.clear(name, namespace=namespace)
                elif ids:
                    self.vectors.delete(name, list(ids), namespace=namespace)
            except CollectionNotFoundError:
                if modality in self._ready:
                    raise
                log.debug("collection %s not present; nothing to delete", name)

    def remove(self, namespace: str, memory_id: str) -> bool:
        """Delete one perceptual memory (record and vector); False if there is none."""
        ns = require_namespace(namespace)
        found = [i for i in self.records.memories.get_items(ns, [memory_id])
                 if i.memory_type is MemoryType.PERCEPTUAL]
        if not found:
            return False
        _, rows = self.records.memories.delete_queued(ns, [memory_id])
        self._raise_failure(self.engine.apply_entries(rows), memory_id)
        return True

    def clear(self, namespace: str) -> int:
        """Delete every perceptual memory of ``namespace`` (any status) and the
        namespace's points in the perceptual collections; returns records deleted."""
        require_namespace(namespace)
        ids = [i.id for i in self.records.memories.list_items(
            namespace, ItemFilter(memory_types=(MemoryType.PERCEPTUAL,), status=None))]
        deleted, rows = 0, list[OutboxEntry]()
        for start in range(0, len(ids), 500):
            n, queued = self.records.memories.delete_queued(namespace, ids[start:start + 500])
            deleted, rows = deleted + n, rows + queued
        self.engine.apply_entries(rows)
        self._drop_vectors(namespace, None)  # and any point without a record
        return deleted

    # the "media" kind's indexer (hello_memory/stores/indexing.py) ----------------------
    def apply(self, namespace: str, entries: Sequence[OutboxEntry],
              prepared: Mapping[str, Any]) -> None:
        """Bring the vectors of ``entries``' memories in line with their CURRENT records
        (the engine holds their key locks): a memory gone (or no longer perceptual)
        loses its vectors; a new one gets the vector its add encoded, when the record
        still has that content; any other is refreshed from its record (text
        re-embedded, a media payload rewritten, a missing media vector re-encoded from
        its source file, logged when impossible). A backend failure raises (the rows
        stay pending)."""
        ids = list(dict.fromkeys(e.item_id for e in entries))
        items = {i.id: i for i in self.records.memories.get_items(namespace, ids)
                 if i.memory_type is MemoryType.PERCEPTUAL}
        gone = [i for i in ids if i not in items]
        if gone:
            self._drop_vectors(namespace, gone)
        for memory_id, item in items.items():
            ready = prepared.get(memory_id)
            if ready is not None and ready[0] == item.content:
                self._require(item.modality)
                self._upsert(item, np.asarray(ready[1], dtype=np.float32))
                continue
            try:
                outcome = self._reindex_one(item, refresh=True)
            except StoreError:
                raise
            except (HelloMemoryError, OSError) as exc:
                outcome = f"{type(exc).__name__}: {exc}"
            if outcome not in ("reindexed", "present"):
                log.warning("perceptual memory %s not re-indexed: %s", memory_id, outcome)

    def upsert(self, items: Sequence[MemoryItem]) -> None:
        """Bring the vectors of ``items`` in line with their records: text is re-embedded,
        media whose vector exists get the new payload, missing media vectors are
        re-encoded from their source file (reported in the log when impossible)."""
        report = self.reindex(items, refresh_payload=True)
        for memory_id, reason in report.skipped.items():
            log.warning("perceptual memory %s not re-indexed: %s", memory_id, reason)

    def delete(self, namespace: str, ids: Sequence[str]) -> None:
        self._drop_vectors(require_namespace(namespace), list(ids))

    def reindex(self, items: Sequence[MemoryItem], *,
                refresh_payload: bool = False) -> ReindexReport:
        """Re-encode the items whose vector is missing. A media item needs its source
        file, unchanged (same SHA-256); bytes-only sources cannot be re-indexed.
        ``refresh_payload`` also rewrites present payloads and re-embeds text."""
        report = ReindexReport()
        for item in items:
            try:
                outcome = (self._reindex_one(item, refresh_payload)
                           if item.memory_type is MemoryType.PERCEPTUAL
                           else "not a perceptual memory")
            except (HelloMemoryError, OSError) as exc:
                outcome = f"{type(exc).__name__}: {exc}"
            if outcome in ("reindexed", "present"):
                getattr(report, outcome).append(item.id)
            else:
                report.skipped[item.id] = outcome
        return report

    def _reindex_one(self, item: MemoryItem, refresh: bool) -> str:
        """``reindexed``, ``present``, or why the item cannot be re-encoded."""
        mod, coll = item.modality, COLLECTIONS[item.modality]
        self._require(mod)
        present = bool(self.vectors.retrieve(coll, [item.id], namespace=item.namespace))
        if present and not (refresh and mod is Modality.TEXT):
            if refresh:  # a media vector depends on its source only: keep it
                self.vectors.set_payload(coll, [item.id], self._payload(item),
                                         namespace=item.namespace)
            return "present"
        if mod is Modality.TEXT:
            self._upsert(item, self._encode(mod, item.content))  # the content may be new
            return "reindexed"
        path = item.metadata.get("source")
        if not path:
            return "source was given as bytes: not re-indexable, add it again"
        if not Path(path).is_file():
            return f"source file {path!r} no longer exists"
        data = Path(path).read_bytes()
        if hashlib.sha256(data).hexdigest() != item.metadata.get("source_sha256"):
            return f"source file {path!r} changed since it was added"
        self._upsert(item, self._encode(mod, data))
        return "reindexed"

    # reads -------------------------------------------------------------------------
    def retrieve(
        self,
        namespace: str,
        query: str | Path | bytes,
        *,
        query_modality: Modality | str = Modality.TEXT,
        target_modality: Modality | str | None = None,
        top_k: int = 5,
        min_importance: float | None = None,
        user_id: str | None = None,
    ) -> list[SearchHit]:
        """Memories of ``target_modality`` (default: the query's) closest to ``query``,
        best final score first. A text query is a string; an image or audio query is
        a path or bytes."""
        require_namespace(namespace)
        qmod = _modality(query_modality, "query_modality")
        target = qmod if target_modality is None else _modality(target_modality,
                                                                "target_modality")
        validate_top_k(top_k)
        filters: dict[str, Condition] = {"memory_type": MemoryType.PERCEPTUAL.value,
                                         "status": MemoryStatus.ACTIVE.value,
                                         "modality": target.value}
        if user_id is not None:
            if not isinstance(user_id, str):
                raise InvalidInputError("user_id must be a str or None")
            filters["user_id"] = user_id
        if min_importance is not None:
            min_importance = validate_importance(min_importance)
            filters["importance"] = Between(gte=min_importance)
        qv = self._query_vector(query, qmod, target)
        hits = self.vectors.nearest(COLLECTIONS[target], qv.tolist(), namespace=namespace,
                                   using=DENSE, limit=top_k * CANDIDATE_FACTOR,
                                   filters=VectorFilter(filters))
        sims = {h.id: h.score for h in hits}
        now = self._clock()
        scored = [scoring.score(self.profile, item, now,
                                similarity=scoring.clip_similarity(sims[item.id]))
                  for item in self.records.memories.get_items(namespace, list(sims))
                  # the record is the truth if a payload lags behind
                  if item.memory_type is MemoryType.PERCEPTUAL and item.modality is target
                  and item.status is MemoryStatus.ACTIVE
                  and (user_id is None or item.user_id == user_id)
                  and (min_importance is None or item.importance >= min_importance)]
        scored.sort(key=lambda h: (-h.score, -h.item.event_time.timestamp()))
        return scored[:top_k]

    def count(self, namespace: str, modality: Modality | str | None = None) -> int:
        """Active perceptual memories of ``namespace`` (of one modality when given)."""
        return self.records.memories.count_of_type(
            require_namespace(namespace), MemoryType.PERCEPTUAL,
            modality=None if modality is None else _modality(modality, "modality"))
