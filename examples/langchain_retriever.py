"""hello-memory as a LangChain retriever and vector store (offline, embedded).

    pip install "hello-memory[langchain]"
    python examples/langchain_retriever.py [DATA_DIR]
"""

from __future__ import annotations

import sys
import tempfile

from langchain_core.documents import Document

from hello_memory import MemoryManager
from hello_memory.interfaces.adapters.langchain import HelloMemoryRetriever, HelloMemoryVectorStore


def main(data_dir: str) -> None:
    with MemoryManager.open(data_dir=data_dir) as mm:
        mm.add("Alice moved to Berlin in May 2024.", "episodic", namespace="alice")
        mm.add("Alice prefers green tea.", "semantic", namespace="alice")
        retriever = HelloMemoryRetriever(manager=mm, namespace="alice", k=1)
        for doc in retriever.invoke("What does Alice like to drink?"):
            print("retriever:", doc.page_content, round(doc.metadata["score"], 3))

        store = HelloMemoryVectorStore(mm, namespace="kb")
        store.add_documents([Document(page_content="Hold the reset button for ten seconds.",
                                      metadata={"source": "router.md"}),
                             Document(page_content="The printer takes A4 paper.",
                                      metadata={"source": "printer.md"})], ids=["r", "p"])
        doc = store.similarity_search("How do I reset the router?", k=1)[0]
        print("vector store:", doc.id, doc.metadata["source"], doc.page_content)


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else tempfile.mkdtemp(prefix="hm-langchain-"))
