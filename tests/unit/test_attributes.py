"""Facts that update, in general (issue 26, failure class 1): a newer memory replaces an
older one when it is about the same subject and attribute with another value, whatever
its wording; an addition, a plan, the past, a question or someone else replaces nothing.
The wordings here are the issue's own and others of ours, not the dev set's
(benchmarks/data/supersede_dev.json measures the rules: BENCHMARKS.md)."""

from __future__ import annotations

import pytest

from hello_memory.text.attributes import (
    Attribute,
    asked_attributes,
    attributes_of,
    recurring_slot,
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
    # an arrival whose second sentence opens with a capitalised common word
    ("I'm a nurse at the Erasmus MC.", "First day at Sanquin done! Research nursing now."),
    # the old thing lost, the new one only named ("an iPhone" has no strong phone cue)
    ("My phone is a Samsung A52.", "Smashed my Samsung on the stairs, got a Fairphone 5."),
    # a named subject inside the sentence, with a negative verb
    ("Mia eats everything.", "After the school project Mia doesn't eat meat any more."),
    # an attribute beyond home and work: eyesight
    ("I wear glasses for reading.", "Had laser eye surgery in May, no glasses now."),
    # a weekly slot, en and zh
    ("Wednesday evenings are choir practice.", "No more choir: Wednesday evenings are "
     "for the running club now."),
    ("我每周日上午去游泳。", "游泳馆关了，现在周日上午在家练瑜伽。"),
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
        for cached in (attributes._compiled, attributes.attributes_of,
                       attributes.asked_attributes):
            cached.cache_clear()
    assert not attributes_of("I climb at the Boulder Lounge.")


@pytest.mark.parametrize(("question", "attribute"), [
    ("Where does Priya live these days?", "home"),
    ("What does Tom do for a living?", "employer"),
    ("Where do I work?", "employer"),
    ("Which phone have I got?", "phone"),
    ("Who is Sam going out with?", "partner"),
    ("What pet does Mia have?", "pet"),
    ("How do I get to work?", "commute"),
    ("Do I need glasses?", "eyesight"),
    ("What do I do on Friday mornings?", "slot:friday-morning"),
    ("阿伟现在在哪儿上班？", "employer"),
    ("姐姐住在哪个城市？", "home"),
    ("我周日上午一般干什么？", "slot:sunday-morning"),
])
def test_the_attribute_a_question_asks_for(question: str, attribute: str) -> None:
    assert attribute in asked_attributes(question)


@pytest.mark.parametrize("question", [
    "What went wrong at home this week?",  # a weak cue: no address is asked for
    "What did we have for dinner on Friday?",
    "上周日妈妈在电话里说了什么？",
])
def test_questions_that_ask_for_no_attribute(question: str) -> None:
    assert not asked_attributes(question)


def test_recurring_slots() -> None:
    assert recurring_slot("Every Thursday evening I go climbing") == "slot:thursday-evening"
    assert recurring_slot("周六上午在图书馆帮忙") == "slot:saturday-morning"
    assert recurring_slot("Dinner on Thursday the 19th") is None


@pytest.mark.parametrize(("question", "wanted"), [
    ("What should I cook for Mia on Sunday?", {"diet", "allergy", "taste"}),
    ("Can I bring a bottle of wine for Sam?", {"diet", "taste"}),
    ("What could I give Tom for his birthday?", {"taste"}),
    ("Which painkillers should I avoid?", {"allergy"}),
    ("Noor is sleeping over and a storm is coming, anything I should know?", {"fear"}),
])
def test_advice_asks_for_tastes_fears_and_allergies(question: str, wanted: set[str]) -> None:
    assert wanted <= asked_attributes(question)


def test_tastes_are_asked_only_by_advice_and_never_replace() -> None:
    # "what did we eat in Porto?" asks for no diet or taste: the trip's meal answers it
    assert not {"diet", "taste", "allergy"} & asked_attributes("What did we eat in Porto?")
    # likes add up: a second one replaces nothing
    assert "taste" in attributes_of("Mia loves dinosaurs.")
    assert not replaces("Mia loves horses now.", "Mia loves dinosaurs.")


def test_an_event_that_ends_the_old_state_replaces_it() -> None:
    # an event (not a plain statement) replaces only with a change marker: "for the
    # first time" says the old state ended
    old = "I've needed reading glasses for years."
    new = "Had eye surgery last month; for the first time I can read menus without glasses."
    assert replaces(new, old, plain=False)
    assert not replaces("Cleaned my glasses at the optician's.", old, plain=False)


def test_whose_someone_is_is_not_a_value_that_changes() -> None:
    # the older memory is Henk's; "Daniel" only says whose dad he is
    assert not replaces("Since that documentary Daniel doesn't eat meat anymore.",
                        "Henk, Daniel's dad, won't eat anything spicy.")
    # while a pet's name is a value of its owner's pet
    assert replaces("Snuffel died last week; Lotte has a beagle puppy now.",
                    "Lotte has a grey rabbit called Snuffel.")


@pytest.mark.parametrize(("old", "new"), [
    # a loss that does not name the old value leaves it ("office" only points at work)
    ("Alice moved to Berlin in May 2024 and works at Acme Robotics.",
     "Alice lost her office badge and got a new one from reception."),
    ("I work at Philips in Eindhoven.", "The office closed early today because of the storm."),
])
def test_a_loss_that_names_nothing_old_replaces_nothing(old: str, new: str) -> None:
    assert not replaces(new, old, plain=False)


def test_a_possessor_is_not_the_attribute_asked() -> None:
    """Issue 26: "my boss's dog" asks for a pet, not a manager; "Lotte's job" for an
    employer."""
    assert asked_attributes("What is my boss's dog called?") == frozenset({"pet"})
    assert asked_attributes("What is Lotte's job?") == frozenset({"employer"})
    assert asked_attributes("Who is my boss?") == frozenset({"manager"})


def test_a_chinese_note_led_by_a_name_is_about_that_person() -> None:
    """Issue 26: "嘉怡最喜欢喝普洱茶" is Jiayi's taste, not the user's; "用户最喜欢…" is
    the user's."""
    assert subjects_of("嘉怡最喜欢喝普洱茶，尤其是熟普。") == frozenset({"嘉怡"})
    assert subjects_of("王芳喜欢打麻将。") == frozenset({"王芳"})
    assert subjects_of("用户最喜欢的火锅店是蜀香园。") == frozenset({SELF_ENTITY})


def _texts_of_the_benchmark_sets() -> list[str]:
    import json
    import re
    from pathlib import Path

    data = Path(__file__).resolve().parents[2] / "benchmarks" / "data"
    texts: list[str] = []
    for path in sorted(data.glob("*.json")):
        raw = path.read_text(encoding="utf-8")
        texts += [json.loads(f'"{t}"') for t in re.findall(
            r'"(?:content|question|text|query|old|new)"\s*:\s*"((?:[^"\\]|\\.)*)"', raw)]
    return texts


def test_one_alternation_per_kind_matches_where_one_of_its_cues_does() -> None:
    """The cues of an attribute are searched as one alternation per kind (Chinese,
    other words; issue 27): on every text of the benchmark sets, an attribute is found
    exactly where one of its cues, searched alone, is."""
    import re

    from hello_memory.text.attributes import ATTRIBUTES, _compiled

    def alone(pattern: str) -> re.Pattern[str]:
        if re.search(r"[\u4e00-\u9fff]", pattern):
            return re.compile(pattern)
        return re.compile(rf"(?<![\w']){pattern}(?![\w])", re.I)

    texts = _texts_of_the_benchmark_sets()
    assert len(texts) > 1000
    compiled = {name: (strong, weak, asked) for name, strong, weak, asked in _compiled()}
    checked = 0
    for name, attribute in ATTRIBUTES.items():
        for cues, together in zip((attribute.strong, attribute.weak, attribute.asked),
                                  compiled[name], strict=True):
            assert len(together) <= 2
            singles = [alone(c) for c in cues]
            for text in texts:
                expected = any(p.search(text) for p in singles)
                assert any(p.search(text) for p in together) == expected, (name, text)
                checked += expected
    assert checked > 500  # the sets do state attributes
