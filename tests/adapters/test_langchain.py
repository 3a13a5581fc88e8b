"""The LangChain adapters against langchain-tests' standard suites (a suite none of us
wrote is the acceptance test), plus what the suites do not look at."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from adapter_helpers import make_manager
from langchain_core.documents import Document
from langchain_core.vectorstores import VectorStore
from langchain_tests.integration_tests import (
    RetrieversIntegrationTests,
    VectorStoreIntegrationTests,
)

from hello_memory.errors import InvalidInputError
from hello_memory.interfaces.adapters.langchain import HelloMemoryRetriever, HelloMemoryVectorStore
from hello_memory.memory.manager import MemoryManager

FACTS = [
    "Alice moved to Berlin in May 2024.",
    "Alice works as a nurse at the Charite hospital.",
    "Alice's brother Tom lives in Hamburg.",
    "Alice prefers green tea over coffee.",
    "Alice adopted a beagle called Rex.",
]


class TestHelloMemoryVectorStore(VectorStoreIntegrationTests):
    @pytest.fixture
    def vectorstore(self, manager: MemoryManager) -> Iterator[VectorStore]:
        # The suite's DeterministicFakeEmbedding is not used: the store embeds with its
        # data directory's model (docs/ADAPTERS.md), so it is not passed in.
        store = HelloMemoryVectorStore(manager, namespace=f"lc-{uuid.uuid4().hex[:8]}")
        yield store
        manager.clear(store.namespace, confirm=True)


class TestHelloMemoryRetriever(RetrieversIntegrationTests):
    manager: MemoryManager

    @pytest.fixture(autouse=True, scope="class")
    @classmethod
    def _memories(cls, embedder: Any, tmp_path_factory: pytest.TempPathFactory
                  ) -> Iterator[None]:
        mm = make_manager(tmp_path_factory.mktemp("retriever") / "data", embedder)
        for fact in FACTS:
            mm.add(fact, "semantic", namespace="alice")
        cls.manager = mm
        yield
        mm.close()

    @property
    def retriever_constructor(self) -> type[HelloMemoryRetriever]:
        return HelloMemoryRetriever

    @property
    def retriever_constructor_params(self) -> dict[str, Any]:
        return {"manager": self.manager, "namespace": "alice"}

    @property
    def retriever_query_example(self) -> str:
        return "What do you know about Alice?"


def test_retriever_documents_carry_the_memory(manager: MemoryManager) -> None:
    mem = manager.add("Bob's sister lives in Lyon.", "semantic", namespace="bob")
    manager.add("Bob plays chess on Sundays.", "episodic", namespace="bob")
    docs = HelloMemoryRetriever(manager=manager, namespace="bob", k=1).invoke(
        "Where does Bob's sister live?")
    assert [d.id for d in docs] == [mem.id]
    assert docs[0].metadata["memory_type"] == "semantic" and docs[0].metadata["score"] > 0
    only_episodic = HelloMemoryRetriever(manager=manager, namespace="bob",
                                         memory_types=["episodic"]).invoke("Bob")
    assert [d.page_content for d in only_episodic] == ["Bob plays chess on Sundays."]


def test_vector_store_extras(manager: MemoryManager, tmp_path: Path) -> None:
    with pytest.warns(UserWarning, match="not used"):
        store = HelloMemoryVectorStore.from_texts(
            ["The router resets after ten seconds.", "The printer needs A4 paper."],
            HelloMemoryVectorStore(manager, namespace="probe").embeddings,
            [{"topic": "router"}, {"topic": "printer"}], manager=manager, namespace="kb")
    hits = store.similarity_search_with_relevance_scores("how do I reset the router?", k=2)
    assert hits[0][0].metadata == {"topic": "router"} and 0 < hits[0][1] <= 1
    assert [d.metadata for d in store.similarity_search("paper", filter={"topic": "printer"})
            ] == [{"topic": "printer"}]
    # the documents are memories: every interface finds them
    assert manager.search("printer paper", namespace="kb")[0].item.content.startswith(
        "The printer")
    assert len(store.embeddings.embed_query("x")) == 384
    with pytest.raises(NotImplementedError):
        store.similarity_search_by_vector([0.0] * 384)
    retriever = store.as_retriever(search_kwargs={"k": 1})
    assert retriever.invoke("router")[0] == Document(
        id=retriever.invoke("router")[0].id, page_content="The router resets after ten seconds.",
        metadata={"topic": "router"})


def test_a_bad_replacement_keeps_the_old_document(manager: MemoryManager) -> None:
    store = HelloMemoryVectorStore(manager, namespace="kb2")
    store.add_documents([Document(page_content="original", metadata={"v": 1})], ids=["a"])
    with pytest.raises(InvalidInputError):
        store.add_documents([Document(page_content="   ", metadata={"v": 2})], ids=["a"])
    assert store.get_by_ids(["a"]) == [Document(id="a", page_content="original",
                                                metadata={"v": 1})]
