"""Search recipes: named, frozen ways to run the one search engine (docs/RETRIEVAL.md).

Every interface (Python, REST, MCP, the CLI, ``MemoryTool``, the progressive loader,
task-aware retrieval) runs :meth:`MemoryManager.search`, which runs the ``hybrid``
recipe unless told otherwise. The other recipes exist for ablations and comparisons:
the same call, the same filters and the same hit type, with fewer views, no
neighbour context, or the old per-type dense ranking.

>>> from hello_memory.retrieval.recipes import RECIPES                 # doctest: +SKIP
>>> mm.search("when did Anna move?", recipe="dense-only", namespace="anna")

Presets are frozen; derive a variant with ``HYBRID.model_copy(update={...})``.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from hello_memory.errors import InvalidInputError

__all__ = ["DEFAULT_RECIPE", "HYBRID", "PER_TYPE", "RECIPES", "SearchRecipe", "recipe_named",
           "recipe_names", "register_recipe", "unregister_recipe"]


class SearchRecipe(BaseModel):
    """How one search runs.

    Attributes:
        name: the recipe's name (REST/MCP/CLI ``recipe``).
        engine: ``hybrid`` (plan, views, fusion, neighbour context, profiles) or
            ``per_type`` (each memory type's own dense ranking, merged by final score:
            the search every interface used before the hybrid engine).
        views: the hybrid views to run (names of retrieval/registry.py); None runs
            every registered view.
        neighbor_weight: neighbour-context share; None takes ``retrieval.neighbor_weight``.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str = Field(min_length=1)
    engine: Literal["hybrid", "per_type"] = "hybrid"
    views: tuple[str, ...] | None = None
    neighbor_weight: float | None = Field(default=None, ge=0, le=1)
    description: str = ""


HYBRID = SearchRecipe(name="hybrid", description="every view, fusion, neighbour context "
                      "and the scoring profiles (the default)")
PER_TYPE = SearchRecipe(name="per-type", engine="per_type",
                        description="each memory type's own dense ranking, merged by "
                        "final score (ablation)")
_ABLATIONS = (
    SearchRecipe(name="bm25-only", views=("lexical",), neighbor_weight=0.0,
                 description="the lexical view alone"),
    SearchRecipe(name="dense-only", views=("semantic",), neighbor_weight=0.0,
                 description="the semantic view alone"),
    SearchRecipe(name="fused", views=("semantic", "lexical"), neighbor_weight=0.0,
                 description="semantic + lexical, fused"),
    SearchRecipe(name="fused+symbolic", views=("semantic", "lexical", "symbolic"),
                 neighbor_weight=0.0, description="+ persons, entities, time ranges"),
    SearchRecipe(name="fused+graph", views=("semantic", "lexical", "graph"),
                 neighbor_weight=0.0, description="+ the entity graph"),
    SearchRecipe(name="fused+context", views=("semantic", "lexical"),
                 description="semantic + lexical with neighbour context"),
)
RECIPES: dict[str, SearchRecipe] = {r.name: r for r in (HYBRID, PER_TYPE, *_ABLATIONS)}
DEFAULT_RECIPE = HYBRID.name


_BUILT_IN_RECIPES = frozenset(RECIPES)


def register_recipe(recipe: SearchRecipe, *, replace: bool = False) -> SearchRecipe:
    """Add a named recipe: every interface takes its name (``recipe``) and the REST and
    MCP schemas list it (interfaces/catalogue/memories.py). Its views must be registered
    (retrieval/registry.py); a name already taken is refused unless ``replace`` (never
    for a built-in recipe)."""
    from hello_memory.retrieval.registry import view_names

    unknown = set(recipe.views or ()) - set(view_names())
    if unknown:
        raise InvalidInputError(f"recipe {recipe.name!r} names unregistered view(s) "
                                f"{sorted(unknown)}")
    if recipe.name in _BUILT_IN_RECIPES or (recipe.name in RECIPES and not replace):
        raise InvalidInputError(f"a recipe named {recipe.name!r} already exists")
    RECIPES[recipe.name] = recipe
    return recipe


def unregister_recipe(name: str) -> None:
    """Remove a recipe :func:`register_recipe` added."""
    if name in _BUILT_IN_RECIPES or name not in RECIPES:
        raise InvalidInputError(f"no added recipe named {name!r}")
    del RECIPES[name]


def recipe_names() -> tuple[str, ...]:
    """Every recipe's name, the built-in ones first."""
    return tuple(RECIPES)


def recipe_named(recipe: str | SearchRecipe | None) -> SearchRecipe:
    """The recipe object for a name (None: the default); a typed error names the
    recipes that exist."""
    if recipe is None:
        return HYBRID
    if isinstance(recipe, SearchRecipe):
        return recipe
    found = RECIPES.get(recipe) if isinstance(recipe, str) else None
    if found is None:
        raise InvalidInputError(f"unknown search recipe {recipe!r}; use one of "
                                f"{', '.join(RECIPES)}")
    return found
