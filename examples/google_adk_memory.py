"""hello-memory as a Google ADK memory service (offline, embedded).

    pip install "hello-memory[google-adk]"
    python examples/google_adk_memory.py [DATA_DIR]
"""

from __future__ import annotations

import asyncio
import sys
import tempfile

from google.adk.events.event import Event
from google.adk.sessions import InMemorySessionService
from google.genai import types

from hello_memory import MemoryManager
from hello_memory.interfaces.adapters.google_adk import HelloMemoryService


async def main(data_dir: str) -> None:
    with MemoryManager.open(data_dir=data_dir) as mm:
        sessions = InMemorySessionService()
        session = await sessions.create_session(app_name="travel", user_id="ana")
        for author, text in [("user", "I'm vegetarian and I hate flying."),
                             ("planner", "Noted: trains and veggie restaurants.")]:
            role = "user" if author == "user" else "model"
            await sessions.append_event(session, Event(
                author=author, invocation_id="i1",
                content=types.Content(role=role, parts=[types.Part(text=text)])))
        memory = HelloMemoryService(mm)        # Runner(..., memory_service=memory)
        await memory.add_session_to_memory(session)
        found = await memory.search_memory(app_name="travel", user_id="ana",
                                           query="how does Ana like to travel?")
        for entry in found.memories:
            print(entry.author, entry.timestamp, entry.content.parts[0].text)


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1] if len(sys.argv) > 1 else tempfile.mkdtemp(prefix="hm-adk-")))
