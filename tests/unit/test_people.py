"""Who the user is and who the people around them are (text/people.py): the rules that
read names and role links out of memories and role references out of questions."""

from __future__ import annotations

import pytest

from hello_memory.text.people import (
    SELF_ENTITY,
    RoleLink,
    asked_roles,
    role_key,
    role_links,
    self_names,
    without_title,
)


@pytest.mark.parametrize(("text", "names"), [
    ("The user's name is Sofia Chen; friends and family call her Sofi.", ["Sofia Chen", "Sofi"]),
    ("My name is Tom.", ["Tom"]),
    ("I am called Bob Smith and I like tea", ["Bob Smith"]),
    ("我叫王芳，今年六十岁", ["王芳"]),
    ("my name is not important", []),
    ("Tom's name is on the list.", []),
])
def test_self_names(text: str, names: list[str]) -> None:
    assert self_names(text) == names


@pytest.mark.parametrize(("text", "links"), [
    ("The user's husband is Tom Berg; they married in 2019.",
     [RoleLink(SELF_ENTITY, "husband", "Tom Berg")]),
    ("Mia Berg, the user's daughter, was born in 2017.",
     [RoleLink(SELF_ENTITY, "daughter", "Mia Berg")]),
    ("Tom is my husband.", [RoleLink(SELF_ENTITY, "husband", "Tom")]),
    ("Raj's wife Priya is a cardiologist.", [RoleLink("Raj", "wife", "Priya")]),
    ("Tom's boss at Hafenbau is Ingrid Dahl.", [RoleLink("Tom", "manager", "Ingrid Dahl")]),
    ("The user reports to Raj Patel.", [RoleLink(SELF_ENTITY, "manager", "Raj Patel")]),
    ("The user's GP is Dr. Anke Lüders.", [RoleLink(SELF_ENTITY, "doctor", "Dr. Anke Lüders")]),
    ("用户的妈妈叫王芳,住在成都。", [RoleLink(SELF_ENTITY, "mother", "王芳")]),
    ("李伟的妻子赵敏是一名老师。", [RoleLink("李伟", "wife", "赵敏")]),
    # no link: a role word with no name, a pronoun, a plain fact
    ("The user lives with her husband and daughter.", []),
    ("The user's husband is He.", []),
    ("妈妈有高血压,饭菜不能太咸。", []),
])
def test_role_links(text: str, links: list[RoleLink]) -> None:
    assert role_links(text) == links


def test_asked_roles_chains_owners_and_chinese() -> None:
    [a] = asked_roles("What does my boss's wife do?")
    assert (a.owner, a.chain) == (SELF_ENTITY, ("manager", "wife"))
    assert "What does my boss's wife do?"[a.span[0]:a.span[1]] == "my boss's wife"
    [b] = asked_roles("What's the name of Raj's wife?")
    assert (b.owner, b.chain) == ("Raj", ("wife",))
    [c] = asked_roles("妈妈春节来汉堡住了多久?")
    assert (c.owner, c.chain) == (SELF_ENTITY, ("mother",))
    [d] = asked_roles("李伟的老婆是做什么的?")
    assert (d.owner, d.chain) == ("李伟", ("wife",))
    assert asked_roles("What did Tom do in June?") == []
    assert asked_roles("他的朋友是谁?") == []  # someone else's friend, not the user's


def test_role_keys_and_titles() -> None:
    assert role_key("Raj  Patel", "wife") == role_key("raj patel", "wife") == "role:raj patel:wife"
    assert without_title("Dr. Anke Lüders") == "Anke Lüders"
    assert without_title("Tom Berg") == "Tom Berg"


@pytest.mark.parametrize(("text", "links"), [
    # a word between "my" and the role, and a place after it
    ("My younger brother is Tariq Aziz.", [RoleLink(SELF_ENTITY, "brother", "Tariq Aziz")]),
    ("My old team lead at Vattenfall is Greta Olsen.",
     [RoleLink(SELF_ENTITY, "manager", "Greta Olsen")]),
    # the person first, then whose role they are
    ("Henk, Daniel's dad, won't eat anything spicy.", [RoleLink("Daniel", "father", "Henk")]),
    # parents named together with their child
    ("Tariq and Noor have a son called Idris.",
     [RoleLink("Tariq", "son", "Idris"), RoleLink("Noor", "son", "Idris")]),
])
def test_role_links_in_everyday_wording(text: str, links: list[RoleLink]) -> None:
    found = role_links(text)
    assert all(link in found for link in links), found


def test_married_links_the_person_just_named() -> None:
    found = role_links("My older sister is Mei Lin; she is married to Omar Haddad.")
    assert RoleLink(SELF_ENTITY, "sister", "Mei Lin") in found
    assert RoleLink("Mei Lin", "husband", "Omar Haddad") in found


def test_kin_in_two_steps_is_asked_as_chains() -> None:
    chains = {a.chain for a in asked_roles("What's my nephew's favourite game?")}
    assert {("sister", "son"), ("brother", "son")} <= chains
    chains = {a.chain for a in asked_roles("Where does my brother-in-law work?")}
    assert ("sister", "husband") in chains and ("partner", "brother") in chains
    assert {a.chain for a in asked_roles("Where does my fiancée's mother live?")} == {
        ("partner", "mother")}


def test_a_word_opening_a_sentence_is_nobody() -> None:
    assert role_links("Yesterday, Tom's wife called about the party.") == []
