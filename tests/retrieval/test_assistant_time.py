"""Issue 26 failure classes 2 and 3 through the one search: a plan written without a
year is found by a question about the coming weeks, and a memory that mentions "this
year" or "every Monday" does not answer "what did I do last Thursday?"."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest

from hello_memory.config import load_settings
from hello_memory.factory import open_stores
from hello_memory.memory.manager import MemoryManager
from hello_memory.text.entities import RuleExtractor

pytestmark = pytest.mark.slow

TZ = timezone(timedelta(hours=1))
NS = "life"


@pytest.fixture(scope="module")
def embedder() -> Any:
    from hello_memory.embedding import SentenceTransformerEmbedder

    return SentenceTransformerEmbedder()


@pytest.fixture
def mm(tmp_path: Path, embedder: Any) -> Iterator[MemoryManager]:
    settings = load_settings(environ={}, data_dir=tmp_path / "data")
    manager = MemoryManager(open_stores(settings, embedder=embedder),
                            extractor=RuleExtractor(),
                            clock=lambda: datetime(2026, 12, 4, 18, 0, tzinfo=TZ))
    yield manager
    manager.close()


def add(mm: MemoryManager, text: str, said: datetime, kind: str = "episodic") -> str:
    return mm.add(text, namespace=NS, memory_type=kind, event_time=said).id


def test_a_plan_without_a_year_is_found_by_a_question_about_the_coming_weeks(mm):
    said = datetime(2026, 11, 20, 10, 0, tzinfo=TZ)
    dentist = add(mm, "Dentist appointment on 9 December at 10:15", said)
    add(mm, "Had a dentist check-up, no fillings needed", datetime(2026, 6, 2, 9, tzinfo=TZ))
    add(mm, "Lunch with Marco at the Thai place", datetime(2026, 11, 28, 13, tzinfo=TZ))
    asked = datetime(2026, 12, 4, 18, 0, tzinfo=TZ)
    hits = mm.search("What's on next week?", namespace=NS, reference_time=asked)
    assert hits and hits[0].id == dentist
    [mention] = mm.mentioned_times(dentist, namespace=NS)
    assert mention.start.astimezone(TZ).date().isoformat() == "2026-12-09"


def test_this_year_and_every_monday_do_not_answer_last_thursday(mm):
    asked = datetime(2026, 12, 4, 18, 0, tzinfo=TZ)  # a Friday
    add(mm, "This year I want to finally learn to bake sourdough",
        datetime(2026, 1, 3, 11, tzinfo=TZ), "semantic")
    add(mm, "Every Monday I do a long swim before work", datetime(2026, 9, 1, 8, tzinfo=TZ),
        "semantic")
    # "last Thursday" asked on Friday 4 December is 26 November (the previous calendar
    # week's Thursday, text/timeparse.py); the note was written the day after
    thursday = add(mm, "Went bouldering with Priya yesterday after work",
                   datetime(2026, 11, 27, 9, tzinfo=TZ))
    hits = mm.search("What did I do last Thursday?", namespace=NS, reference_time=asked)
    assert hits[0].id == thursday
    # the recurring and the whole-year memory are not inside the day asked about
    assert all(h.breakdown.time < 1 for h in hits[1:])


def test_a_question_at_the_ends_of_the_calendar_is_answered(mm):
    add(mm, "Went bouldering with Priya", datetime(2026, 11, 27, 9, tzinfo=TZ))
    for question in ("What happened since 0001-01-01?", "Anything on 9999-12-31?"):
        assert isinstance(mm.search(question, namespace=NS), list)


def test_a_memory_stating_the_asked_attribute_meets_one_constraint_more(mm):
    # "What car do I drive?" asks for an attribute (text/attributes.py): the symbolic
    # view counts the memory that states it one constraint above other facts of the user
    said = datetime(2026, 10, 1, 9, tzinfo=TZ)
    add(mm, "My birthday is 3 March.", said, "semantic")
    add(mm, "I speak Mandarin, Dutch and English.", said, "semantic")
    car = add(mm, "Sold the Yaris to a student and picked up a second-hand Renault Zoe.",
              said + timedelta(days=10))
    hits = mm.search("What car do I drive?", namespace=NS,
                     reference_time=datetime(2026, 12, 2, 9, tzinfo=TZ))
    met = {h.id: h.views["symbolic"].score for h in hits if "symbolic" in h.views}
    assert met[car] == max(met.values()) and sorted(met.values())[-2] < met[car]


def test_the_day_asked_about_outranks_memories_outside_it_whoever_they_name(mm):
    # "What did I do last Saturday?" shares no word with Saturday's note, which names
    # the band, not the user: the time is a hard constraint and the note is the
    # user's own day, so it comes first (issue 26, time questions)
    asked = datetime(2026, 12, 2, 20, 0, tzinfo=TZ)  # a Wednesday; last Saturday: 28 Nov
    add(mm, "Every other Friday we have pizza night with Lotte at our place.",
        datetime(2026, 6, 30, 9, tzinfo=TZ), "semantic")
    add(mm, "This year we're doing Christmas in Singapore.",
        datetime(2026, 11, 18, 9, tzinfo=TZ), "semantic")
    add(mm, "Spent the whole Saturday at IKEA with Daniel.",
        datetime(2026, 11, 21, 18, tzinfo=TZ))
    gig = add(mm, "Late Tram played their first real gig at ACU tonight, about forty "
                  "people.", datetime(2026, 11, 28, 23, 30, tzinfo=TZ))
    hits = mm.search("What did I do last Saturday?", namespace=NS, reference_time=asked)
    assert hits[0].id == gig
    assert hits[0].breakdown.subject == 1.0 and hits[0].breakdown.time == 1.0
    assert all(h.breakdown.time < 1 for h in hits[1:])


def test_a_note_of_what_happened_is_dated_by_its_event_time(mm):
    """Issue 26: "When were my farewell drinks?" is answered by the note written that
    evening, though its text names no time: a standalone episodic note is dated by
    its event time, so a memory naming a weekday does not outrank it. A conversation
    turn (in a session) is dated by its session and still needs a time in its text."""
    farewell = add(mm, "My farewell drinks at Quayside; Hannah gave me a framed screenshot",
                   datetime(2026, 8, 28, 19, tzinfo=TZ))
    add(mm, "Friday drinks with the Merrow team at Cafe Ledig Erf, Tomasz is leaving",
        datetime(2026, 11, 13, 18, tzinfo=TZ))
    add(mm, "At Merrow I work from the office Tuesday to Thursday", datetime(2026, 9, 15, 9,
                                                                          tzinfo=TZ), "semantic")
    asked = datetime(2026, 12, 1, 20, 0, tzinfo=TZ)
    hits = mm.search("When were my farewell drinks at Quayside?", namespace=NS,
                     reference_time=asked)
    assert hits[0].id == farewell and hits[0].breakdown.when == 1.0
    turn = mm.add("We had the farewell drinks for Quayside people at the pub", namespace=NS,
                  memory_type="episodic", session_id="chat-1",
                  event_time=datetime(2026, 8, 29, 10, tzinfo=TZ)).id
    hits = mm.search("When were my farewell drinks at Quayside?", namespace=NS,
                     reference_time=asked, top_k=10)
    assert [h.breakdown.when for h in hits if h.id == turn] == [0.5]


def test_a_habit_is_no_event_of_the_day_asked_about(mm):
    """Issue 26, failure class 3: "What did I do last Saturday?" is answered by
    Saturday's gig, whose words share nothing with the question, not by the standing
    habit "every other Friday we have pizza night" that dense search and BM25 put first.
    A semantic memory outside the time asked keeps STANDING_TIME_MISS_FACTOR."""
    gig = add(mm, "Late Tram played their first real gig at ACU tonight, about forty people",
              datetime(2026, 9, 26, 23, tzinfo=TZ))
    add(mm, "Every other Friday we have pizza night with Lotte at our place, I do the dough",
        datetime(2026, 6, 30, 9, tzinfo=TZ), "semantic")
    add(mm, "At Merrow I work from the office Tuesday to Thursday and from home on Mondays",
        datetime(2026, 9, 15, 9, tzinfo=TZ), "semantic")
    add(mm, "Called in sick, my knees are still too sore", datetime(2026, 10, 6, 9, tzinfo=TZ))
    asked = datetime(2026, 9, 30, 20, 0, tzinfo=TZ)
    hits = mm.search("What did I do last Saturday?", namespace=NS, reference_time=asked)
    assert hits[0].id == gig, [h.item.content for h in hits]
    assert {h.breakdown.time for h in hits if h.item.memory_type.value == "semantic"} == {0.3}


def test_a_day_said_in_summer_time_is_that_day_in_winter_time(mm):
    """Issue 26: "Lotte's birthday dinner is on 26 November", said in October (UTC+2),
    is inside "last Thursday" asked on 30 November (UTC+1): the two midnights differ
    by an hour, and containment allows for it (MENTION_OFFSET_SLACK)."""
    summer = timezone(timedelta(hours=2))
    plan = add(mm, "Lotte's 35th birthday dinner is on 26 November at De Groene Tafel",
               datetime(2026, 10, 12, 19, tzinfo=summer))
    add(mm, "Dinner with the climbing group on 25 November", datetime(2026, 10, 1, 9,
                                                                      tzinfo=summer))
    asked = datetime(2026, 11, 30, 8, 10, tzinfo=TZ)
    hits = mm.search("What did I do last Thursday?", namespace=NS, reference_time=asked)
    assert hits and hits[0].id == plan and hits[0].breakdown.time == 1.0
