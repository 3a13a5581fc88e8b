"""Facts that update, in general (issue 26, failure class 1): a newer memory replaces an
older one when it is about the same subject and attribute with another value, whatever
its wording; an addition, a plan, the past, a question or someone else replaces nothing.
The wordings here are the issue's own and others of ours, not the dev set's
(benchmarks/data/supersede_dev.json measures the rules: BENCHMARKS.md)."""

from __future__ import annotations

import pytest

from hello_memory.text.attributes import (
    Attribute,
    attributes_of,
    register,
    replaces,
    subjects_of,
)
from hello_memory.text.people import SELF_ENTITY


@pytest.mark.parametrize(("old", "new"), [
    ("I work at Philips.", "Started my new job at Adyen"),
    ("I live in Morningside.", "We finally got the keys to the new place in Leith"),
    ("I drive an old VW Golf.", "Traded the old Golf in for an electric one"),
    ("My manager is Priya.", "My new team lead is Sam"),
    ("我在字节跳动上班。", "换工作了，现在在美团上班"),
    ("Tom works at Shell.", "Tom joined a solar startup called Lumen."),
    ("我姐姐住在上海。", "我姐姐搬去深圳了。"),
    ("My phone number is 0612 345 678.", "New number: 0687 654 321"),
    ("My cousin Bram lives in Ghent.", "Bram moved to Antwerp last month."),
])
def test_a_change_in_everyday_wording_replaces_the_old_fact(old: str, new: str) -> None:
    assert replaces(new, old)


@pytest.mark.parametrize(("old", "new"), [
    # the same value said again
    ("I work at Philips.", "Long day at the Philips office again."),
    ("我住在海淀。", "海淀的房子住着挺舒服的。"),
    # someone else
    ("I live in Leith.", "My brother Sam lives in Glasgow."),
    ("我在腾讯上班。", "我老公在阿里巴巴上班。"),
    # another attribute
    ("Tom lives in Haarlem.", "Tom works at a bank in Amsterdam."),
    # an addition, a plan, the past, a question, a negation
    ("We have a cat called Miso.", "We also got a puppy called Biscuit."),
    ("I live in Leith.", "I might move to Berlin next year."),
    ("I live in Leith.", "Back in 2015 I lived in Porto."),
    ("Tom works at Lumen.", "Does Tom still work at Lumen?"),
    ("我住在北京。", "可能明年会搬去杭州。"),
    # the same change said twice
    ("Alice moved to Lisbon and works at Acme #0", "Alice moved to Lisbon and works at Acme #1"),
])
def test_what_does_not_replace(old: str, new: str) -> None:
    assert not replaces(new, old)


def test_subjects_roles_and_names() -> None:
    assert subjects_of("Started my new job at Adyen") == {SELF_ENTITY}
    assert subjects_of("My sister Anna lives in Utrecht.") == {"role:sister", "anna"}
    assert "anna" in subjects_of("Anna just moved to Rotterdam.")
    assert subjects_of("我妈一直找李医生看病。") == {"role:mother"}
    assert subjects_of("我的领导是王总。") == {SELF_ENTITY}  # the user's manager


def test_the_attribute_list_is_extensible() -> None:
    assert not attributes_of("I climb at the Boulder Lounge.")
    register(Attribute("climbing_gym", (r"climb(?:s|ing)? at",), ()))
    try:
        assert attributes_of("I climb at the Boulder Lounge.") == {"climbing_gym"}
        assert replaces("Switched: I climb at Monk now.", "I climb at the Boulder Lounge.")
    finally:
        from hello_memory.text import attributes

        del attributes.ATTRIBUTES["climbing_gym"]
        attributes._compiled.cache_clear()
