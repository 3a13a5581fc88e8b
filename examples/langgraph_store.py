"""A LangGraph StateGraph whose long-term memory is hello-memory (offline, embedded).

    pip install "hello-memory[langgraph]"
    python examples/langgraph_store.py [DATA_DIR]
"""

from __future__ import annotations

import operator
import sys
import tempfile
from typing import Annotated, Any, TypedDict

from langgraph.config import get_store
from langgraph.graph import END, START, StateGraph

from hello_memory import MemoryManager
from hello_memory.interfaces.adapters.langgraph import HelloMemoryStore


class State(TypedDict):
    user: str
    message: str
    replies: Annotated[list[str], operator.add]


def answer(state: State) -> dict[str, Any]:
    store = get_store()
    namespace = ("memories", state["user"])
    if state["message"].startswith("remember "):
        fact = state["message"].removeprefix("remember ")
        store.put(namespace, f"fact-{abs(hash(fact)) % 10**8}", {"text": fact})
        return {"replies": [f"noted: {fact}"]}
    found = store.search(namespace, query=state["message"], limit=1)
    return {"replies": [found[0].value["text"] if found else "I don't know yet."]}


def main(data_dir: str) -> None:
    builder = StateGraph(State)
    builder.add_node("answer", answer)
    builder.add_edge(START, "answer")
    builder.add_edge("answer", END)
    with MemoryManager.open(data_dir=data_dir) as mm:
        graph = builder.compile(store=HelloMemoryStore(mm))
        for message in ["remember Dana's cat is called Miso", "remember Dana flies gliders",
                        "what is my cat's name?"]:
            out = graph.invoke({"user": "dana", "message": message, "replies": []})
            print(f"{message!r} -> {out['replies'][-1]}")
        # the same memories, seen from hello-memory itself
        print(mm.search("pets", namespace="memories/dana", top_k=1)[0].item.content)


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else tempfile.mkdtemp(prefix="hm-langgraph-"))
