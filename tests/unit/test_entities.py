"""Entity and relation extraction: rule extractor (en + zh) and the spaCy extractor."""

from __future__ import annotations

import logging

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hello_memory.errors import ConfigError, NamespaceRequiredError
from hello_memory.text.entities import (
    MAX_PAIR_ENTITIES,
    Extraction,
    RuleExtractor,
    SpacyExtractor,
    default_extractor,
)
from hello_memory.types import Entity, entity_id

NS = "tenant-a"
EN_TEXT = "Alice moved from Paris to Berlin to join Acme Robotics."
ZH_TEXT = "用户的蓝牙耳机左耳有杂音，订单号984233。"


def names(ex: Extraction) -> dict[str, str]:
    """name -> type."""
    return {e.name: e.type for e in ex.entities}


def by_id(ex: Extraction) -> dict[str, Entity]:
    return {e.id: e for e in ex.entities}


def triples(ex: Extraction) -> set[tuple[str, str, str]]:
    ents = by_id(ex)
    return {(ents[r.source_id].name, r.type, ents[r.target_id].name) for r in ex.relations}


def co_pairs(ex: Extraction) -> set[frozenset[str]]:
    ents = by_id(ex)
    return {
        frozenset((ents[r.source_id].name, ents[r.target_id].name))
        for r in ex.relations
        if r.type == "co_occurs"
    }


@pytest.fixture(scope="module")
def rules() -> RuleExtractor:
    return RuleExtractor()


# --- rule extractor: English -----------------------------------------------------------
def test_english_names_places_and_org(rules: RuleExtractor) -> None:
    ex = rules.extract(EN_TEXT, NS)
    assert names(ex) == {
        "Alice": "name",  # rules cannot tell a person from a brand without a gazetteer
        "Paris": "place",  # "moved from"
        "Berlin": "place",  # "moved ... to"
        "Acme Robotics": "org",  # organisation word
    }
    expected = {"Alice", "Paris", "Berlin", "Acme Robotics"}
    assert co_pairs(ex) == {frozenset((a, b)) for a in expected for b in expected if a != b}
    assert all(r.weight == 1.0 and r.namespace == NS for r in ex.relations)


def test_sentence_initial_common_words_are_skipped(rules: RuleExtractor) -> None:
    text = "The weather was bad. We met Bob. Yesterday Carol called. Moving is hard. It rained."
    assert set(names(rules.extract(text, NS))) == {"Bob", "Carol"}


def test_multiword_spans_with_connectors_and_titles(rules: RuleExtractor) -> None:
    text = "Yesterday Dr. Smith met the Bank of America team in London on Monday."
    assert names(rules.extract(text, NS)) == {
        "Smith": "person",
        "Bank of America": "org",
        "London": "place",
        "Monday": "time",
    }


def test_co_occurrence_is_per_sentence_and_weighted(rules: RuleExtractor) -> None:
    ex = rules.extract("Alice met Bob. Bob called Alice. Carol slept.", NS)
    (rel,) = [r for r in ex.relations if r.type == "co_occurs"]
    ents = by_id(ex)
    assert {ents[rel.source_id].name, ents[rel.target_id].name} == {"Alice", "Bob"}
    assert rel.weight == 2.0  # two sentences, one canonical relation
    assert rel.source_id < rel.target_id


def test_co_occurrence_pairs_are_capped(rules: RuleExtractor) -> None:
    people = ["Anna", "Ben", "Cleo", "Dan", "Eve", "Finn", "Gus", "Hal", "Ivy", "Jon"]
    ex = rules.extract("Invite " + ", ".join(people) + ".", NS)
    assert len(ex.entities) == len(people)
    n = MAX_PAIR_ENTITIES
    assert len(ex.relations) == n * (n - 1) // 2
    assert frozenset(("Ivy", "Jon")) not in co_pairs(ex)


def test_is_a_pattern(rules: RuleExtractor) -> None:
    ex = rules.extract("Alice is a doctor who likes tea.", NS)
    assert ("Alice", "is_a", "doctor") in triples(ex)
    assert names(ex)["doctor"] == "concept"


# --- rule extractor: codes, quotes, contacts -----------------------------------------
def test_codes(rules: RuleExtractor) -> None:
    text = "Upgrade to v2.0 with gpt-4o for PRJ-1234; order 984233 shipped, call 13800138000."
    ex = rules.extract(text, NS)
    assert names(ex) == {
        "v2.0": "code",
        "gpt-4o": "code",
        "PRJ-1234": "code",
        "984233": "code",
        "13800138000": "code",
    }
    kinds = {e.name: e.properties.get("kind") for e in ex.entities}
    assert kinds["984233"] == "order"  # the prefix is kept as a property, not the name


def test_quantities_and_years_are_not_codes(rules: RuleExtractor) -> None:
    ex = rules.extract("it weighs 5kg, arrives on the 3rd at 10am, in 2019, for 12345 yuan", NS)
    assert ex.entities == ()


def test_order_code_is_the_same_node_in_both_languages(rules: RuleExtractor) -> None:
    zh = rules.extract("订单984233已发货", NS)
    en = rules.extract("Order 984233 has shipped", NS)
    bare = rules.extract("ref: 984233", NS)
    want = entity_id(NS, "code", "984233")
    assert [e.id for e in zh.entities if e.type == "code"] == [want]
    assert [e.id for e in en.entities] == [want]
    assert [e.id for e in bare.entities] == [want]


def test_full_width_characters_are_normalised(rules: RuleExtractor) -> None:
    ex = rules.extract("订单号：９８４２３３", NS)
    assert names(ex) == {"984233": "code"}


def test_quoted_terms(rules: RuleExtractor) -> None:
    text = "We call it \"Blue Falcon\", also “Red Owl”, 「星火计划」 and 'Project X'; Bob's mug."
    found = names(rules.extract(text, NS))
    for term in ("Blue Falcon", "Red Owl", "星火计划", "Project X"):
        assert found[term] == "term"
    assert "s mug" not in " ".join(found)  # an apostrophe is no quote


def test_emails_and_urls(rules: RuleExtractor) -> None:
    text = "Mail bob.smith@example.com or see https://example.com/docs?id=7."
    assert names(rules.extract(text, NS)) == {
        "bob.smith@example.com": "contact",
        "https://example.com/docs?id=7": "url",
    }


# --- rule extractor: Chinese ---------------------------------------------------------
def test_chinese_product_fault_and_order(rules: RuleExtractor) -> None:
    ex = rules.extract(ZH_TEXT, NS)
    found = names(ex)
    assert found["蓝牙耳机"] == "concept"  # 蓝牙 + 耳机 merged into one compound ...
    assert "耳机" in found  # ... kept with its head noun, so "耳机" finds it too
    assert "左耳" in found
    assert found["984233"] == "code"
    assert "用户" not in found  # generic noun on the stoplist
    assert all(len(n) >= 2 for n in found)  # no single characters
    assert frozenset(("蓝牙耳机", "984233")) in co_pairs(ex)


def test_chinese_people_places_orgs(rules: RuleExtractor) -> None:
    found = names(rules.extract("张三在北京的清华大学读书。", NS))
    assert found["张三"] == "person"
    assert found["北京"] == "place"
    assert found["清华大学"] == "org"


def test_chinese_common_words_are_not_people(rules: RuleExtractor) -> None:
    # jieba tags 过敏 / 左耳 as person names (nr); without a surname they are concepts.
    found = names(rules.extract("我对花生过敏。左耳疼。", NS))
    assert found.get("过敏") == "concept"
    assert "person" not in found.values()


def test_chinese_pattern_relations(rules: RuleExtractor) -> None:
    ex = rules.extract("人工智能是一种技术。小明的电脑坏了。", NS)
    assert ("人工智能", "is_a", "技术") in triples(ex)
    assert ("小明", "has", "电脑") in triples(ex)


def test_mixed_language_text(rules: RuleExtractor) -> None:
    found = names(rules.extract("Alice 在上海 用 gpt-4o 写代码。", NS))
    assert {"Alice", "上海", "gpt-4o"} <= set(found)


# --- invariants ----------------------------------------------------------------------
def test_entities_are_deduplicated(rules: RuleExtractor) -> None:
    ex = rules.extract("Alice met Bob in Paris. Later Bob and Alice left Paris. I saw ALICE.", NS)
    ids = [e.id for e in ex.entities]
    assert len(ids) == len(set(ids))
    # one entity per name: "ALICE" is "Alice" (case-folded ids), and the bare "Paris"
    # takes the type that "in Paris" gave it
    assert names(ex) == {"Alice": "name", "Bob": "name", "Paris": "place"}


def test_ids_are_stable_and_namespaced(rules: RuleExtractor) -> None:
    a1 = rules.extract(EN_TEXT + ZH_TEXT, NS)
    a2 = RuleExtractor().extract(EN_TEXT + ZH_TEXT, NS)
    b = rules.extract(EN_TEXT + ZH_TEXT, "tenant-b")
    assert [e.id for e in a1.entities] == [e.id for e in a2.entities]
    assert [r.id for r in a1.relations] == [r.id for r in a2.relations]
    assert {e.id for e in a1.entities}.isdisjoint(e.id for e in b.entities)
    assert [e.name for e in a1.entities] == [e.name for e in b.entities]
    assert all(e.id == entity_id(NS, e.type, e.name) for e in a1.entities)
    ids = {e.id for e in a1.entities}
    assert all(r.source_id in ids and r.target_id in ids for r in a1.relations)


def test_extraction_is_pure(rules: RuleExtractor) -> None:
    text = EN_TEXT + " " + ZH_TEXT
    first = rules.extract(text, NS)
    second = rules.extract(text, NS)
    assert first == second
    assert first is not second and first.entities[0].properties is not second.entities[0].properties


@pytest.mark.parametrize("text", ["", "   ", "\n\t", "\u3000"])
def test_blank_text_gives_empty_extraction(rules: RuleExtractor, text: str) -> None:
    assert rules.extract(text, NS) == Extraction((), ())


@pytest.mark.parametrize("namespace", ["", "  ", None])
def test_namespace_is_required(rules: RuleExtractor, namespace: object) -> None:
    with pytest.raises(NamespaceRequiredError):
        rules.extract(EN_TEXT, namespace)  # type: ignore[arg-type]
    with pytest.raises(NamespaceRequiredError):
        rules.extract("", namespace)  # type: ignore[arg-type]


@settings(max_examples=150, deadline=None)
@given(
    st.text(
        alphabet=st.sampled_from(
            list("AaBbZz019 .-@'\"!?,:#/") + list("我的蓝牙耳机订单号张北京。，“”「」") + ["\n"]
        ),
        max_size=80,
    )
)
def test_never_empty_names_and_relations_are_closed(text: str) -> None:
    ex = RuleExtractor().extract(text, NS)
    assert all(e.name.strip() and e.name == e.name.strip() for e in ex.entities)
    ids = {e.id for e in ex.entities}
    assert len(ids) == len(ex.entities)
    assert all(r.source_id in ids and r.target_id in ids for r in ex.relations)
    assert all(r.source_id != r.target_id for r in ex.relations)


# --- spaCy ---------------------------------------------------------------------------
@pytest.fixture(scope="module")
def nlp_extractor() -> SpacyExtractor:
    return SpacyExtractor(require=True)


def test_spacy_ner_types_and_svo(nlp_extractor: SpacyExtractor) -> None:
    ex = nlp_extractor.extract("Alice founded Acme Robotics in 2019.", NS)
    found = names(ex)
    assert found["Alice"] == "person"
    assert found["2019"] == "time"
    assert "Acme Robotics" in found
    assert ("Alice", "found", "Acme Robotics") in triples(ex)
    assert all(e.properties["source"] == "spacy" for e in ex.entities)


def test_spacy_places_and_prepositional_relations(nlp_extractor: SpacyExtractor) -> None:
    ex = nlp_extractor.extract(EN_TEXT, NS)
    assert names(ex)["Berlin"] == "place"
    assert names(ex)["Paris"] == "place"
    rels = triples(ex)
    assert ("Alice", "move_to", "Berlin") in rels
    assert ("Alice", "join", "Acme Robotics") in rels  # subject inherited through xcomp


def test_spacy_keeps_pattern_entities(nlp_extractor: SpacyExtractor) -> None:
    ex = nlp_extractor.extract(
        "Mail bob@example.com about ticket PRJ-1234 for the United States.", NS
    )
    found = names(ex)
    assert found["bob@example.com"] == "contact"
    assert found["PRJ-1234"] == "code"
    assert found["United States"] == "place"  # leading "the" stripped


def test_spacy_delegates_chinese_to_rules(nlp_extractor: SpacyExtractor) -> None:
    assert nlp_extractor.extract(ZH_TEXT, NS) == RuleExtractor().extract(ZH_TEXT, NS)
    assert all(
        e.properties["source"] == "rule" for e in nlp_extractor.extract(ZH_TEXT, NS).entities
    )


def test_spacy_validates_input(nlp_extractor: SpacyExtractor) -> None:
    assert nlp_extractor.extract("  ", NS) == Extraction((), ())
    with pytest.raises(NamespaceRequiredError):
        nlp_extractor.extract(EN_TEXT, "")


def test_missing_pipeline_names_the_setting() -> None:
    with pytest.raises(ConfigError, match=r"semantic\.spacy_model") as info:
        SpacyExtractor("no_such_pipeline_xyz", require=True)
    assert "no_such_pipeline_xyz" in str(info.value)


def test_missing_pipeline_without_require_falls_back_to_rules(
    caplog: pytest.LogCaptureFixture,
) -> None:
    extractor = SpacyExtractor("no_such_pipeline_xyz")
    assert not extractor.available()
    with caplog.at_level(logging.WARNING, logger="hello_memory.text.entities"):
        ex = extractor.extract(EN_TEXT, NS)
    assert ex == RuleExtractor().extract(EN_TEXT, NS)
    assert "semantic.spacy_model" in caplog.text


def test_default_extractor_choice(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.INFO, logger="hello_memory.text.entities"):
        assert isinstance(default_extractor(), SpacyExtractor)
        assert isinstance(default_extractor(prefer_spacy=False), RuleExtractor)
        assert isinstance(default_extractor(spacy_model="no_such_pipeline_xyz"), RuleExtractor)
    assert "unavailable, using rules" in caplog.text
