"""Writes benchmarks/data/dedup_update.json: the dedup / update benchmark's adds.

The phrasings below are written for this benchmark (English and Chinese). Each
namespace follows a few people through time: a fact is stated, repeated word for word,
restated in other words, then changed (a move, a new job, a marriage, a new phone
number), and changed again; memories that must NOT supersede anything are mixed in
(another person with the same value, a visit, a sister's home, a preference). Some
phrasings are outside what the rules read ("packed up and now rents a flat in ..."),
on purpose: the rules' recall is measured, not assumed.

Labels per add: ``kind`` (fact | repeat | paraphrase | change | other), ``of`` (the
add a repeat or paraphrase restates), ``supersedes`` (the adds a change ends: every
earlier add of that fact still true, paraphrases included). Run it again to rebuild
the file; it is deterministic (seed 15).
"""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

OUT = Path(__file__).with_name("dedup_update.json")

EN = {
    "residence": {
        "values": ["Oslo", "Bergen", "Trondheim", "Stavanger", "Tromsø", "Bodø", "Leeds",
                   "Lisbon", "Porto", "Gdansk", "Munich", "Vienna"],
        "fact": ["{s} lives in {v}."],
        "para": ["{s} is living in {v}.", "{s} resides in {v}.", "{s}'s home is in {v}.",
                 "These days {s} calls {v} home."],
        "change": ["{s} moved from {old} to {v}.", "{s} moved to {v}.", "{s} relocated to {v}.",
                   "{s} has moved to {v}.", "{s} packed up and now rents a flat in {v}."],
        "other": ["{s} visited {v2} last week.", "{s}'s sister lives in {v2}.",
                  "{s} has a friend in {v2}.", "{s} flew to {v2} for a conference."],
    },
    "employer": {
        "values": ["Equinor", "Statkraft", "Aker", "Telenor", "DNB", "Kahoot", "Schibsted",
                   "Yara", "Orkla", "Vipps"],
        "fact": ["{s} works at {v}."],
        "para": ["{s} is employed at {v}.", "{s} works for {v}.", "{s} has a job at {v}."],
        "change": ["{s} joined {v}.", "{s} now works at {v}.", "{s} started working at {v}.",
                   "{s} left {old} for a position at {v}."],
        "other": ["{s} had a meeting with people from {v2}.", "{s} bought shares in {v2}.",
                  "{s}'s brother works at {v2}."],
    },
    "spouse": {
        "values": ["Lisa", "Kari", "Ingrid", "Nora", "Emma", "Sara"],
        "fact": ["{s} is married to {v}."],
        "para": ["{s} and {v} are married.", "{s}'s wife is {v}."],
        "change": ["{s} got married to {v}.", "{s} married {v}."],
        "other": ["{s} had lunch with {v2}.", "{s} is friends with {v2}."],
    },
    "phone": {
        "values": ["555-0142", "555-0199", "555-0107", "555-0163", "555-0181", "555-0125"],
        "fact": ["{s}'s phone number is {v}."],
        "para": ["{s} can be reached on {v}.", "You can call {s} at {v}."],
        "change": ["{s}'s phone number is now {v}.", "{s} changed phone number to {v}."],
        "other": ["{s}'s office line is {v2}."],
    },
}
ZH = {
    "residence": {
        "values": ["北京", "上海", "杭州", "深圳", "成都", "南京", "武汉", "西安", "厦门", "青岛"],
        "fact": ["{s}住在{v}。"],
        "para": ["{s}现在住在{v}。", "{s}的家在{v}。", "{s}目前居住在{v}。"],
        "change": ["{s}搬到了{v}。", "{s}从{old}搬到了{v}。", "{s}去年搬去了{v}。",
                   "{s}现在人在{v}。"],
        "other": ["{s}上周去{v2}出差了。", "{s}的妹妹住在{v2}。", "{s}在{v2}有很多朋友。"],
    },
    "employer": {
        "values": ["阿里巴巴", "腾讯", "华为", "字节跳动", "百度", "京东", "美团", "小米"],
        "fact": ["{s}在{v}工作。"],
        "para": ["{s}在{v}上班。", "{s}是{v}的员工。"],
        "change": ["{s}跳槽到了{v}。", "{s}入职了{v}。", "{s}现在在{v}工作。",
                   "{s}换了工作，去了{v}。"],
        "other": ["{s}去{v2}面试过。", "{s}的哥哥在{v2}工作。"],
    },
    "spouse": {
        "values": ["张伟", "刘洋", "陈磊", "杨帆", "赵敏"],
        "fact": ["{s}和{v}结婚了。"],
        "para": ["{s}的丈夫是{v}。", "{s}和{v}是夫妻。"],
        "change": ["{s}嫁给了{v}。", "{s}跟{v}结婚了。"],
        "other": ["{s}和{v2}一起吃了午饭。"],
    },
    "phone": {
        "values": ["13800001111", "13911112222", "13700003333", "13600004444", "13500005555"],
        "fact": ["{s}的手机号是{v}。"],
        "para": ["{s}的电话是{v}。", "打{v}可以找到{s}。"],
        "change": ["{s}的手机号换成了{v}。", "{s}的手机号改成了{v}。"],
        "other": ["{s}办公室的座机是{v2}。"],
    },
}
EN_PEOPLE = ["Tom", "Anna", "Erik", "Maria", "Jonas", "Sofia", "Lars", "Helga", "Nils", "Ida",
             "Petter", "Marte"]
ZH_PEOPLE = ["李伟", "王芳", "陈静", "刘强", "赵丽", "孙明", "周婷", "吴刚", "郑爽", "黄磊"]


def scenario(rng: random.Random, name: str, lang: str, people: list[str]) -> dict[str, Any]:
    bank = EN if lang == "en" else ZH
    adds: list[dict[str, Any]] = []
    day = 0
    # per (person, attribute): the adds of the fact still true, its value, its values so far
    state: dict[tuple[str, str], dict[str, Any]] = {}
    others: dict[tuple[str, str], str] = {}
    plan: list[tuple[str, str]] = []
    for person in people:
        attrs = rng.sample(sorted(bank), 2)
        for attr in attrs:
            steps = ["fact", rng.choice(["repeat", "para"]), "change", "other",
                     rng.choice(["para", "repeat", "change"]), "change", "other"]
            plan += [(person, attr, s) for s in steps]  # type: ignore[misc]
    # interleave the people, keeping each fact's own order
    queues: dict[tuple[str, str], list[str]] = {}
    for person, attr, step in plan:  # type: ignore[misc]
        queues.setdefault((person, attr), []).append(step)
    keys = list(queues)
    while keys:
        key = rng.choice(keys)
        step = queues[key].pop(0)
        if not queues[key]:
            keys.remove(key)
        person, attr = key
        spec = bank[attr]
        st = state.setdefault(key, {"current": [], "value": None, "used": []})
        day += rng.randint(3, 40)
        entry: dict[str, Any] = {"day": day, "kind": step}
        if step == "fact" or (step in ("repeat", "para") and not st["current"]):
            value = rng.choice([v for v in spec["values"] if v not in st["used"]])
            entry.update(kind="fact", content=rng.choice(spec["fact"]).format(s=person, v=value))
            st.update(current=[len(adds)], value=value)
            st["used"].append(value)
        elif step == "repeat":
            of = st["current"][0]
            entry.update(content=adds[of]["content"], of=of)
        elif step == "para":
            of = st["current"][0]
            text = rng.choice(spec["para"]).format(s=person, v=st["value"])
            if text in {a["content"] for a in adds}:
                text = spec["para"][0].format(s=person, v=st["value"])
            entry.update(content=text, of=of)
            st["current"].append(len(adds))
        elif step == "change":
            value = rng.choice([v for v in spec["values"] if v not in st["used"]])
            text = rng.choice(spec["change"]).format(s=person, v=value, old=st["value"])
            entry.update(content=text, supersedes=list(st["current"]))
            st.update(current=[len(adds)], value=value)
            st["used"].append(value)
        else:  # other: a statement that must not supersede anything
            template = rng.choice(spec["other"])
            # a relative's home or job (a subject of its own) stays the same throughout
            v2 = others.setdefault((person, template), rng.choice(
                [v for v in spec["values"] if v != st["value"]]))
            entry.update(content=template.format(s=person, v2=v2))
        adds.append(entry)
    # another person stating a value someone here had: never a supersession
    for person in people[:1]:
        key = next(k for k in state if k[0] == person)
        spec = bank[key[1]]
        other = (EN_PEOPLE if lang == "en" else ZH_PEOPLE)[-1]
        day += 5
        adds.append({"day": day, "kind": "other",
                     "content": spec["fact"][0].format(s=other, v=state[key]["value"])})
    return {"namespace": name, "language": lang, "adds": adds}


def main() -> None:
    rng = random.Random(15)
    scenarios = []
    for n in range(5):
        scenarios.append(scenario(rng, f"en-{n}", "en", rng.sample(EN_PEOPLE[:-1], 2)))
    for n in range(4):
        scenarios.append(scenario(rng, f"zh-{n}", "zh", rng.sample(ZH_PEOPLE[:-1], 2)))
    data = {"description": __doc__.split("\n\n")[1].replace("\n", " "),
            "seed": 15, "scenarios": scenarios}
    OUT.write_text(json.dumps(data, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    total = sum(len(s["adds"]) for s in scenarios)
    kinds: dict[str, int] = {}
    for s in scenarios:
        for a in s["adds"]:
            kinds[a["kind"]] = kinds.get(a["kind"], 0) + 1
    print(f"{OUT}: {total} adds, {kinds}")


if __name__ == "__main__":
    main()
