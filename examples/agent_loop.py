"""A minimal agent loop: recall before answering, store what the model marks as worth
keeping. Runs as is, with no LLM; with one when these variables name it:

    LLM_BASE_URL   an OpenAI-compatible endpoint, e.g. http://localhost:11434/v1 (Ollama)
                   or https://api.openai.com/v1
    LLM_MODEL      the model name at that endpoint (default "any")
    LLM_API_KEY    its key, if it needs one

Without LLM_BASE_URL an offline stand-in answers (it says so on stderr): it keeps
sentences that start with "I'm", "I am", "My" or "I" + a verb of liking as facts and
answers with what it recalled, so the memory part of the loop is the real one.

    python examples/agent_loop.py "Hi! I'm allergic to peanuts."
    python examples/agent_loop.py "Which snacks are safe for me?"   # recalls the allergy

``HM_AGENT_DATA`` names the data directory (default /tmp/hm-agent).
"""

from __future__ import annotations

import os
import re
import sys
from typing import Any

from pydantic import BaseModel

from hello_memory import MemoryManager, MemoryTool


class Reply(BaseModel):
    reply: str
    remember: list[str] = []       # lasting facts the model wants stored


class OfflineModel:
    """Stands in for an LLM when none is configured (module doc)."""

    FACT = re.compile(r"\b(I'm|I am|My|I (?:like|love|prefer|hate|live|work)\b)[^.!?]*[.!?]?",
                      re.IGNORECASE)

    def complete_json(self, messages: list[dict[str, str]], schema: type[Reply]) -> Reply:
        user = messages[-1]["content"]
        facts = [m.group(0).strip() for m in self.FACT.finditer(user)]
        recalled = [line.split(": ", 1)[-1] for line in messages[0]["content"].splitlines()
                    if line.startswith("- [")]
        if recalled:
            answer = "From what I remember: " + " ".join(recalled)
        else:
            answer = "Noted." if facts else "I don't know anything about that yet."
        # first person -> about the user, as a model would store it
        about = [re.sub(r"^(I'm|I am)\b", "The user is", f, flags=re.IGNORECASE) for f in facts]
        return schema(reply=answer, remember=[re.sub(r"^My\b", "The user's", f) for f in about])


def model() -> Any:
    base_url = os.environ.get("LLM_BASE_URL")
    if not base_url:
        print("LLM_BASE_URL is not set: using the offline stand-in (set LLM_BASE_URL, "
              "LLM_MODEL and LLM_API_KEY for a real model)", file=sys.stderr)
        return OfflineModel()
    from hello_memory import OpenAICompatClient

    return OpenAICompatClient(base_url, os.environ.get("LLM_MODEL", "any"),
                              api_key=os.environ.get("LLM_API_KEY"))


def main() -> None:
    llm = model()
    user_text = sys.argv[1] if len(sys.argv) > 1 else "Hi! I'm allergic to peanuts."
    data_dir = os.environ.get("HM_AGENT_DATA", "/tmp/hm-agent")
    with MemoryManager.open(data_dir=data_dir) as mm:
        memory = MemoryTool(mm, namespace="user-42")
        memory.record_turn("user", user_text)                           # working memory
        context = memory.get_context_for_query(user_text, max_tokens=300)
        answer = llm.complete_json([
            {"role": "system", "content": "You are a helpful assistant.\n"
             + (context or "You remember nothing about this user yet.")
             + "\nPut new lasting facts about the user in `remember`."},
            {"role": "user", "content": user_text}], Reply)
        for fact in answer.remember:                                    # long-term memory
            memory.run({"action": "add", "content": fact, "memory_type": "semantic"})
        memory.record_turn("assistant", answer.reply)
        print(answer.reply)


if __name__ == "__main__":
    main()
