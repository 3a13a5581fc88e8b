"""Building the facade's parts and services from built stores (issue 31).

``MemoryManager(stores, **options)`` hands its options here and keeps what
:func:`build_facade` returns: the memory types, the services it delegates to and the
settings they were built with (docs/ARCHITECTURE.md, Layers). :class:`FacadeOptions`
names every option with its type; a left-out one takes the default of
:data:`DEFAULTS` (``MemoryManager.open`` fills them from the settings).

Building reads and writes nothing and changes nothing in the stores it is given (issue
31: no side effects in ``__init__``). The graph links of every write
(``text/links.py`` ``GraphLinks``) reach the stores at their open
(``MemoryManager.open`` passes them to ``open_stores``, and ``Stores.open`` replays
the backlog with them in place); stores opened without them get the facade's at its
first write or ``MemoryManager.resume`` (:func:`resume_stores`, docs/ARCHITECTURE.md,
"The write path").
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime
from functools import partial, wraps
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, TypedDict, TypeVar

from hello_memory import telemetry
from hello_memory.memory.dedup import DuplicateMode, duplicate_mode
from hello_memory.memory.episodic import EpisodicMemory
from hello_memory.memory.scoring import EPISODIC, ScoringProfile
from hello_memory.memory.semantic import SemanticMemory
from hello_memory.memory.supersede import Superseder
from hello_memory.memory.working import WorkingMemory
from hello_memory.retrieval.parts import SearchParts
from hello_memory.services.browse import BrowseService
from hello_memory.services.edit import EditService
from hello_memory.services.ingest import IngestService
from hello_memory.services.lifecycle import Lifecycle
from hello_memory.services.lookup import LookupService
from hello_memory.services.maintenance import MaintenanceService
from hello_memory.services.search import SearchService
from hello_memory.text.entities import EntityExtractor, default_extractor
from hello_memory.text.links import GraphLinks
from hello_memory.types import MemoryType, utcnow
from hello_memory.validation import require_namespace, validate_memory_type

if TYPE_CHECKING:
    from hello_memory.config import JobsSettings, RetrievalSettings, Settings
    from hello_memory.llm.base import LLMClient
    from hello_memory.memory.perceptual import PerceptualMemory
    from hello_memory.stores.bundle import Stores

__all__ = ["DEFAULTS", "FacadeOptions", "FacadeParts", "build_facade", "opened_settings",
           "options_of", "resolve_namespace", "resume_stores", "resumes_first"]


class FacadeOptions(TypedDict, total=False):
    """The keyword options of ``MemoryManager(stores, ...)``, each a setting of
    docs/CONFIGURATION.md (``MemoryManager.open`` maps them)."""

    working: WorkingMemory | None
    extractor: EntityExtractor | None
    default_namespace: str
    default_type: MemoryType | str
    dedup_threshold: float
    episodic_profile: ScoringProfile
    max_hops: int
    clock: Callable[[], datetime]
    llm: LLMClient | None
    retrieval: RetrievalSettings | None
    lifecycle: JobsSettings | None
    supersede: str
    supersede_candidates: int
    extract_facts: bool
    uploads_dir: str | Path | None
    on_duplicate: str
    times_from_text: bool
    event_time_from_text: bool


DEFAULTS: dict[str, Any] = {
    "working": None, "extractor": None, "default_namespace": "default",
    "default_type": MemoryType.EPISODIC, "dedup_threshold": 0.92,
    "episodic_profile": EPISODIC, "max_hops": 2, "clock": utcnow, "llm": None,
    "retrieval": None, "lifecycle": None, "supersede": "auto", "supersede_candidates": 5,
    "extract_facts": False, "uploads_dir": None, "on_duplicate": "return",
    "times_from_text": True, "event_time_from_text": False,
}


def opened_settings(settings: Settings | None, overrides: Mapping[str, Any]) -> Settings:
    """The settings ``MemoryManager.open`` builds from: ``settings``, else
    ``load_settings(**overrides)``; their tracing switched on when they ask for it."""
    from hello_memory.config import load_settings

    settings = settings or load_settings(**overrides)
    if settings.observability.tracing:  # spans stay off unless asked for
        telemetry.configure(tracing=True, capture_query=settings.observability.capture_query)
    return settings


def options_of(settings: Settings, *, extractor: EntityExtractor | None = None
               ) -> FacadeOptions:
    """The options ``MemoryManager.open`` builds from ``settings``; ``extractor`` is
    built by the caller (``factory.build_extractor``, above this layer)."""
    from hello_memory.llm.openai_compat import from_settings
    from hello_memory.stores.uploads import uploads_root

    w, m = settings.working, settings.memory
    return FacadeOptions(
        extractor=extractor, working=WorkingMemory(capacity=w.capacity, ttl_minutes=w.ttl_minutes,
                              token_budget=w.token_budget, limits=settings.limits),
        default_namespace=settings.default_namespace, default_type=m.default_type,
        dedup_threshold=m.dedup_threshold,
        episodic_profile=EPISODIC.model_copy(update={"half_life_days":
                                                     m.episodic_half_life_days}),
        max_hops=settings.semantic.max_hops, llm=from_settings(settings.llm),
        retrieval=settings.retrieval, lifecycle=settings.jobs, supersede=m.supersede,
        supersede_candidates=m.supersede_candidates, extract_facts=m.extract_facts,
        uploads_dir=uploads_root(settings.data_dir), on_duplicate=m.on_duplicate,
        times_from_text=m.times_from_text, event_time_from_text=m.event_time_from_text)


def resolve_namespace(default: str, namespace: str | None) -> str:
    """``namespace`` checked, or ``default`` when None."""
    return require_namespace(default if namespace is None else namespace)


@dataclass(frozen=True)
class FacadeParts:
    """What the facade keeps (module doc)."""

    working: WorkingMemory
    extractor: EntityExtractor
    links: GraphLinks
    episodic: EpisodicMemory
    semantic: SemanticMemory
    perceptual: PerceptualMemory | None
    llm: LLMClient | None
    clock: Callable[[], datetime]
    default_namespace: str
    default_type: MemoryType
    uploads_dir: Path | None
    dedup_threshold: float
    on_duplicate: DuplicateMode
    event_time_from_text: bool
    extract_facts: bool
    times_from_text: bool
    browse: BrowseService
    lookup: LookupService
    edit: EditService
    lifecycle: Lifecycle
    superseder: Superseder
    ingest: IngestService
    maintenance: MaintenanceService
    search: SearchService


def _options(options: FacadeOptions) -> dict[str, Any]:
    """``options`` over DEFAULTS; TypeError for an unknown one, as for a keyword."""
    unknown = set(options) - set(DEFAULTS)
    if unknown:
        raise TypeError(f"MemoryManager() got unexpected keyword argument(s) {sorted(unknown)}")
    return {**DEFAULTS, **options}


def build_facade(stores: Stores, options: FacadeOptions) -> FacadeParts:
    """The facade's parts and services from ``stores`` and its options (module doc)."""
    o = _options(options)
    clock, llm = o["clock"], o["llm"]
    extractor = o["extractor"] or default_extractor(max_chars=stores.limits.analysis_chars)
    working = o["working"] or WorkingMemory(clock=clock, limits=stores.limits)
    default_namespace = require_namespace(o["default_namespace"])
    default_type = validate_memory_type(o["default_type"])
    on_duplicate = duplicate_mode(o["on_duplicate"])
    namespace = partial(resolve_namespace, default_namespace)
    # Perceptual memory (images, audio) when the stores were opened with it.
    perceptual: PerceptualMemory | None = stores.indexer(  # type: ignore[assignment]
        MemoryType.PERCEPTUAL)
    episodic = EpisodicMemory(stores, profile=o["episodic_profile"], clock=clock)
    semantic = SemanticMemory(stores, extractor, max_hops=o["max_hops"], clock=clock)
    lookup = LookupService(stores, working)  # ids, short handles, get
    # Forget / restore / consolidate with the lifecycle defaults (ARCHITECTURE decision 9).
    lifecycle = Lifecycle(stores, working, defaults=o["lifecycle"],
                          dedup_threshold=o["dedup_threshold"], clock=clock,
                          namespace=namespace)
    # Facts that update (memory.supersede, memory/supersede.py).
    superseder = Superseder(stores, llm, mode=o["supersede"],
                            candidates=o["supersede_candidates"])
    ingest = IngestService(
        stores, working, superseder=superseder, namespace=namespace,
        default_type=default_type, dedup_threshold=o["dedup_threshold"],
        on_duplicate=on_duplicate,
        event_time_from_text=o["event_time_from_text"], clock=clock, llm=llm,
        extract_facts=o["extract_facts"])
    search = SearchService(SearchParts(
        stores, working=working, episodic=episodic, semantic=semantic, perceptual=perceptual,
        extractor=extractor, llm=llm, clock=clock),
        settings=o["retrieval"])
    uploads = o["uploads_dir"]
    return FacadeParts(
        working=working, extractor=extractor, links=GraphLinks(extractor), episodic=episodic,
        semantic=semantic, perceptual=perceptual, llm=llm, clock=clock,
        default_namespace=default_namespace, default_type=default_type,
        uploads_dir=Path(uploads) if uploads is not None else None,
        dedup_threshold=o["dedup_threshold"], on_duplicate=on_duplicate,
        event_time_from_text=o["event_time_from_text"], extract_facts=o["extract_facts"],
        times_from_text=o["times_from_text"], browse=BrowseService(stores), lookup=lookup,
        edit=EditService(stores, working, lookup), lifecycle=lifecycle, superseder=superseder,
        ingest=ingest, maintenance=MaintenanceService(stores, working, ingest), search=search)


def resume_stores(stores: Stores, links: GraphLinks, times_from_text: bool) -> int:
    """Bring stores the facade was built on in line before its first write (module doc):
    its graph links installed where the stores were opened without any, whether writes
    store the times the text mentions (issue 15, ``memory.times_from_text``), then the
    "memory" rows ``Stores.open`` left for the links replayed with them in place
    (``Stores.replay_deferred``; none when the stores were opened with links). Returns
    how many rows were applied."""
    if stores.extractor is None:
        stores.install_extractor(links)
    stores.records.mention_times = times_from_text
    return stores.replay_deferred()


class Resumable(Protocol):
    """A facade whose stores are brought in line before its first write."""

    resumed: bool

    def resume(self) -> int: ...


_C = TypeVar("_C", bound=type)


def _resuming(method: Callable[..., Any]) -> Callable[..., Any]:
    @wraps(method)
    def write(self: Resumable, *args: Any, **kwargs: Any) -> Any:
        if not self.resumed:
            self.resume()
        return method(self, *args, **kwargs)

    return write


def resumes_first(*names: str) -> Callable[[_C], _C]:
    """Class decorator of the facade: the methods (and properties handing out a writing
    part) ``names`` write, so the first one called resumes the facade (``resume``,
    :func:`resume_stores`) unless it has resumed already."""

    def decorate(cls: _C) -> _C:
        for name in names:
            member = cls.__dict__[name]  # KeyError: a name the class does not define
            if isinstance(member, property) and member.fget is not None:
                setattr(cls, name, property(_resuming(member.fget), doc=member.__doc__))
            else:
                setattr(cls, name, _resuming(member))
        return cls

    return decorate


def close_facade(search: SearchService, stores: Stores, llm: object) -> None:
    """What ``MemoryManager.close`` closes: the search's pool, the stores, the LLM client."""
    search.close()
    stores.close()
    close_llm = getattr(llm, "close", None)
    if callable(close_llm):
        close_llm()
