"""LangChain ``BaseRetriever`` and ``VectorStore`` over hello-memory (extra
``hello-memory[langchain]``).

>>> from hello_memory.interfaces.adapters.langchain import HelloMemoryRetriever     # doctest: +SKIP
>>> docs = HelloMemoryRetriever(manager=mm, namespace="alice", k=3).invoke("tea?")

- :class:`HelloMemoryRetriever` is hello-memory's one search as a retriever: each hit
  is a ``Document`` (``id`` = memory id, the memory type, score, times and metadata in
  ``metadata``). ``k`` in the constructor or ``invoke(query, k=...)``.
- :class:`HelloMemoryVectorStore` keeps LangChain documents as memories of one
  namespace. A document's id (given, or a new UUID) maps to a stable memory id, so
  adding the same id again replaces the document; ``page_content`` and ``metadata``
  come back exactly as added. ``similarity_search`` is the same one search.

What the ``VectorStore`` interface cannot carry: hello-memory embeds with the model
its data directory was built with, so an ``embedding`` given to the constructor or
``from_texts`` is not used (a warning says so; :attr:`HelloMemoryVectorStore.embeddings`
returns the store's own model as LangChain ``Embeddings``), and
``similarity_search_by_vector`` / MMR search by vector are not supported: the search
reads the question's text (keywords, names, time expressions), not only a vector.
Scores are hello-memory's final scores in [0, 1], higher is better, and the search
leaves out memories under its relevance floor (``retrieval.min_similarity``), so
``k`` is a maximum.
"""

from __future__ import annotations

import uuid
import warnings
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from hello_memory.interfaces.adapters import missing_extra

try:  # the framework is an optional extra: a missing one names it
    from langchain_core.callbacks import (
        AsyncCallbackManagerForRetrieverRun,
        CallbackManagerForRetrieverRun,
    )
    from langchain_core.documents import Document
    from langchain_core.embeddings import Embeddings
    from langchain_core.retrievers import BaseRetriever
    from langchain_core.vectorstores import VectorStore
except ModuleNotFoundError as _missing:
    raise missing_extra("langchain", _missing, __name__) from _missing

from pydantic import ConfigDict, Field

from hello_memory.interfaces.adapters._common import add_keyed, existing, keyed_item, stable_id
from hello_memory.interfaces.aio import AsyncMemoryManager
from hello_memory.memory.manager import MemoryManager
from hello_memory.memory.scoring import SearchHit
from hello_memory.types import MemoryItem, MemoryType
from hello_memory.validation import require_namespace

__all__ = ["HelloMemoryEmbeddings", "HelloMemoryRetriever", "HelloMemoryVectorStore"]

META = "langchain"  # metadata key: the document's own id and metadata


def _manager(manager: MemoryManager | AsyncMemoryManager) -> tuple[MemoryManager,
                                                                   AsyncMemoryManager]:
    aio = AsyncMemoryManager.wrap(manager)
    return aio.manager, aio


def _hit_document(hit: SearchHit) -> Document:
    item = hit.item
    own = item.metadata.get(META)
    if own is not None:  # a document the vector store added: its own id and metadata
        return Document(id=own["id"], page_content=item.content, metadata=dict(own["metadata"]))
    return Document(id=item.id, page_content=item.content, metadata={
        "id": item.id, "namespace": item.namespace, "memory_type": item.memory_type.value,
        "score": hit.score, "importance": item.importance,
        "event_time": item.event_time.isoformat(), "session_id": item.session_id,
        "user_id": item.user_id, "metadata": item.metadata})


class HelloMemoryRetriever(BaseRetriever):
    """hello-memory's search as a LangChain retriever over one namespace."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    manager: Any = Field(description="a MemoryManager or AsyncMemoryManager")
    namespace: str
    k: int = 4
    memory_types: list[str] | None = None
    search_kwargs: dict[str, Any] = Field(default_factory=dict,
                                          description="more MemoryManager.search arguments")

    def _search(self, query: str, k: int | None, **kwargs: Any) -> list[SearchHit]:
        mm, _ = _manager(self.manager)
        return mm.search(query, self.memory_types, self.k if k is None else k,
                         namespace=require_namespace(self.namespace),
                         **{**self.search_kwargs, **kwargs})

    def _get_relevant_documents(self, query: str, *, run_manager: CallbackManagerForRetrieverRun,
                                k: int | None = None, **kwargs: Any) -> list[Document]:
        return [_hit_document(h) for h in self._search(query, k, **kwargs)]

    async def _aget_relevant_documents(self, query: str, *,
                                       run_manager: AsyncCallbackManagerForRetrieverRun,
                                       k: int | None = None, **kwargs: Any) -> list[Document]:
        _, aio = _manager(self.manager)
        hits = await aio.run(self._search, query, k, **kwargs)
        return [_hit_document(h) for h in hits]


class HelloMemoryEmbeddings(Embeddings):
    """The store's own text embedder as LangChain ``Embeddings``."""

    def __init__(self, manager: MemoryManager) -> None:
        self.manager = manager

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return [[float(x) for x in v] for v in self.manager.embed(texts)]

    def embed_query(self, text: str) -> list[float]:
        return self.embed_documents([text])[0]


class HelloMemoryVectorStore(VectorStore):
    """LangChain documents kept as memories of one namespace (module doc)."""

    def __init__(self, manager: MemoryManager | AsyncMemoryManager, *, namespace: str,
                 memory_type: MemoryType | str = MemoryType.SEMANTIC,
                 embedding: Embeddings | None = None, candidates: int = 50) -> None:
        self.manager, self.aio = _manager(manager)
        self.namespace = require_namespace(namespace)
        self.memory_type = MemoryType(memory_type)
        self.candidates = candidates
        if embedding is not None:
            warnings.warn("HelloMemoryVectorStore embeds with its data directory's own "
                          "model; the embedding passed in is not used", UserWarning,
                          stacklevel=2)
        self._embeddings = HelloMemoryEmbeddings(self.manager)

    @property
    def embeddings(self) -> Embeddings:
        return self._embeddings

    def _id(self, doc_id: str) -> str:
        return stable_id("langchain", self.namespace, doc_id)

    def _document(self, item: MemoryItem) -> Document:
        own = item.metadata.get(META) or {"id": item.id, "metadata": {}}
        return Document(id=own["id"], page_content=item.content, metadata=dict(own["metadata"]))

    # --- writes -----------------------------------------------------------------------
    def add_documents(self, documents: list[Document], **kwargs: Any) -> list[str]:
        ids = kwargs.pop("ids", None)
        if ids is not None and len(ids) != len(documents):
            raise ValueError(f"got {len(ids)} ids for {len(documents)} documents")
        doc_ids = [str(ids[n]) if ids is not None and ids[n] is not None
                   else (doc.id or str(uuid.uuid4())) for n, doc in enumerate(documents)]
        latest = dict(zip(doc_ids, documents, strict=True))  # a repeated id: the last wins
        items = [keyed_item(self._id(doc_id), self.namespace, doc.page_content,
                            self.memory_type,
                            {META: {"id": doc_id, "metadata": dict(doc.metadata)}},
                            limits=self.manager.limits)
                 for doc_id, doc in latest.items()]   # validated: a bad one removes nothing
        self.delete(list(latest))
        add_keyed(self.manager, items)
        return doc_ids

    def add_texts(self, texts: Iterable[str], metadatas: list[dict[str, Any]] | None = None,
                  *, ids: list[str] | None = None, **kwargs: Any) -> list[str]:
        texts = list(texts)
        metas = metadatas or [{} for _ in texts]
        return self.add_documents([Document(page_content=t, metadata=m)
                                   for t, m in zip(texts, metas, strict=True)], ids=ids)

    def delete(self, ids: list[str] | None = None, **kwargs: Any) -> bool | None:
        if ids is None:
            raise ValueError("delete needs the ids to delete (clear the namespace with "
                             "MemoryManager.clear)")
        found = existing(self.manager, self.namespace, [self._id(str(i)) for i in ids])
        if found:
            self.manager.edit.remove_many(self.namespace, list(found))
        return True

    def get_by_ids(self, ids: Sequence[str], /) -> list[Document]:
        found = existing(self.manager, self.namespace, [self._id(str(i)) for i in ids])
        return [self._document(i) for i in found.values()]

    # --- search -----------------------------------------------------------------------
    def _matches(self, doc: Document, flt: dict[str, Any] | None) -> bool:
        return not flt or all(doc.metadata.get(k) == v for k, v in flt.items())

    def similarity_search_with_score(self, query: str, k: int = 4, *,
                                     filter: dict[str, Any] | None = None,  # noqa: A002
                                     **kwargs: Any) -> list[tuple[Document, float]]:
        """hello-memory's search, best first; ``filter``: exact values of the documents'
        metadata, applied to the ``candidates`` best hits."""
        top_k = max(k, self.candidates) if filter else k
        hits = self.manager.search(query, top_k=top_k, namespace=self.namespace, **kwargs)
        scored = [(self._document(h.item), h.score) for h in hits]
        return [(d, s) for d, s in scored if self._matches(d, filter)][:k]

    def similarity_search(self, query: str, k: int = 4, **kwargs: Any) -> list[Document]:
        return [d for d, _ in self.similarity_search_with_score(query, k, **kwargs)]

    def _select_relevance_score_fn(self) -> Callable[[float], float]:
        return lambda score: score  # already a relevance in [0, 1]

    def similarity_search_by_vector(self, embedding: list[float], k: int = 4,
                                    **kwargs: Any) -> list[Document]:
        raise NotImplementedError(
            "hello-memory searches by the question's text (keywords, names, time "
            "expressions as well as its vector); use similarity_search(query)")

    # --- async: the same methods in the AsyncMemoryManager's pool ---------------------
    async def aadd_documents(self, documents: list[Document], **kwargs: Any) -> list[str]:
        return await self.aio.run(self.add_documents, documents, **kwargs)

    async def aadd_texts(self, texts: Iterable[str],
                         metadatas: list[dict[str, Any]] | None = None, *,
                         ids: list[str] | None = None, **kwargs: Any) -> list[str]:
        return await self.aio.run(self.add_texts, list(texts), metadatas, ids=ids, **kwargs)

    async def adelete(self, ids: list[str] | None = None, **kwargs: Any) -> bool | None:
        return await self.aio.run(self.delete, ids, **kwargs)

    async def aget_by_ids(self, ids: Sequence[str], /) -> list[Document]:
        return await self.aio.run(self.get_by_ids, ids)

    async def asimilarity_search_with_score(self, query: str, k: int = 4,
                                            **kwargs: Any) -> list[tuple[Document, float]]:
        return await self.aio.run(self.similarity_search_with_score, query, k, **kwargs)

    async def asimilarity_search(self, query: str, k: int = 4, **kwargs: Any) -> list[Document]:
        return await self.aio.run(self.similarity_search, query, k, **kwargs)

    @classmethod
    def from_texts(cls, texts: list[str], embedding: Embeddings | None = None,
                   metadatas: list[dict[str, Any]] | None = None, *,
                   ids: list[str] | None = None, **kwargs: Any) -> HelloMemoryVectorStore:
        """``from_texts(texts, None, manager=mm, namespace="kb")``; an ``embedding``
        is not used (module doc)."""
        store = cls(kwargs.pop("manager"), namespace=kwargs.pop("namespace"),
                    embedding=embedding, **kwargs)
        store.add_texts(texts, metadatas, ids=ids)
        return store

