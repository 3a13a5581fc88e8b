"""HelloMemoryService: Google ADK's BaseMemoryService over hello-memory, fed by ADK's
own session service."""

from __future__ import annotations

from google.adk.events.event import Event
from google.adk.memory.memory_entry import MemoryEntry
from google.adk.sessions import InMemorySessionService
from google.genai import types

from hello_memory.interfaces.adapters.google_adk import HelloMemoryService
from hello_memory.memory.manager import MemoryManager


def event(author: str, text: str, ts: float, eid: str) -> Event:
    role = "user" if author == "user" else "model"
    return Event(id=eid, author=author, timestamp=ts, invocation_id="inv",
                 content=types.Content(role=role, parts=[types.Part(text=text)]))


async def test_sessions_into_memory_and_back(manager: MemoryManager) -> None:
    sessions = InMemorySessionService()
    session = await sessions.create_session(app_name="travel", user_id="ana")
    await sessions.append_event(session, event("user", "I'm vegetarian and I hate flying.",
                                               1714550400.0, "e1"))
    await sessions.append_event(session, event("planner", "Noted: trains, veggie food.",
                                               1714550410.0, "e2"))
    service = HelloMemoryService(manager)
    await service.add_session_to_memory(session)
    assert manager.stats("travel/ana")["total"] == 2

    await sessions.append_event(session, event("user", "Book me a train to Vienna.",
                                               1714550500.0, "e3"))
    await service.add_session_to_memory(session)        # the grown session: one more
    assert manager.stats("travel/ana")["total"] == 3

    found = await service.search_memory(app_name="travel", user_id="ana",
                                        query="does Ana hate flying?")
    first = found.memories[0]
    assert first.content.parts[0].text == "I'm vegetarian and I hate flying."
    assert first.author == "user" and first.content.role == "user"
    assert first.timestamp == "2024-05-01T08:00:00+00:00"
    assert first.custom_metadata["session_id"] == session.id
    # other users see nothing of it
    assert (await service.search_memory(app_name="travel", user_id="bo",
                                        query="vegetarian")).memories == []

    await service.delete_memory(app_name="travel", user_id="ana", memory_id=first.id)
    again = await service.search_memory(app_name="travel", user_id="ana", query="vegetarian")
    assert first.id not in {m.id for m in again.memories}
    await service.add_session_to_memory(session)        # a forgotten event stays forgotten
    again = await service.search_memory(app_name="travel", user_id="ana", query="vegetarian")
    assert first.id not in {m.id for m in again.memories}


async def test_explicit_memories_and_event_deltas(manager: MemoryManager) -> None:
    service = HelloMemoryService(manager, root="adk")
    await service.add_memory(app_name="app/1", user_id="u", memories=[
        MemoryEntry(content=types.Content(parts=[types.Part(text="The user's cat is Miso.")]),
                    author="user")])
    await service.add_events_to_memory(app_name="app/1", user_id="u", session_id="s9",
                                       events=[event("user", "Miso turned three today.",
                                                     1717200000.0, "d1"),
                                               Event(id="d2", author="user", invocation_id="i")])
    assert manager.stats("adk/app%2F1/u")["by_type"] == {
        "episodic": 1, "semantic": 1, "perceptual": 0, "working": 0}
    hits = (await service.search_memory(app_name="app/1", user_id="u",
                                        query="how old is the cat?")).memories
    assert {m.content.parts[0].text for m in hits} >= {"Miso turned three today."}
    kinds = {m.content.parts[0].text: m.custom_metadata["memory_type"] for m in hits}
    assert kinds.get("The user's cat is Miso.") in (None, "semantic")
