"""Who the user is and who the people around them are, from what memories say.

An assistant's memories talk about the user without a name ("The user reports to Raj
Patel", "my husband") and about people by their role ("The user's husband is Tom
Berg", "Mia Berg, the user's daughter", "用户的妈妈叫王芳", "Raj's wife Priya"). Two
things are read from a semantic memory when it is written (``MemoryManager.extract_links``)
and kept in the entity graph:

* the user's own names ("The user's name is Sofia Chen", "call her Sofi", "我叫王芳"),
  linked to the graph node :data:`SELF_ENTITY`;
* role links: owner (the user or a named person), role, person. The node
  ``role_key(owner, role)`` ("role:the user:husband") links to the person's node.

A question is then read for the roles it asks about (``asked_roles``: "my husband's
birthday", "my boss's wife", "妈妈最近怎么样"), and the retriever looks the people up in
the graph, so "When is my husband's birthday?" is a question about Tom Berg
(docs/RETRIEVAL.md, "Who a question is about"). Rules only, English and Chinese.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from hello_memory.text.tokenize import contains_cjk
from hello_memory.types import normalize_entity_name

__all__ = ["COMPOSITE_ROLES", "ROLE_WORDS", "SELF_ENTITY", "AskedRole", "RoleLink", "asked_roles",
           "canonical_role", "without_title",
           "role_key", "role_links", "self_names"]

# The graph node that stands for the user of a namespace.
SELF_ENTITY = "the user"

# Role words -> canonical role. A question's "mom" finds a memory's "mother".
ROLE_WORDS: dict[str, str] = {
    "husband": "husband", "wife": "wife", "spouse": "partner", "partner": "partner",
    "boyfriend": "partner", "girlfriend": "partner",
    "daughter": "daughter", "son": "son", "kid": "child", "child": "child",
    "mother": "mother", "mom": "mother", "mum": "mother", "mommy": "mother",
    "father": "father", "dad": "father", "daddy": "father",
    "sister": "sister", "brother": "brother", "grandmother": "grandmother",
    "grandma": "grandmother", "grandfather": "grandfather", "grandpa": "grandfather",
    "boss": "manager", "manager": "manager", "supervisor": "manager",
    "team lead": "manager", "line manager": "manager",
    "fiance": "partner", "fiancé": "partner", "fiancee": "partner", "fiancée": "partner",
    # kin reached in two steps (COMPOSITE_ROLES): a word of their own, resolved as chains
    "niece": "niece", "nephew": "nephew", "brother-in-law": "brother-in-law",
    "sister-in-law": "sister-in-law", "mother-in-law": "mother-in-law",
    "father-in-law": "father-in-law",
    "doctor": "doctor", "gp": "doctor", "paediatrician": "doctor", "pediatrician": "doctor",
    "physician": "doctor", "dentist": "dentist", "teacher": "teacher",
    "colleague": "colleague", "coworker": "colleague", "friend": "friend",
    "老公": "husband", "丈夫": "husband", "先生": "husband", "老婆": "wife", "妻子": "wife",
    "太太": "wife", "女儿": "daughter", "儿子": "son", "孩子": "child",
    "妈妈": "mother", "母亲": "mother", "妈": "mother", "爸爸": "father", "父亲": "father",
    "爸": "father", "姐姐": "sister", "妹妹": "sister", "哥哥": "brother", "弟弟": "brother",
    "奶奶": "grandmother", "外婆": "grandmother", "爷爷": "grandfather", "外公": "grandfather",
    "老板": "manager", "经理": "manager", "领导": "manager", "上司": "manager",
    "医生": "doctor", "老师": "teacher", "同事": "colleague", "朋友": "friend",
}
# Kin a question names in one word that the memories state in two steps: "my niece" is
# my sister's or my brother's daughter (issue 26, relation questions).
COMPOSITE_ROLES: dict[str, tuple[tuple[str, ...], ...]] = {
    "niece": (("sister", "daughter"), ("brother", "daughter")),
    "nephew": (("sister", "son"), ("brother", "son")),
    "brother-in-law": (("sister", "husband"), ("partner", "brother"), ("wife", "brother"),
                       ("husband", "brother")),
    "sister-in-law": (("brother", "wife"), ("partner", "sister"), ("wife", "sister"),
                      ("husband", "sister")),
    "mother-in-law": (("partner", "mother"), ("wife", "mother"), ("husband", "mother")),
    "father-in-law": (("partner", "father"), ("wife", "father"), ("husband", "father")),
}
# Latin-script words ("fiancée" too) and Chinese ones are matched differently
_EN_ROLES = sorted((w for w in ROLE_WORDS if not contains_cjk(w)), key=len, reverse=True)
_ZH_ROLES = sorted((w for w in ROLE_WORDS if contains_cjk(w)), key=len, reverse=True)
# A person's name in English text: capitalised words (Tom, Tom Berg, Priya).
_NAME = r"([A-Z][\w'’-]*(?:\s+[A-Z][\w'’-]*){0,2})"
_ZH_NAME = "([\u4e00-\u9fff]{2,3})"
_USER = r"(?i:the user's|my|her|his)"
# "my older sister", "my old team lead": a word between the owner and the role
_ADJ = r"(?:(?i:older|younger|elder|big|little|baby|twin|old|new|former|current)\s+)?"


_TITLE = re.compile(r"^(?:Dr|Mr|Mrs|Ms|Prof|Frau|Herr)\.?\s+")


def without_title(name: str) -> str:
    """"Dr. Anke Lüders" -> "Anke Lüders" (a title is nobody's first name)."""
    return _TITLE.sub("", name.strip())


def canonical_role(word: str) -> str | None:
    return ROLE_WORDS.get(word.casefold()) or ROLE_WORDS.get(word)


def role_key(owner: str, role: str) -> str:
    """The graph name of "owner's role" (owner: :data:`SELF_ENTITY` or a name)."""
    return f"role:{normalize_entity_name(owner)}:{role}"


@dataclass(frozen=True)
class RoleLink:
    """``person`` is ``owner``'s ``role`` (owner :data:`SELF_ENTITY` for the user)."""

    owner: str
    role: str
    person: str


_SELF_NAME_RES = (
    re.compile(rf"\b(?i:the user's|my)\s+(?i:full\s+|first\s+|nick)?name\s+is\s+{_NAME}"),
    re.compile(rf"\b(?i:the user|I)\s+(?:am|is)\s+(?:called|named)\s+{_NAME}"),
    re.compile(rf"\b(?i:call|calls|called)\s+(?:me|her|him|them)\s+{_NAME}"),
    re.compile(f"(?:我|用户)(?:的名字是|名叫|叫做|叫){_ZH_NAME}"),
)


def self_names(text: str) -> list[str]:
    """Names the text gives the user: "The user's name is Sofia Chen", "my name is
    Tom", "friends call her Sofi", "我叫王芳" (unique, in order of appearance)."""
    found: list[tuple[int, str]] = []
    for pattern in _SELF_NAME_RES:
        found += [(m.start(1), m.group(1).strip()) for m in pattern.finditer(text)]
    return list(dict.fromkeys(name for _, name in sorted(found) if name))


def _n(group: str) -> str:
    """A person's name (Tom, Tom Berg, Dr. Anke Lüders) as the named group."""
    return (rf"(?P<{group}>(?:(?:Dr|Mr|Mrs|Ms|Prof|Frau|Herr)\.?\s+)?"
            rf"[A-Z][\w'’-]*(?:\s+[A-Z][\w'’-]*){{0,2}})")


_ROLE_EN = "(?P<role>(?i:" + "|".join(_EN_ROLES) + "))"
_ROLE_ZH = "(?P<role>" + "|".join(_ZH_ROLES) + ")"
# Each pattern names the groups it has: owner (absent: the user), role, person.
_LINKS = (
    # The user's husband is Tom Berg / my boss, Raj Patel
    re.compile(rf"\b{_USER}\s+{_ADJ}{_ROLE_EN}(?:\s+at\s+[A-Z][\w-]*)?\s*(?:is|was|,|:)?\s+"
               rf"{_n('person')}"),
    # Mia Berg, the user's daughter / Tom is my husband
    re.compile(rf"{_n('person')}(?:,|\s+is|\s+was)\s+{_USER}\s+{_ROLE_EN}\b"),
    # Henk, Daniel's dad, ... (the person first, then whose role he is)
    re.compile(rf"{_n('person')},\s+{_n('owner')}['’]s\s+{_ADJ}{_ROLE_EN}\b"),
    # Raj's wife Priya / Tom's boss at Hafenbau is Ingrid Dahl
    re.compile(rf"{_n('owner')}['’]s\s+{_ROLE_EN}\b(?:\s+at\s+[A-Z][\w-]*)?\s*(?:is|,)?\s+"
               rf"{_n('person')}"),
    # 用户的妈妈叫王芳 / 我的老板是张伟
    re.compile(f"(?:用户|我)的?{_ROLE_ZH}(?:叫|是|名叫)(?P<person>[\u4e00-\u9fff]{{2,3}}?)"
               f"(?=[,，。;；、]|$|是|在|的|今年|住)"),
    # 李伟的妻子赵敏是… / 李伟的直属领导是陈静
    re.compile(f"(?P<owner>[\u4e00-\u9fff]{{2,3}}?)的[\u4e00-\u9fff]{{0,2}}?{_ROLE_ZH}"
               f"(?:叫|是|名叫)?(?P<person>[\u4e00-\u9fff]{{2,3}}?)"
               f"(?=[,，。;；、]|$|是|在|的|今年|住)"),
)
# Qing and Marcus have one daughter, Lily / Tom has a son called Max
_HAVE_CHILD = re.compile(rf"{_n('owner')}(?:\s+and\s+{_n('other')})?\s+(?:have|has|had)\s+"
                         r"(?:(?:one|a|an|two|three|a little|a baby)\s+)?"
                         r"(?P<role>daughter|son|child|kid)s?,?\s+(?:(?:called|named)\s+)?"
                         rf"{_n('person')}")
# "...; she is married to Marcus Webb": the person the sentence just named
_MARRIED = re.compile(rf"\b(?:she|he|who)\s+(?:is|was|got)\s+married\s+to\s+{_n('person')}")
_REPORTS_TO = re.compile(rf"\b(?i:the user|I)\s+(?:reports?|reported)\s+to\s+{_n('person')}")
_NOT_PEOPLE = {"the", "they", "she", "he", "her", "his", "it", "this", "that", "we", "i",
               # words that open a sentence before a comma ("Yesterday, Tom's wife ...")
               "yesterday", "today", "tonight", "tomorrow", "then", "so", "also", "anyway",
               "luckily", "sadly", "apparently", "meanwhile", "later", "now", "well", "oh",
               "monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"}


def _person(name: str) -> str | None:
    name = name.strip()
    first = name.split(" ", 1)[0].casefold()
    return None if not name or first in _NOT_PEOPLE or canonical_role(name) else name


def role_links(text: str) -> list[RoleLink]:
    """Role links a memory states (see the module doc); English and Chinese."""
    out: list[RoleLink] = []
    for pattern in _LINKS:
        for m in pattern.finditer(text):
            found = m.groupdict()
            owner = (_person(found["owner"]) if found.get("owner")
                     and found["owner"] not in ("用户", "我") else SELF_ENTITY)
            role = canonical_role(found["role"])
            person = _person(found["person"])
            if owner and role and person and (normalize_entity_name(person)
                                              != normalize_entity_name(owner)):
                out.append(RoleLink(owner, role, person))
    for m in _HAVE_CHILD.finditer(text):
        role, person = canonical_role(m.group("role")), _person(m.group("person"))
        for owner in (m.group("owner"), m.group("other")):
            owner = _person(owner) if owner else None
            if owner and role and person:
                out.append(RoleLink(owner, role, person))
    for m in _MARRIED.finditer(text):
        person = _person(m.group("person"))
        before = [link for link in out if text.find(link.person) < m.start()]
        if person and before:
            spouse = before[-1].person
            out.append(RoleLink(spouse, "husband" if m.group(0)[0:2].lower() == "sh"
                                else "wife", person))
            out.append(RoleLink(spouse, "partner", person))
    for m in _REPORTS_TO.finditer(text):
        person = _person(m.group("person"))
        if person:
            out.append(RoleLink(SELF_ENTITY, "manager", person))
    return list(dict.fromkeys(out))


# A question's role references: "my husband('s)", "my boss's wife", "Raj's wife",
# "我老公", "我的妈妈", a bare Chinese kinship word ("妈妈最近怎么样": the user's).
_ASK_SELF = re.compile(rf"\b(?i:my)\s+{_ADJ}{_ROLE_EN}\b")
_ASK_CHAIN = re.compile(rf"['’]s\s+{_ROLE_EN}\b")
_ASK_NAMED = re.compile(rf"{_n('owner')}['’]s\s+{_ROLE_EN}\b")
_ASK_ZH = re.compile(f"(?P<me>我的?)?{_ROLE_ZH}")
_ZH_OWNER = re.compile("(?P<owner>[\u4e00-\u9fff]{2,3})的$")


@dataclass(frozen=True)
class AskedRole:
    """A role reference in a question: ``owner``'s ``chain`` of roles (owner
    :data:`SELF_ENTITY` for the user), found at ``span`` of the question."""

    owner: str
    chain: tuple[str, ...]
    span: tuple[int, int]


def asked_roles(query: str) -> list[AskedRole]:
    """The role chains a question asks about: "my boss's wife" -> (the user,
    (manager, wife)); "Raj's wife" -> (Raj, (wife,)); "妈妈" -> (the user, (mother,));
    "李伟的老婆" -> (李伟, (wife,))."""
    out: list[AskedRole] = []
    for m in _ASK_SELF.finditer(query):
        chain = [canonical_role(m.group("role")) or m.group("role")]
        end = m.end()
        while (n := _ASK_CHAIN.match(query, end)) is not None:
            chain.append(canonical_role(n.group("role")) or n.group("role"))
            end = n.end()
        # "my niece's best friend": each way to reach a niece, the rest of the chain after
        for steps in COMPOSITE_ROLES.get(chain[0], (chain[:1],)):
            out.append(AskedRole(SELF_ENTITY, (*steps, *chain[1:]), (m.start(), end)))
    for m in _ASK_NAMED.finditer(query):
        owner = _person(m.group("owner"))
        if owner:
            out.append(AskedRole(owner, (canonical_role(m.group("role")) or m.group("role"),),
                                 m.span()))
    for m in _ASK_ZH.finditer(query):
        role = canonical_role(m.group("role"))
        before = query[:m.start()]
        if not role or re.search("[他她它]的?$", before):
            continue
        named = _ZH_OWNER.search(before)
        if m.group("me") or named is None:
            out.append(AskedRole(SELF_ENTITY, (role,), m.span()))
        else:
            out.append(AskedRole(named.group("owner"), (role,), (named.start(), m.end())))
    return list({(a.owner, a.chain): a for a in out}.values())
