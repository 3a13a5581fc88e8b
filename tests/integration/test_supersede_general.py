"""Facts that update in everyday wording, through REST and without an LLM (issue 26,
failure class 1): an untyped "Started my new job at Adyen" after "I work at Philips"
ends the old fact's validity, "Where do I work now?" answers with the new one, the old
one stays for as_of, and an addition or a plan replaces nothing."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from asgi_client import AsgiApi  # tests/ is on sys.path

from hello_memory.config import load_settings
from hello_memory.factory import open_stores
from hello_memory.interfaces.rest import create_app
from hello_memory.memory.manager import MemoryManager
from hello_memory.text.entities import RuleExtractor

pytestmark = pytest.mark.slow
KEYS = {"k": ["me"]}
A = {"Authorization": "Bearer k"}
NS = {"namespace": "me"}


@pytest.fixture(scope="module")
def embedder() -> Any:
    from hello_memory.embedding import SentenceTransformerEmbedder

    return SentenceTransformerEmbedder()


@pytest.fixture
def call(tmp_path: Path, embedder: Any) -> Iterator[AsgiApi]:
    settings = load_settings(environ={}, data_dir=tmp_path / "data",
                             api={"api_keys": KEYS}, memory={"supersede": "rules"})
    mm = MemoryManager(open_stores(settings, embedder=embedder), extractor=RuleExtractor(),
                       supersede="rules")
    yield AsgiApi(create_app(settings, manager=mm))
    mm.close()


def add(call: AsgiApi, content: str, when: str) -> dict[str, Any]:
    r = call("POST", "/v1/memories", params=NS, headers=A,
             json={"content": content, "event_time": when})
    assert r.status_code == 201, r.text
    return dict(r.json())


def test_a_changed_job_in_everyday_wording_supersedes(call: AsgiApi) -> None:
    old = add(call, "I work at Philips as a product designer.", "2026-02-03T09:00:00+01:00")
    add(call, "My sister Anna works at Booking.com.", "2026-02-04T09:00:00+01:00")
    new = add(call, "Started my new job at Adyen on Monday, the onboarding is intense.",
              "2026-05-14T19:00:00+02:00")
    gone = call("GET", f"/v1/memories/{old['id']}", params=NS, headers=A).json()
    assert gone["superseded_by"] == new["id"] and gone["valid_to"] is not None
    # the sister's job is another subject's fact
    hits = call("POST", "/v1/search", params=NS, headers=A,
                json={"query": "Where do I work now?", "top_k": 5}).json()["hits"]
    assert hits[0]["id"] == new["id"]
    assert old["id"] not in [h["id"] for h in hits]
    assert any("Booking.com" in h["content"] for h in hits)  # still current
    past = call("POST", "/v1/search", params=NS, headers=A,
                json={"query": "Where do I work?", "as_of": "2026-03-01T00:00:00+01:00"}
                ).json()["hits"]
    assert past[0]["id"] == old["id"]


def test_chinese_change_and_an_addition(call: AsgiApi) -> None:
    old = add(call, "我在字节跳动上班。", "2026-01-12T10:00:00+08:00")
    new = add(call, "换工作了，现在在美团上班", "2026-04-20T21:00:00+08:00")
    assert call("GET", f"/v1/memories/{old['id']}", params=NS,
                headers=A).json()["superseded_by"] == new["id"]
    cat = add(call, "We have a cat called Miso.", "2026-02-10T20:00:00+00:00")
    add(call, "We also got a puppy, a beagle called Biscuit.", "2026-03-22T15:00:00+00:00")
    assert call("GET", f"/v1/memories/{cat['id']}", params=NS,
                headers=A).json()["superseded_by"] is None
