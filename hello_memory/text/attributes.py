"""Facts that update, in general: which attribute of whom a memory states, and whether a
newer memory replaces an older one (issue 26; docs/RETRIEVAL.md, "Facts that update").

:mod:`hello_memory.text.facts` reads the clear phrasings ("Tom moved to Bergen", "我的手机
号是…") into a subject, an attribute and a value. Everyday wording is looser: "Started at
Adyen on Monday" after "I work at Philips", "got the keys to the new place in Leith",
"traded the old Golf in for an electric one", "换工作了，现在在美团上班". This module
reads what such a memory is *about*, not its phrasing:

* **attributes** (:data:`ATTRIBUTES`, en + zh, extensible with :func:`register`): where
  someone lives, works, their role, manager, partner, car, phone, email, diet, pet,
  school, team, gym, doctor, dentist, barber. Each has *strong* cues, the predicates that
  state it ("lives in", "works at", "住在", "在…上班"), and *weak* ones, words that only
  point at it ("office", "flat", "colleagues"); a memory's attributes are its strong ones,
  or its weak ones when it has no strong one.
* **subjects** (:func:`subjects_of`): the user ("I", "we", "my phone", a note with no
  subject, "我"), a role ("my sister", "我妈", read as ``role:sister``) and the names next
  to it ("my sister Anna"), or a named person ("Tom works at …", "Anna's number").
* **values** (:func:`value_tokens`): the names, numbers and other specific words left
  once the subject and the attribute's cues are taken out.

:func:`replaces` decides: the same subject, a shared attribute, a newer memory that is
neither hypothetical, historical, a question, nor an addition ("also", "又"), and either a
plain change marker ("new", "now", "moved", "switched", "换", "搬", "跳槽"…) or a
different value. It is the rules' decision; with an LLM configured the superseder asks
the LLM instead (ARCHITECTURE decision 4). Candidates come from the stores (dense
neighbours of the new memory, memory/supersede.py), so a wording never seen still
supersedes when it is about the same thing.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

from hello_memory.text.people import ROLE_WORDS, SELF_ENTITY, canonical_role
from hello_memory.types import normalize_entity_name

__all__ = ["ATTRIBUTES", "Attribute", "asked_attributes", "asks_advice", "attributes_of",
           "recurring_slot", "register", "replaces", "single_valued", "states_now",
           "subjects_of", "value_tokens"]


@dataclass(frozen=True)
class Attribute:
    """One single-valued attribute: its strong and weak cues (regular expressions,
    English ones matched as whole words ignoring case, Chinese ones as substrings), and
    the wordings of a question that asks for it ("where does Lotte live?", "做什么工作")."""

    name: str
    strong: tuple[str, ...]
    weak: tuple[str, ...] = ()
    asked: tuple[str, ...] = ()
    # One value at a time (where someone lives): a newer value replaces the older one.
    # Tastes, fears and allergies add up instead; they only answer questions.
    single: bool = True


def _alternatives(pattern: str) -> tuple[str, ...]:
    """The top-level alternatives of a regular expression ("a|b(?:c|d)" -> a, b(?:c|d))."""
    parts, depth, start = [], 0, 0
    for i, ch in enumerate(pattern):
        if ch == "(" and (i == 0 or pattern[i - 1] != "\\"):
            depth += 1
        elif ch == ")" and (i == 0 or pattern[i - 1] != "\\"):
            depth -= 1
        elif ch == "|" and depth == 0:
            parts.append(pattern[start:i])
            start = i + 1
    parts.append(pattern[start:])
    return tuple(p for p in parts if p)


def _att(name: str, strong: str, weak: str = "", asked: str = "",
         single: bool = True) -> Attribute:
    return Attribute(name, _alternatives(strong), _alternatives(weak), _alternatives(asked),
                     single)


# The documented list (docs/RETRIEVAL.md, "Facts that update"); add with register().
ATTRIBUTES: dict[str, Attribute] = {a.name: a for a in (
    _att("home", r"lives? in|living in|lived in|"
         r"moved (?:in)?to(?! dr\b| the [\w-]+ (?:team|group|squad|practice))|"
         r"moving to|moved out of|"
         r"relocated to|rent(?:s|ing)? (?:a|an)|based in|retired to|got the keys|"
         r"new (?:place|flat|house|home|apartment)|own (?:studio|flat|place)|"
         r"住在|住到|搬到|搬去|搬家|新家|搬进",
         r"flat|apartment|house|place|home|neighbourhood|neighborhood|studio|房子|住",
         r"where (?:do|does|did) .{1,40} live|(?:home )?address|住(?:在)?哪|住在什么地方|"
         r"住哪个城市"),
    _att("employer", r"works? (?:at|for|as)|working (?:at|for|as)|worked at|joined|started at|"
         r"teach(?:es|ing)? (?:\w+ )?at|first day at|"
         r"(?:i'm|i am|she's|he's|she is|he is) an? [\w-]+ (?:at|on|in)\b|"
         r"new job|employer|handed in (?:his|her|my) notice|jumped ship|left the company|"
         r"on the \w+ ward|nurse at|accountant at|在.{1,10}(?:上班|工作)|"
         r"在.{1,12}(?:做|当)[\u4e00-\u9fff]{0,4}(?:经理|工程师|设计师|律师|"
         r"医生|老师|会计|顾问|程序员|运营|销售|主管|总监|助理|编辑|记者|护士)|入职|跳槽|换工作|"
         r"新工作|离职|"
         r"在.{1,16}(?:公司|事务所|基金会|银行|集团|工厂|律所|医院|学校)(?:当|做)|"
         r"一家.{0,12}(?:公司|事务所|基金会)(?:当|做|上班|工作)",
         r"job|company|office|colleagues|onboarding|公司|同事|单位",
         r"where (?:do|does) .{1,40} work|do for (?:a )?(?:living|work)|work for|"
         r"employer|job|occupation|profession|(?:在)?哪(?:儿|里)?(?:上班|工作)|做什么工作|"
         r"干什么工作|什么工作"),
    _att("job_title", r"promoted to|got promoted|junior|senior|(?:i'm|i am) an? \w+ "
         r"(?:on|at|in)|升职|晋升",
         r"developer|engineer|designer|title|职位"),
    _att("manager", r"manager|boss|team lead|my lead|reports? to|line manager|supervisor|"
         r"took over from \w+ as|领导|上司|老板|(?<!产品|项目|客户|销售)经理|直属"),
    _att("partner", r"dating|married to|engaged to|going out with|seeing \w+|broke up|"
         r"split up|proposed|fianc[ée]e?|"
         r"divorced|boyfriend|girlfriend|husband|wife|partner|"
         r"(?-i:[A-Z])[a-z]+['’]s with (?-i:[A-Z])[a-z]+|"
         r"男朋友|女朋友|"
         r"对象|老公|老婆|交往|分手|离婚|结婚", "",
         r"going out with|dating|seeing|together with"),
    _att("car", r"drives?|driving|car|traded .{0,20} for|got rid of the|electric \w+|"
         r"开一辆|开的是|开\w{0,2}车|买了辆|换了辆|开车|买车|换车|新车|的车|辆车|电车|汽车",
         r"golf|volvo|toyota|tesla|kia|yaris|niro|捷达|雅阁|本田|比亚迪|理想|特斯拉|宝马|奔驰|"
         r"大众|丰田"),
    _att("phone", r"(?:phone|mobile|cell)(?: number)?|number|sim|手机号|号码|电话号|换号|新号",
         r"iphone|pixel|galaxy|oneplus|samsung|fairphone|nokia|motorola|xiaomi|oppo|华为|"
         r"小米手机|手机|电话"),
    _att("email", r"e-?mail|\S+@\S+\.\w+|邮箱"),
    _att("diet", r"vegan|vegetarian|pescatarian|eat (?:pretty much )?(?:everything|anything)|"
         r"eats? anything|eats? everything|meat|keto|吃素|素食|什么都吃|不挑食"),
    _att("pet", r"\bcat\b|dog|puppy|kitten|greyhound|beagle|budgie|parrot|rabbit|hamster|"
         r"tabby|rescue cat|adopted|passed away|died|宠物|领养|养了|养的|叫.{1,4}的(?:猫|狗)|"
         r"的(?:猫|狗|鹦鹉|兔子)叫",
         r"猫|狗|柯基|鹦鹉|兔子", r"pets?|宠物"),
    _att("school", r"goes to (?-i:[A-Z])\w+|attends|primary school|"
         r"high school|university|college|master's|studying at|"
         r"transferred to|(?-i:[A-Z]\w+ (?:High|Primary|Academy|College))|幼儿园|小学|中学|"
         r"大学|读研|读书|上学|转到|学校|入学", r"school"),
    _att("team", r"on the [\w-]+ (?:team|squad)|(?:joined|moved (?:over )?to) the [\w-]+ "
         r"(?:team|squad)|plays for|signed for|[\u4e00-\u9fff]{2}组|团队|部门",
         r"team|squad|academy"),
    _att("gym", r"gym|puregym|climbing wall|membership at|swim(?:s|ming)? at|"
         r"train(?:s|ing)? at|健身房|年卡|健身"),
    _att("commute", r"(?:cycle|bike|drive|walk|commute)s? to work|commute|"
         r"the \d{1,2}:\d\d (?:from|to)|通勤|骑车上班|坐地铁上班", "",
         r"get to work|go to work|to the office|怎么去上班|怎么上班"),
    _att("bike", r"my bike|bike is|bicycle|riding a [\w -]{0,30}(?:bike|vanmoof|gazelle)|自行车",
         r"bike|gazelle|vanmoof"),
    _att("bank", r"\bmy bank\b|bank is|account (?:at|with)|salary and savings|银行卡|开户"),
    _att("internet", r"internet|broadband|wi-?fi|宽带"),
    _att("doctor", r"\bgp\b|my doctor|doctor is|huisarts|家庭医生|主治医生|医生是|"
         r"找.{0,8}医生看|改到.{1,10}医院", r"doctor|practice|surgery|医生|医院|复查"),
    _att("dentist", r"dentist|dentists|teeth|tandarts|牙医|看牙"),
    _att("barber", r"barber|hair ?cut|hairdresser|理发|剪头发|发廊"),
    # what someone likes, fears or must avoid: several at once, never replaced by rule
    _att("allergy", r"allergic|allerg(?:y|ies)|intoleran(?:t|ce)|epipen|coeliac|celiac|过敏",
         single=False),
    _att("taste", r"loves?|obsessed with|is into|crazy about|mad about|fan of|favou?rite|"
         r"hates?|can['’]t stand|dislikes?|wants? an?|hinting|wish ?list|"
         r"doesn['’]t drink|don['’]t drink|teetotal|won['’]t eat|doesn['’]t eat|spicy|"
         r"最喜欢|喜欢|讨厌|不喜欢|想要|不吃辣|不喝酒", single=False),
    _att("fear", r"terrified|afraid|scared|phobia|frightened|nightmares|害怕|怕黑|怕打雷",
         single=False),
    _att("eyesight", r"glasses|contact lenses|laser eye|eye surgery|short-sighted|"
         r"near-sighted|眼镜|近视|隐形眼镜|激光手术|近视手术", r"eyes|eye|视力",
         r"eyesight|see without|视力"),
)}


def register(attribute: Attribute) -> None:
    """Add (or replace) an attribute of :data:`ATTRIBUTES`."""
    ATTRIBUTES[attribute.name] = attribute
    _compiled.cache_clear()
    attributes_of.cache_clear()
    asked_attributes.cache_clear()


def _cues(patterns: tuple[str, ...]) -> tuple[re.Pattern[str], ...]:
    """At most two expressions that match where any of ``patterns`` does: the Chinese
    ones as substrings, the others as whole words ignoring case. One alternation per
    kind, not one expression per cue: reading a memory's attributes at ingest ran some
    370 searches per text (issue 27); an alternation backtracks into its next branch
    when a later check fails, so it matches exactly where one of its branches would."""
    chinese = [p for p in patterns if re.search(r"[\u4e00-\u9fff]", p)]
    words = [p for p in patterns if not re.search(r"[\u4e00-\u9fff]", p)]
    out = []
    if words:
        out.append(re.compile(rf"(?<![\w'])(?:{'|'.join(words)})(?![\w])", re.I))
    if chinese:
        out.append(re.compile("|".join(f"(?:{p})" for p in chinese)))
    return tuple(out)


@lru_cache(maxsize=1)
def _compiled() -> tuple[tuple[str, tuple[re.Pattern[str], ...], tuple[re.Pattern[str], ...],
                               tuple[re.Pattern[str], ...]], ...]:
    return tuple((a.name, _cues(a.strong), _cues(a.weak), _cues(a.asked))
                 for a in ATTRIBUTES.values())


_WORK_QUALIFIED = re.compile(r"\bwork(?:-related)?\s+(?:phone|mobile|number|e-?mail)\b|"
                             r"\bwork-related\b|\bfor work\b|"
                             r"工作(?:手机|电话|邮箱)", re.I)


@lru_cache(maxsize=8192)
def attributes_of(text: str, *, strong_only: bool = False) -> frozenset[str]:
    """The attributes ``text`` states: those with a strong cue, else (unless
    ``strong_only``) those with a weak one. A work phone or email is its own attribute
    ("phone:work"), beside the private one."""
    found = {name for name, s, _, _ in _compiled() if any(p.search(text) for p in s)}
    if not found and not strong_only:
        found = {name for name, _, w, _ in _compiled() if any(p.search(text) for p in w)}
    if _WORK_QUALIFIED.search(text):
        found = {f"{n}:work" if n in ("phone", "email") else n for n in found}
    slot = recurring_slot(text)
    if slot:
        found.add(slot)
    return frozenset(found)


def single_valued(name: str) -> bool:
    """Whether attribute ``name`` holds one value at a time (a taste does not)."""
    attribute = ATTRIBUTES.get(name.split(":", 1)[0])
    return attribute is None or attribute.single


# Advice asks for what someone likes, fears or must avoid: "what should I cook for
# Lotte?" is answered by "Lotte is vegetarian", "should I buy Ines wine?" by "Ines
# doesn't drink" (issue 26, indirect questions). A topic of the question names them.
_ADVICE = re.compile(r"\b(?:should|can|could|shall) (?:i|we)\b|\bavoid\b|"
                     r"\bis it (?:ok|okay|fine|safe)\b|"
                     r"\bdo (?:i|we) need\b|\banything (?:i|we) should\b|\bwhat (?:should|could|"
                     r"can) (?:i|we)\b|应该|可以.{0,12}吗|能不能|要不要|需要注意", re.I)
_ADVICE_TOPICS = (
    (re.compile(r"\b(?:cook|bake|grill|make|dinner|lunch|breakfast|starter|dessert|stew|"
                r"satay|bbq|barbecue|menu|restaurant|eat|food|snack|cake|meal|steaks?|"
                r"prawns?|chicken|fish|chilli|recipe)\b|做饭|做菜|吃|饭", re.I),
     ("diet", "allergy", "taste")),
    (re.compile(r"\b(?:wine|beer|drinks?|alcohol|cocktails?|champagne|milk|latte|coffee)\b|"
                r"酒|喝", re.I), ("diet", "allergy", "taste")),
    (re.compile(r"\b(?:gift|present|get \w+ for|give \w+ for|buy \w+ for|birthday|"
                r"christmas)\b|礼物|送", re.I), ("taste",)),
    (re.compile(r"\b(?:antibiotics?|painkillers?|medicine|medication|drugs?|pills?|"
                r"vaccine)\b|药", re.I),
     ("allergy",)),
    (re.compile(r"\b(?:storm|thunder|dark|night|staying over|sleepover|dog|spider)\b|打雷|过夜",
                re.I), ("fear", "allergy")),
)


def asks_advice(question: str) -> bool:
    """Whether a question asks what to do for someone ("should I buy Ines wine?",
    "what could I give Qing?"): its "I" is the asker, not the one it is about."""
    return bool(_ADVICE.search(question))


_POSSESSOR = re.compile(r"\b\w+['’]s\b(?=\s+\w)")


@lru_cache(maxsize=1024)
def asked_attributes(question: str) -> frozenset[str]:
    """The attributes a question asks for: the ones its words state ("what car do I
    drive?", strong cues only: "what went wrong at home?" asks for no address) and those
    of its question wordings ("where does Lotte live?", "what does Daniel do for a
    living?", "嘉怡现在在哪儿工作？")."""
    # "What is my boss's dog called?" asks for a pet: a possessor is not what is asked
    named = attributes_of(_POSSESSOR.sub(" ", question), strong_only=True)
    found = set(named)
    found.update(name for name, _, _, a in _compiled() if any(p.search(question) for p in a))
    if _ADVICE.search(question):
        for topic, names in _ADVICE_TOPICS:
            if topic.search(question):
                found.update(names)
    else:  # "what does Lily love?" names a taste; only advice asks for them unnamed
        found -= {"taste", "fear"} - named
    return frozenset(found)


# A weekly slot is an attribute of its own: "Tuesday evenings are pottery class now"
# replaces "Tuesday evenings are my Spanish lessons" (every <day> <part of day>).
_DAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
_SLOT_EN = re.compile(r"\b(?:every |on )?(?P<day>monday|tuesday|wednesday|thursday|friday|"
                      r"saturday|sunday)s?\s+(?P<part>mornings?|afternoons?|evenings?|"
                      r"nights?)\b", re.I)
_SLOT_ZH = re.compile(r"(?:每)?(?:周|星期|礼拜)(?P<day>[一二三四五六日天])(?P<part>上午|早上|下午|"
                      r"晚上)")
_ZH_DAY = {"一": 0, "二": 1, "三": 2, "四": 3, "五": 4, "六": 5, "日": 6, "天": 6}
_ZH_PART = {"上午": "morning", "早上": "morning", "下午": "afternoon", "晚上": "evening"}


def _without_slot(text: str) -> str:
    """``text`` with its weekly slot taken out: the slot is what a memory is about, not
    one of its values."""
    return _SLOT_ZH.sub(" ", _SLOT_EN.sub(" ", text))


def recurring_slot(text: str) -> str | None:
    """``slot:<day>-<part of day>`` for a text about a weekly slot ("Tuesday evenings",
    "every Saturday morning", "周六上午"), else None."""
    m = _SLOT_EN.search(text)
    if m:
        part = m["part"].casefold().rstrip("s")
        return f"slot:{m['day'].casefold()}-{part}"
    z = _SLOT_ZH.search(text)
    if z:
        return f"slot:{_DAYS[_ZH_DAY[z['day']]]}-{_ZH_PART[z['part']]}"
    return None


# --- subjects ------------------------------------------------------------------------
_EN_ROLE = "|".join(sorted((w for w in ROLE_WORDS if w.isascii()), key=len, reverse=True))
_ZH_ROLE = "|".join(sorted((w for w in ROLE_WORDS if not w.isascii()), key=len, reverse=True))
_EXTRA_ROLES = {"niece": "niece", "nephew": "nephew", "uncle": "uncle", "aunt": "aunt",
                "cousin": "cousin", "姐": "sister", "老爸": "father", "老妈": "mother",
                "表哥": "cousin", "表姐": "cousin", "哥": "brother", "弟": "brother",
                "妹": "sister"}
# Roles that are attributes of the user ("my boss is Raj", "我的领导"), not people a fact
# is about.
_ATTRIBUTE_ROLES = frozenset({"manager", "doctor", "dentist", "teacher", "colleague"})
_ROLE_EN = _EN_ROLE + "|niece|nephew|uncle|aunt|cousin"
_NAME = r"(?-i:[A-Z][a-z]+(?:\s+[A-Z][a-z]+)?)"
_POSSESSIVE_ROLE = re.compile(
    rf"\b(?:my|our)\s+(?:\w+\s+)?(?P<role>{_ROLE_EN})\b(?:,?\s+(?P<name>{_NAME}))?", re.I)
_LEAD_ROLE = re.compile(rf"^\W*(?P<role>Uncle|Aunt|Grandma|Grandpa|Dad|Mum|Mom)\b"
                        rf"(?:\s+(?P<name>{_NAME}))?")
# "Anna's number", "Tom's boss": the owner of an attribute noun
_OWNER = re.compile(rf"\b(?P<name>{_NAME})['’]s\s+(?:\w+\s+)?(?:number|phone|mobile|email|"
                    r"boss|manager|job|car|house|flat|address|doctor|dentist|school|team|"
                    r"partner|wife|husband|girlfriend|boyfriend|diet)\b")
# A sentence's leading name: a capitalised word followed by a verb ("Tom joined", "Anna
# lives", "Raj took over"), "and" or "'s"; "Lunch on Tuesday" and "Went bouldering"
# lead with no one.
_VERB = (r"(?:is|was|are|were|has|had|have|will|can|could|does|did|just|also|still|now|"
         r"finally|never|always|took|got|went|made|left|came|saw|met|ate|bought|sold|gave|"
         r"told|said|paid|sent|flew|drove|ran|won|lost|became|began|brought|kept|found|"
         r"goes|(?:does|did|is|was|has|had|can|could|wo|would|are|were)n['’]t|[a-z]+(?:s|ed))")
_LEAD_NAME = re.compile(rf"^\W*(?:(?:After|Since|Before|Then|So|Now)\b[^,]*,\s*)?"
                        rf"(?P<name>{_NAME})(?=['’]s\b|\s+(?:and|&)\s+|\s+{_VERB}\b|,\s)")
# "Daniel's parents live in Deventer": the subject is Daniel's parents, not Daniel
_LEAD_KIN = re.compile(rf"^\W*(?P<name>{_NAME})['’]s\s+(?P<role>{_EN_ROLE}|parents|"
                       r"niece|nephew|uncle|aunt|cousin)\b", re.I)
_FIRST = re.compile(r"\b(?:i|i'm|i've|i'd|i'll|me|mine|we|we're|we've|our|us|my)\b", re.I)
_PERSON_ROLE_EN = "|".join(w for w in _ROLE_EN.split("|")
                           if _EXTRA_ROLES.get(w, canonical_role(w)) not in
                           ("manager", "doctor", "dentist", "teacher", "colleague"))
_ROLE_AFTER_MY = re.compile(rf"\b(?:my|our)\s+(?:\w+\s+)?(?:{_PERSON_ROLE_EN})\b", re.I)
_KIN_ANYWHERE = re.compile(r"\b(?-i:Grandma|Grandpa|Granny|Dad|Mum|Mom)\b")
_ZH_SELF_ROLE = re.compile(rf"^(?:我的?|咱)(?P<role>{_ZH_ROLE}|姐|哥|弟|妹|表哥|表姐)")
_ZH_LEAD_ROLE = re.compile(rf"^(?P<role>{_ZH_ROLE}|老爸|老妈)")
_ZH_LEAD_NAME = re.compile(r"^(?P<name>(?:小|老|阿)[\u4e00-\u9fff]"
                           r"|(?![被把跟和从搬换已今上下最又还这那在去前昨明本每部]|用户)"
                           r"[\u4e00-\u9fff]{2}(?=的|在|住|开|换|跳|搬|上|去|说|家|已|终|现|改|从|九|和|走|"
                           r"最喜欢|喜欢|不喜欢))")
# A name inside a sentence followed by its verb; a capitalised word opening a sentence
# ("... done! Product analytics") is no one (the lead name is read by _LEAD_NAME).
_CLAUSE = re.compile(rf"(?<![.!?]\s)\b(?P<name>{_NAME})\s+{_VERB}\b")
# Words that open an English sentence but are nobody's name.
_NOT_NAMES = frozenset(str.split("""
the a an another this that these those it there here my our his her their your i we you
he she they new got had started traded cancelled registered switched found upgraded moved
transferred left use for no does is considering thinking back in at on after since before
then so now made charged still another had what when where who how why"""))


def _role(word: str) -> str:
    return canonical_role(word) or _EXTRA_ROLES.get(word.casefold(), _EXTRA_ROLES.get(word, word))


def _name_ok(name: str) -> bool:
    return name.split()[0].casefold() not in _NOT_NAMES


def subjects_of(text: str) -> frozenset[str]:
    """Who ``text`` may be about: :data:`SELF_ENTITY` for the user, ``role:<role>`` for
    one of the user's people named by role, and the normalised names given (a person
    named next to a role, a sentence's leading name, the owner of an attribute noun).
    Two memories are about the same subject when these sets meet.

    A pure function of the text, read for about 30 candidates of every search: a text
    of at most SUBJECTS_CACHED_CHARS characters is read once (the cache holds at most
    about 8192 x that), a longer one every time (issue 27)."""
    if len(text) <= SUBJECTS_CACHED_CHARS:
        return _cached_subjects(text)
    return _subjects(text)


SUBJECTS_CACHED_CHARS = 1000


@lru_cache(maxsize=8192)
def _cached_subjects(text: str) -> frozenset[str]:
    return _subjects(text)


def _subjects(text: str) -> frozenset[str]:
    t = text.strip()
    out: set[str] = set()
    latin = re.match(r"(?P<name>[A-Z][a-z]+)(?=[\u4e00-\u9fff])", t)
    if latin:  # "Lily到新加坡以后…": a name written in Latin letters, Chinese after it
        return frozenset({normalize_entity_name(latin["name"])})
    if re.search(r"[\u4e00-\u9fff]", t[:3]):
        m = _ZH_SELF_ROLE.match(t)
        if m and _role(m["role"]) in _ATTRIBUTE_ROLES:
            return frozenset({SELF_ENTITY})
        m = m or (None if t.startswith("我") else _ZH_LEAD_ROLE.match(t))
        if m:
            out.add(f"role:{_role(m['role'])}")
            name = re.match(r"[\u4e00-\u9fff]{2}(?=[住在开换跳搬上去说])", t[m.end():])
            if name:
                out.add(normalize_entity_name(name.group(0)))
            return frozenset(out)
        m = None if t.startswith("我") else _ZH_LEAD_NAME.match(t)
        if m:
            return frozenset({normalize_entity_name(m["name"])})
        return frozenset({SELF_ENTITY})
    lead = _LEAD_ROLE.match(t)
    if lead:
        out.add(f"role:{_role(lead['role'])}")
        if lead["name"]:
            out.add(normalize_entity_name(lead["name"]))
    for m in _POSSESSIVE_ROLE.finditer(t):
        role = _role(m["role"])
        if role in _ATTRIBUTE_ROLES:
            continue  # "my boss is Raj": an attribute of the user
        out.add(f"role:{role}")
        if m["name"]:
            out.add(normalize_entity_name(m["name"]))
    for word in _KIN_ANYWHERE.finditer(t):
        out.add(f"role:{_role(word.group(0))}")
    kin = _LEAD_KIN.match(t)
    name = None if kin else _LEAD_NAME.match(t)
    if kin and _name_ok(kin["name"]):
        out.add(f"{normalize_entity_name(kin['name'])}:{_role(kin['role'])}")
    if name and _name_ok(name["name"]):
        out.add(normalize_entity_name(name["name"]))
    for owner in _OWNER.finditer(t):
        if _name_ok(owner["name"]):
            out.add(normalize_entity_name(owner["name"]))
    if not out:  # "Since that documentary Daniel doesn't eat meat": a clause's subject
        # not a capitalised word opening a sentence ("... done! Product analytics")
        clause = next((c for c in _CLAUSE.finditer(t) if c.start() > 0), None)
        if clause and _name_ok(clause["name"]):
            out.add(normalize_entity_name(clause["name"]))
    # the user: "I ...", "we ...", "my phone ..." (not "my sister ..."), or a note with
    # no subject of its own
    plain = _ROLE_AFTER_MY.sub(" ", t)
    if _FIRST.search(plain) or not out:
        out.add(SELF_ENTITY)
    return frozenset(out)


# --- values --------------------------------------------------------------------------
_STOP = frozenset(str.split("""
i me my we our us you he she they it its his her their the a an and or but of to in on at
for with from by is are was were be been am has have had do does did will would not no new
old now just finally last this next ago since as so then still also too very my own got get
"""))
_TOKEN = re.compile(r"[A-Za-z][A-Za-z'’.-]*[A-Za-z]|\d[\d\s+]{3,}\d|\d+|[\u4e00-\u9fff]+")


def value_tokens(text: str, subjects: frozenset[str] = frozenset()) -> frozenset[str]:
    """The specific words of ``text``: capitalised words and numbers (English), the
    Chinese words of two or more characters, less the subject's names."""
    names = {w for s in subjects for w in s.split()}
    out: set[str] = set()
    text = _without_slot(text)
    for m in _TOKEN.finditer(text):
        tok = m.group(0)
        if tok[0].isdigit():
            digits = re.sub(r"\s+", "", tok)
            if len(digits) >= 4:  # a phone number or a year, not "#1" or "15"
                out.add(digits)
        elif re.match(r"[\u4e00-\u9fff]", tok):
            out.update(tok[i:i + 2] for i in range(len(tok) - 1))  # character bigrams
        elif tok[0].isupper() and tok.casefold() not in _STOP and (
                m.start() > 0 or not (tok.casefold() in _NOT_NAMES
                                      or tok.endswith(("ed", "ing", "s")))):
            low = tok.casefold().rstrip("'’s")
            if low not in names:
                out.add(low)
    return frozenset(out)


# --- the decision --------------------------------------------------------------------
# A newer memory that only imagines, plans, asks, denies or remembers the past.
_NOT_NOW = re.compile(
    r"\?|？|\b(?:might|maybe|perhaps|thinking (?:about|of)|considering|planning to|plan to|"
    r"if the|would|could|hoping|hope to|want to|wants to|once the|back in|used to|at uni|"
    r"in (?:19|20)\d\d|first (?:car|job|flat|house)|never lived|does \w+ still|"
    r"is \w+ going to|will|going to|gonna|asking)"
    r"\b|可能|考虑|打算|如果|的时候|第一份|过两年|明年|准备|想要|还在考虑|吗", re.I)
# An older memory that only wondered or planned ("I might move to Berlin?") held nothing.
_WISH = re.compile(r"\?|？|\b(?:might|maybe|perhaps|thinking (?:about|of)|considering|"
                   r"planning to|plan to|hoping)\b|可能|考虑|打算|吗", re.I)
# A newer memory that adds to what holds ("also", "too", "another", "又", "也", "还").
_ADDS = re.compile(r"\b(?:also|too|as well|another|either)\b|又|也在|还开始|也")
# Plain markers of a change of value ("now", "these days", "现在" are none: a newer
# memory with one of them replaces only with a value the older one does not have).
_CHANGE = re.compile(
    r"\bnew (?:job|place|flat|house|home|car|number|phone|mobile|sim|team lead|lead|"
    r"manager|boss|school|team|gym|doctor|gp|dentist|barber|address|email|partner|"
    r"boyfriend|girlfriend|routine|bank|mobile)\b|"
    r"\b(?:moved|switched|switch|traded|left|quit|changed|started at|"
    r"joined|transferred|promoted|upgraded|got rid of|broke up|divorced|passed away|died|"
    r"cancelled|instead|no longer|any more|anymore|took over|jumped ship|handed in|"
    r"retired to|got the keys|from now on|since the move|moved over|signed for|"
    r"has decided|gone|engaged|proposed|sold|stole|stolen|split up|registered with|"
    r"first day|for the first time|picked up|replaced)\b"
    r"|换|搬|跳槽|入职|分手|改到|改去|转到|变成|新|不再|走了|卖了|调去|终于|上小学", re.I)
# Markers that the old value ended (its own value may be all the newer memory names).
_LEAVES = re.compile(
    r"\b(?:traded|sold|left|quit|got rid of|broke up|split up|divorced|passed away|died|"
    r"cancelled|moved out of|stole|stolen|handed in|no longer|any more|anymore|instead)\b"
    r"|卖了|分手|离婚|走了|离职|不再|不做了|跑路", re.I)
# Markers that something ended which end the old value only when the newer memory names
# it ("Dropped my Pixel in the canal" after "My phone is a Pixel 6"; "游泳馆关了" after
# "我每周日上午去游泳"), not any loss ("Alice lost her office badge" leaves her employer).
_ENDS_NAMED = re.compile(r"\b(?:dropped|lost|broke|smashed|stopped|closed|no more)\b"
                         r"|关了|关门|停了", re.I)
_WORD = re.compile(r"[A-Za-z][A-Za-z'’-]{3,}|[\u4e00-\u9fff]+")


def _words(text: str, names: frozenset[str]) -> set[str]:
    """The content words of ``text`` (four letters or more, or Chinese bigrams), less the
    subject's names and the weekly slot."""
    skip = {w for n in names for w in n.split()}
    out: set[str] = set()
    for m in _WORD.finditer(_without_slot(text)):
        word = m.group(0).casefold().rstrip("'’s")
        if re.match(r"[\u4e00-\u9fff]", word):
            out.update(word[i:i + 2] for i in range(len(word) - 1))
        elif word not in _STOP and word not in skip:
            out.add(word)
    return out


def states_now(text: str) -> bool:
    """Whether ``text`` states what holds now: not a plan or a wish ("I might move to
    Berlin"), the past ("In 2019 I lived in Oslo"), a question or an addition."""
    return not (_NOT_NOW.search(text) or _ADDS.search(text))


def replaces(new: str, old: str, *, plain: bool = True) -> bool:
    """Whether the memory saying ``new`` (stated after ``old``) replaces the one saying
    ``old``, by the rules in the module doc. ``plain=False``: only with a change marker
    (the newer memory is an event, not a statement of what holds)."""
    if not states_now(new) or _WISH.search(old):
        return False  # the older memory must have stated what held, not a wish or a question
    # The older memory must state the attribute (a strong cue: "I live in ...", not
    # "the new ramen place"); the newer one may only point at it when it says that
    # something changed ("Sold the Yaris ...").
    changed = bool(_CHANGE.search(new))
    ends = bool(_ENDS_NAMED.search(new))
    shared = {a for a in attributes_of(new, strong_only=not (changed or ends))
              & attributes_of(old, strong_only=True) if single_valued(a)}
    if not shared:
        return False
    who_new, who_old = subjects_of(new), subjects_of(old)
    if not who_new & who_old:
        # "Snuffel died last week" after "Lotte has a rabbit called Snuffel": the newer
        # memory's subject is a value of the older one's attribute, so it is the older
        # one's subject whose attribute changed
        # ... but not when it is only whose someone is ("Henk, Daniel's dad, won't eat
        # anything spicy" is Henk's, and Daniel's own diet changes nothing of it)
        owners = {m.group(1).casefold() for m in re.finditer(r"\b(\w+)['’]s\b", old)}
        if not who_new & (value_tokens(old, who_old) - owners):
            return False
        who_new = who_old
    both = who_new & who_old  # the names of the shared subject are not values
    vals_new, vals_old = value_tokens(new, both), value_tokens(old, both)
    if _LEAVES.search(new):
        return True  # the old value ends ("traded the Golf", "left Shell", "卖了")
    if ends and _words(new, both) & _words(old, both):
        return True  # the old thing, named, ended ("Dropped my Pixel", "游泳馆关了")
    if not (changed or attributes_of(new, strong_only=True) & shared):
        return False  # only a weak cue, and no change it names
    if changed:
        # "Daniel's first day at the Rivierhal" after "he starts at the Rivierhal":
        # an arrival that names nothing the older memory did not already say
        return not (vals_new and vals_new <= vals_old)
    # a plain statement (or "now") with another value; one sharing the old value restates it
    return plain and bool(vals_new) and not vals_new & vals_old
