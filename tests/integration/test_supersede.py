"""Facts that update (issue 15, part 2) without an LLM: the rules of text/facts.py,
validity on the records, default search without superseded memories, ``as_of``
(Python, REST, MCP, CLI), export with validity, and the v4 -> v5 migration."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import anyio
import pytest
from asgi_client import AsgiApi  # tests/ is on sys.path
from typer.testing import CliRunner

from hello_memory.config import load_settings
from hello_memory.factory import open_stores
from hello_memory.memory.manager import MemoryManager
from hello_memory.stores.records import SCHEMA_VERSION, ItemFilter, RecordStore
from hello_memory.text.entities import RuleExtractor
from hello_memory.text.facts import parse_fact, same_value
from hello_memory.text.people import SELF_ENTITY
from hello_memory.types import MemoryItem

T0 = datetime(2023, 1, 10, tzinfo=timezone.utc)
T1 = datetime(2024, 3, 5, tzinfo=timezone.utc)
NS = "people"


@pytest.fixture(scope="module")
def embedder() -> Any:
    from hello_memory.embedding import SentenceTransformerEmbedder

    return SentenceTransformerEmbedder()


def make(data: Path, embedder: Any, **settings: Any) -> MemoryManager:
    s = load_settings(environ={}, data_dir=data, **settings)
    return MemoryManager(open_stores(s, embedder=embedder), extractor=RuleExtractor(),
                         supersede=s.memory.supersede)


@pytest.fixture
def mm(tmp_path: Path, embedder: Any) -> Iterator[MemoryManager]:
    m = make(tmp_path / "data", embedder)
    yield m
    m.close()


# --- the rules ------------------------------------------------------------------------
@pytest.mark.parametrize(("text", "subject", "attribute", "value"), [
    ("Tom lives in Oslo.", "tom", "residence", "oslo"),
    ("Tom moved from Oslo to Bergen last spring.", "tom", "residence", "bergen"),
    ("I moved to Munich in 2023.", SELF_ENTITY, "residence", "munich"),
    ("The user works at Equinor.", SELF_ENTITY, "employer", "equinor"),
    ("Anna now works for Statkraft.", "anna", "employer", "statkraft"),
    ("Anna is married to Tom Berg.", "anna", "spouse", "tom berg"),
    ("I'm married to Mia.", SELF_ENTITY, "spouse", "mia"),
    ("My wife works at IKEA.", "role:the user:wife", "employer", "ikea"),
    ("My phone number is 555-0142.", SELF_ENTITY, "phone", "555-0142"),
    ("李伟住在北京。", "李伟", "residence", "北京"),
    ("李伟去年搬到了杭州。", "李伟", "residence", "杭州"),
    ("我在阿里巴巴工作。", SELF_ENTITY, "employer", "阿里巴巴"),
    ("我跳槽到了腾讯。", SELF_ENTITY, "employer", "腾讯"),
    ("王芳和李伟结婚了。", "王芳", "spouse", "李伟"),
    ("我的手机号是13800001111。", SELF_ENTITY, "phone", "13800001111"),
])
def test_rules_read_single_valued_facts(text: str, subject: str, attribute: str,
                                        value: str) -> None:
    fact = parse_fact(text)
    assert fact is not None, text
    assert (fact.subject, fact.attribute, fact.value) == (subject, attribute, value)


@pytest.mark.parametrize("text", [
    "She moved to Paris.",                 # no subject to hold it to
    "Tom no longer lives in Oslo.",        # a negation states no value
    "Tom joined a book club.",             # joining a club is no employer
    "Alice prefers green tea.",            # preferences hold several at once
    "The meeting moved to Tuesday.",
    "他搬到了上海。",
    "李伟不再住在北京了。",
    "Losing my job was hard, but I'm living my dreams now.",  # a judgement, in the past
    "My team is like my second family.",
    "My job is stressful.",
])
def test_rules_leave_unclear_cases_alone(text: str) -> None:
    assert parse_fact(text) is None


def test_values_compare_loosely() -> None:
    assert same_value("New York", "new york city") and same_value("杭州", "杭州市")
    assert not same_value("Oslo", "Bergen") and not same_value("北京", "杭州")


# --- validity through the manager ------------------------------------------------------
def add(mm: MemoryManager, content: str, when: datetime, **kw: Any) -> MemoryItem:
    return mm.add(content, namespace=NS, event_time=when, **kw)


def contents(hits: Any) -> list[str]:
    return [h.item.content for h in hits]


def test_a_move_supersedes_the_old_home_and_as_of_finds_it(mm: MemoryManager,
                                                             tmp_path: Path) -> None:
    old = add(mm, "Tom lives in Oslo.", T0)
    other = add(mm, "Anna lives in Oslo.", T0)  # another subject: never touched
    new = add(mm, "Tom moved from Oslo to Bergen.", T1)
    before = mm.get(old.id, namespace=NS)
    assert before.valid_to == T1 and before.superseded_by == new.id
    assert before.valid_from == T0 and before.event_time == T0  # event time kept
    assert mm.get(other.id, namespace=NS).valid_to is None
    assert new.valid_to is None and new.superseded_by is None

    now = contents(mm.search("Where does Tom live?", namespace=NS, top_k=5))
    assert "Tom lives in Oslo." not in now and "Tom moved from Oslo to Bergen." in now
    then = contents(mm.search("Where does Tom live?", namespace=NS, top_k=5,
                              as_of=T0 + timedelta(days=30)))
    assert "Tom lives in Oslo." in then and "Tom moved from Oslo to Bergen." not in then
    # the same through the filters mapping, and after the move
    later = contents(mm.search("Where does Tom live?", namespace=NS,
                               filters={"as_of": T1 + timedelta(days=1)}))
    assert "Tom moved from Oslo to Bergen." in later and "Tom lives in Oslo." not in later

    # nothing is deleted: export holds both, with their validity
    out = tmp_path / "export.jsonl"
    assert mm.export_jsonl(out, namespace=NS) == 3
    rows = {r["content"]: r for r in map(json.loads, out.read_text().splitlines())}
    assert rows["Tom lives in Oslo."]["valid_to"] == T1.isoformat()
    assert rows["Tom lives in Oslo."]["superseded_by"] == new.id
    assert rows["Tom moved from Oslo to Bergen."]["valid_to"] is None
    # ... and an import elsewhere keeps it
    with make(tmp_path / "copy", mm.stores.embedder) as copy:
        assert copy.import_jsonl(out)["imported"] == 3
        again = copy.get(old.id, namespace=NS)
        assert again.valid_to == T1 and again.superseded_by == new.id
        assert "Tom lives in Oslo." not in contents(copy.search("Where does Tom live?",
                                                                namespace=NS))
    audit = mm.stores.records.audit.list(NS)
    assert any(a["action"] == "supersede" and a["details"]["superseded"] == [old.id]
               for a in audit)


def test_context_blocks_leave_superseded_memories_out(mm: MemoryManager) -> None:
    from hello_memory.interfaces.tools.memory_tool import MemoryTool

    add(mm, "Tom lives in Oslo.", T0, session_id="chat-1")
    add(mm, "Tom moved from Oslo to Bergen.", T1, session_id="chat-1")
    block = MemoryTool(mm, namespace=NS).get_context_for_query("Where does Tom live?")
    assert "Tom moved from Oslo to Bergen." in block and "Tom lives in Oslo." not in block
    newest = mm.stores.records.memories.recent_by_topic(NS, ["chat-1"], 5)["chat-1"]
    assert [i.content for i in newest] == ["Tom moved from Oslo to Bergen."]


def test_chinese_and_the_other_attributes(mm: MemoryManager) -> None:
    home = add(mm, "李伟住在北京。", T0)
    other = add(mm, "王芳住在北京。", T0)
    moved = add(mm, "李伟去年搬到了杭州。", T1)
    job = add(mm, "我在阿里巴巴工作。", T0)
    switched = add(mm, "我跳槽到了腾讯。", T1)
    wed = add(mm, "Anna is married to Tom Berg.", T0)
    rewed = add(mm, "Anna is married to Erik Lund.", T1)
    works = add(mm, "Erik works at Equinor.", T0)
    now = add(mm, "Erik now works for Statkraft.", T1)
    for old, new in ((home, moved), (job, switched), (wed, rewed), (works, now)):
        got = mm.get(old.id, namespace=NS)
        assert (got.superseded_by, got.valid_to) == (new.id, T1), old.content
    assert mm.get(other.id, namespace=NS).superseded_by is None
    hits = contents(mm.search("李伟住在哪里？", namespace=NS))
    assert "李伟住在北京。" not in hits and "李伟去年搬到了杭州。" in hits


def test_restating_and_other_subjects_supersede_nothing(mm: MemoryManager) -> None:
    first = add(mm, "Tom lives in Bergen.", T0)
    again = add(mm, "Tom still lives in Bergen.", T1)
    sister = add(mm, "Tom's sister lives in Rome.", T1)
    unclear = add(mm, "She moved to Paris.", T1)
    for item in (first, again, sister, unclear):
        assert mm.get(item.id, namespace=NS).valid_to is None, item.content


def test_first_person_is_the_speakers(mm: MemoryManager) -> None:
    anna = add(mm, "I live in Oslo.", T0, metadata={"speaker": "Anna"})
    tom = add(mm, "Tom lives in Oslo.", T0)
    other = add(mm, "I live in Bergen.", T1, metadata={"speaker": "Erik"})  # not Anna
    moved = add(mm, "I moved to Bergen.", T1, metadata={"speaker": "Tom"})  # Tom's "I"
    bot = add(mm, "I live in the cloud.", T1, metadata={"role": "assistant"})
    assert mm.get(anna.id, namespace=NS).valid_to is None
    assert mm.get(other.id, namespace=NS).valid_to is None
    assert mm.get(tom.id, namespace=NS).superseded_by == moved.id
    assert mm.get(bot.id, namespace=NS).valid_to is None
    assert mm.stores.records.memories.same_fact(NS, "anna|residence")[0].id == anna.id


def test_an_older_fact_added_later_ends_its_own_validity(mm: MemoryManager) -> None:
    current = add(mm, "Tom lives in Bergen.", T1)
    past = add(mm, "Tom lived in Oslo.", T0)  # learnt later, about an earlier time
    assert past.valid_to == T1 and past.superseded_by == current.id
    assert mm.get(current.id, namespace=NS).valid_to is None
    # a third home in between takes its place in the chain
    middle = add(mm, "Tom moved to Stavanger.", T0 + timedelta(days=100))
    assert mm.get(past.id, namespace=NS).superseded_by == middle.id
    mid = mm.get(middle.id, namespace=NS)
    assert (mid.valid_to, mid.superseded_by) == (T1, current.id)


def assert_chain_relinked(mm: MemoryManager, key: str = "tom|residence") -> int:
    """The whole chain of ``key`` reads as if recomputed from scratch: sorted by start,
    runs of one value, each valid until the next run starts and superseded by its
    first. Returns the chain's length."""
    chain = mm.stores.records.memories.same_fact(NS, key)
    chain.sort(key=lambda m: (m.valid_from or m.event_time, m.recorded_time, m.id))
    runs: list[list[MemoryItem]] = []
    for m in chain:
        fact = parse_fact(m.content)
        assert fact is not None
        first = parse_fact(runs[-1][0].content) if runs else None
        if first is not None and same_value(first.value, fact.value):
            runs[-1].append(m)
        else:
            runs.append([m])
    for n, run in enumerate(runs):
        nxt = runs[n + 1][0] if n + 1 < len(runs) else None
        want = (None, None) if nxt is None else (nxt.valid_from or nxt.event_time, nxt.id)
        for m in run:
            assert (m.valid_to, m.superseded_by) == want, (m.content, m.event_time)
    return len(chain)


@pytest.mark.parametrize("window", [2, 32])
def test_a_long_chain_learnt_out_of_order_keeps_every_link(
        tmp_path: Path, embedder: Any, window: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each add reads only the chain's window around its start (issue 27): the
    memories valid then and CHAIN_WINDOW of those after it. After every add, in any
    order of learning, and with a window smaller than the runs after it, the whole
    chain reads as if recomputed from scratch."""
    import random

    from hello_memory.memory import supersede
    from hello_memory.stores.records import _memory_queries

    monkeypatch.setattr(supersede, "CHAIN_WINDOW", window)
    # with a window of 2, the read of what is valid at a start also takes its other
    # side and its whole-scan path (MemoryQueries._valid_at)
    monkeypatch.setattr(_memory_queries, "WINDOW_PROBE", window)
    rng = random.Random(7)
    homes = ["Oslo", "Bergen", "Rome", "Paris"]
    plan = [(T0 + timedelta(days=30 * k), rng.choice(homes[:2] if k % 5 else homes))
            for k in range(24)]
    rng.shuffle(plan)
    with make(tmp_path / "d", embedder) as mm:
        for when, city in plan:
            add(mm, f"Tom lives in {city}.", when, on_duplicate="store")
            assert_chain_relinked(mm)
        assert assert_chain_relinked(mm) == len(plan)


@pytest.mark.parametrize("window", [2, 32])
def test_one_batch_over_several_chains_links_each_as_single_adds_would(
        tmp_path: Path, embedder: Any, window: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """One ``add_many`` holds the validity links it decides and writes them together
    (memory/supersede.py, _Links), writing them first whenever a later memory of the
    batch reads a chain or a memory they touch. Shuffled moves of three people (their
    chains interleaved, each learnt out of order) in one call, then a second call: each
    chain reads as if recomputed, as adding them one by one leaves it, and every add
    decides what it decides when each link is written at once."""
    import random

    from hello_memory.memory import supersede

    monkeypatch.setattr(supersede, "CHAIN_WINDOW", window)
    rng = random.Random(11)
    people = ["Tom", "Anna", "Lena"]
    homes = ["Oslo", "Bergen", "Rome", "Paris", "Tromsø"]
    plan = [(p, T0 + timedelta(days=20 * k + n), rng.choice(homes))
            for k in range(10) for n, p in enumerate(people)]
    rng.shuffle(plan)

    def entries(part: list[tuple[str, datetime, str]]) -> list[dict[str, Any]]:
        return [{"content": f"{p} lives in {city}.", "event_time": when, "namespace": NS,
                 "memory_type": "episodic"} for p, when, city in part]

    def links(mm: MemoryManager) -> list[tuple[str, str, Any, Any]]:
        out = []
        for p in people:
            chain = mm.stores.records.memories.same_fact(NS, f"{p.lower()}|residence")
            text = {m.id: (m.content, m.event_time) for m in chain}
            out += [(m.content, str(m.event_time), m.valid_to, text.get(m.superseded_by))
                    for m in chain]
        return sorted(out, key=str)

    def decisions(mm: MemoryManager) -> list[tuple[Any, ...]]:
        """What each add's supersession reported (the audit), by content and time."""
        items = mm.stores.records.memories.list_items(NS, ItemFilter(current=False),
                                                      limit=1000)
        name = {m.id: (m.content, str(m.event_time)) for m in items}
        out = [(name[d["memory"]], d["action"], sorted(name[x] for x in d["superseded"]))
               for d in (a["details"] for a in mm.stores.records.audit.list(NS, limit=1000)
                         if a["action"] == "supersede")]
        assert out  # the plan changes homes: some adds supersede
        return sorted(out, key=str)

    with make(tmp_path / "batch", embedder) as batch:
        batch.add_many(entries(plan[:20]), on_duplicate="store")
        batch.add_many(entries(plan[20:]), on_duplicate="store")
        for p in people:
            assert assert_chain_relinked(batch, f"{p.lower()}|residence") == 10
        together, decided = links(batch), decisions(batch)
    with make(tmp_path / "single", embedder) as single:
        for p, when, city in plan:
            add(single, f"{p} lives in {city}.", when, on_duplicate="store")
        assert links(single) == together
        assert decisions(single) == decided
    held = supersede._Links.hold

    def at_once(self: Any, *args: Any) -> None:
        held(self, *args)
        self.write()

    monkeypatch.setattr(supersede._Links, "hold", at_once)
    with make(tmp_path / "at-once", embedder) as each:
        each.add_many(entries(plan[:20]), on_duplicate="store")
        each.add_many(entries(plan[20:]), on_duplicate="store")
        assert links(each) == together
        assert decisions(each) == decided


def test_a_batch_reads_windows_not_whole_chains(tmp_path: Path, embedder: Any,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """A batch of moves in any order of time, onto a linked chain, reads only each
    add's window (issue 27): the batch's memories not decided yet are not in the chain,
    so the first decision does not find them unlinked and relink everything."""
    import random

    from hello_memory.stores.records._memory_queries import MemoryQueries

    rng = random.Random(5)
    homes = ["Oslo", "Bergen", "Rome", "Paris"]
    whole: list[str] = []
    same_fact = MemoryQueries.same_fact

    def spied(self: Any, namespace: str, key: str, **kw: Any) -> list[MemoryItem]:
        if kw.get("around") is None:
            whole.append(key)
        return same_fact(self, namespace, key, **kw)

    with make(tmp_path / "d", embedder) as mm:
        mm.add_many([{"content": f"Tom lives in {rng.choice(homes)}.", "namespace": NS,
                      "event_time": T0 + timedelta(days=10 * k), "memory_type": "episodic"}
                     for k in range(40)], on_duplicate="store")
        assert assert_chain_relinked(mm) == 40
        monkeypatch.setattr(MemoryQueries, "same_fact", spied)
        for order in (1, -1):  # oldest first, then newest first
            days = [400 + 10 * k + (5 if order < 0 else 0) for k in range(12)][::order]
            mm.add_many([{"content": f"Tom lives in {homes[k % 4]}.", "namespace": NS,
                          "event_time": T0 + timedelta(days=d), "memory_type": "episodic"}
                         for k, d in enumerate(days)], on_duplicate="store")
        assert whole == []
        monkeypatch.undo()
        assert assert_chain_relinked(mm) == 64


def test_a_chain_left_unlinked_is_relinked_whole(tmp_path: Path, embedder: Any) -> None:
    """Memories stored with supersession off are all "valid" at once: the next add
    with the rules on cannot trust the window and relinks the whole chain."""
    with make(tmp_path / "d", embedder, memory={"supersede": "off"}) as off:
        for k, city in enumerate(["Oslo", "Bergen", "Rome", "Oslo", "Paris"]):
            add(off, f"Tom lives in {city}.", T0 + timedelta(days=40 * k),
                on_duplicate="store")
    with make(tmp_path / "d", embedder) as on:
        add(on, "Tom lives in Tromsø.", T1)
        assert assert_chain_relinked(on) == 6


def test_supersede_off_and_working_memory(tmp_path: Path, embedder: Any) -> None:
    with make(tmp_path / "off", embedder, memory={"supersede": "off"}) as off:
        a = add(off, "Tom lives in Oslo.", T0)
        add(off, "Tom moved to Bergen.", T1)
        assert off.get(a.id, namespace=NS).valid_to is None
    with make(tmp_path / "on", embedder) as on:
        a = add(on, "Tom lives in Oslo.", T0)
        add(on, "Tom moved to Bergen.", T1, memory_type="working")  # not a stored fact
        assert on.get(a.id, namespace=NS).valid_to is None


# --- interfaces -------------------------------------------------------------------------
def test_as_of_over_rest_mcp_and_cli(tmp_path: Path, embedder: Any) -> None:
    from hello_memory.interfaces.cli import app
    from hello_memory.interfaces.mcp import build_server
    from hello_memory.interfaces.rest import create_app

    data = tmp_path / "data"
    settings = load_settings(environ={}, data_dir=data, api={"api_keys": {"k": ["*"]}})
    mm = MemoryManager(open_stores(settings, embedder=embedder), extractor=RuleExtractor())
    add(mm, "Tom lives in Oslo.", T0)
    add(mm, "Tom moved from Oslo to Bergen.", T1)
    then = (T0 + timedelta(days=30)).isoformat()
    try:
        api = AsgiApi(create_app(settings, manager=mm), headers={"Authorization": "Bearer k"})
        body = {"query": "Where does Tom live?", "top_k": 5}
        now = api("POST", "/v1/search", params={"namespace": NS}, json=body).json()["hits"]
        old = api("POST", "/v1/search", params={"namespace": NS},
                  json={**body, "as_of": then}).json()["hits"]
        assert "Tom lives in Oslo." not in [h["content"] for h in now]
        assert [h["content"] for h in old] == ["Tom lives in Oslo."]
        assert old[0]["memory"]["superseded_by"] is not None
        server = build_server(mm, settings, ["*"])
        result = anyio.run(server.call_tool, "recall",
                           {"namespace": NS, "query": "Where does Tom live?", "as_of": then})
        assert "Tom lives in Oslo." in json.dumps(result, default=str, ensure_ascii=False)
    finally:
        mm.close()
    out = CliRunner().invoke(app, ["--data-dir", str(data), "search", "Where does Tom live?",
                                   "--namespace", NS, "--as-of", then[:10], "--json"],
                             env={"HELLO_MEMORY__SEMANTIC__EXTRACTOR": "rules"})
    assert out.exit_code == 0, out.output
    assert [h["content"] for h in json.loads(out.stdout)["hits"]] == ["Tom lives in Oslo."]


# --- migration ------------------------------------------------------------------------
def reopened_after(db: Path, script: str) -> RecordStore:
    """The SQLite store ``db`` taken back to an older schema by ``script``, then opened
    again (which migrates it)."""
    conn = sqlite3.connect(db)
    conn.executescript(script)
    conn.commit()
    conn.close()
    store = RecordStore(f"sqlite:///{db}")
    store.open()
    return store


def test_migration_v4_to_v5_keeps_data_and_backfills(tmp_path: Path) -> None:
    db = tmp_path / "records.db"
    store = RecordStore(f"sqlite:///{db}")
    store.open()
    a = MemoryItem(content="Tom lives in Oslo.", namespace=NS, event_time=T0)
    b = MemoryItem(content="我跳槽到了腾讯。", namespace=NS, event_time=T1,
                   metadata={"k": 1}, importance=0.8)
    store.memories.add_items([a, b])
    store.close()
    # back to v4: none of v5's columns, indexes or tables (hm_memory_times: v5's
    # mentioned times, the same step)
    store = reopened_after(db, """
        DROP TABLE IF EXISTS hm_memory_times;
        DROP INDEX ix_items_ns_fact_key;
        DROP INDEX IF EXISTS ix_items_ns_fact_valid_to;
        ALTER TABLE hm_memory_items DROP COLUMN fact_key;
        ALTER TABLE hm_memory_items DROP COLUMN valid_from;
        ALTER TABLE hm_memory_items DROP COLUMN valid_to;
        ALTER TABLE hm_memory_items DROP COLUMN superseded_by;
        UPDATE hm_schema_meta SET value='4' WHERE key='schema_version';
    """)
    try:
        assert (tmp_path / "records.db.v4.bak").exists()
        got = {i.id: i for i in store.memories.get_items(NS, [a.id, b.id])}
        assert got[a.id].content == a.content and got[b.id].metadata == {"k": 1}
        assert got[b.id].importance == 0.8
        assert got[a.id].valid_from == T0 and got[b.id].valid_from == T1
        assert all(i.valid_to is None and i.superseded_by is None for i in got.values())
        assert [i.id for i in store.memories.same_fact(NS, f"{SELF_ENTITY}|employer")] == [b.id]
        assert [i.id for i in store.memories.same_fact(NS, "tom|residence")] == [a.id]
    finally:
        store.close()
    version = sqlite3.connect(db).execute(
        "SELECT value FROM hm_schema_meta WHERE key='schema_version'").fetchone()[0]
    assert int(version) == SCHEMA_VERSION >= 5


def test_migration_v7_to_v8_indexes_the_chain_window(tmp_path: Path) -> None:
    """v8 (issue 27): the fact-chain indexes the window read takes; a start the row
    lacks is backfilled from its event time, and the chain reads the same."""
    db = tmp_path / "records.db"
    store = RecordStore(f"sqlite:///{db}")
    store.open()
    items = [MemoryItem(content=f"Tom lives in {city}.", namespace=NS,
                        event_time=T0 + timedelta(days=30 * k))
             for k, city in enumerate(["Oslo", "Rome", "Paris"])]
    store.memories.add_items(items)
    store.close()
    store = reopened_after(db, f"""
        DROP INDEX ix_items_ns_fact_key;
        DROP INDEX ix_items_ns_fact_valid_to;
        CREATE INDEX ix_items_ns_fact_key ON hm_memory_items (namespace, fact_key);
        UPDATE hm_memory_items SET valid_from = NULL WHERE id = '{items[1].id}';
        UPDATE hm_schema_meta SET value='7' WHERE key='schema_version';
    """)
    try:
        chain = store.memories.same_fact(NS, "tom|residence")
        assert [i.id for i in chain] == [i.id for i in items]
        assert chain[1].valid_from == items[1].event_time
        window = store.memories.same_fact(NS, "tom|residence", around=items[1].event_time,
                                          after=1)
        assert [i.id for i in window] == [i.id for i in items]  # all still open
    finally:
        store.close()
    conn = sqlite3.connect(db)
    try:
        columns = {name: [r[2] for r in conn.execute(f"PRAGMA index_info({name})")]
                   for name in ("ix_items_ns_fact_key", "ix_items_ns_fact_valid_to")}
        assert columns == {
            "ix_items_ns_fact_key": ["namespace", "fact_key", "status", "valid_from",
                                     "recorded_time"],
            "ix_items_ns_fact_valid_to": ["namespace", "fact_key", "status", "valid_to"]}
        assert conn.execute("SELECT count(*) FROM hm_memory_items WHERE valid_from IS NULL"
                            ).fetchone()[0] == 0
        assert conn.execute("SELECT value FROM hm_schema_meta WHERE key='schema_version'"
                            ).fetchone()[0] == str(SCHEMA_VERSION)
    finally:
        conn.close()
