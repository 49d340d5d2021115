# Store inventory pipeline. `make` alone lists the targets.
SHELL := /bin/bash
# Python writes each module's .pyc the first time a process imports it, even where the
# environment says not to (PYTHONDONTWRITEBYTECODE): without them every process (each CLI run,
# Ray worker, test server) compiles all it imports again, over 2 s of CPU for one that imports
# Ray. Written as imported, not at install: the suite imports a quarter of the packages' modules,
# and compiling them all at install took 10 to 13 s of `make setup`'s 21.
unexport PYTHONDONTWRITEBYTECODE
.DEFAULT_GOAL := help

PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
INPUT ?= data
OUTPUT ?= data/out
CONFIG ?=

.PHONY: help setup system-deps build test suite bench golden lint clean

help: ## List the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  make %-8s %s\n", $$1, $$2}'

system-deps: ## Debian packages the tests need (nginx, chromium), installed when missing
	@missing=""; \
	PATH="$$PATH:/usr/sbin" command -v nginx >/dev/null || missing="$$missing nginx"; \
	command -v chromium >/dev/null || missing="$$missing chromium"; \
	if [ -n "$$missing" ]; then \
	  SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	  $$SUDO apt-get update -qq && \
	  DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq --no-install-recommends $$missing; \
	fi

# uv installs the pinned packages in a third of pip's time (21 s against 64, both compiling
# every module); pip installs only uv itself.
UV_VERSION := 0.13.9
UV_INSTALL := $(BIN)/uv pip install --quiet
$(BIN)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet uv==$(UV_VERSION)
	$(UV_INSTALL) --python $(BIN)/python -e '.[dev,ray,shell]'
	touch $@

# The oldest DuckDB the warehouse promises to open (storage_compatibility_version v1.2.0):
# the tests open the built file with it.
.venv-duckdb1/.installed: | $(BIN)/.installed
	$(BIN)/uv venv --quiet --allow-existing --python $(PYTHON) .venv-duckdb1
	$(UV_INSTALL) --python .venv-duckdb1/bin/python duckdb==1.2.2
	touch $@

setup: $(BIN)/.installed .venv-duckdb1/.installed ## Create .venv and install the pinned dependencies

build: setup ## Build INPUT (default: the shipped sample in data/) into OUTPUT (default: data/out/)
	$(BIN)/pipeline build --input $(INPUT) --output $(OUTPUT) $(if $(CONFIG),--config $(CONFIG))

# The tests write about 2.4 GB of small warehouses, sites and releases: in memory (/dev/shm)
# where the machine has it, a fifth faster than on a disk that creates files slowly. There a
# passing test's folder is removed as it ends, so that little of it stays in memory.
TEST_TMPDIR := $(shell [ -d /dev/shm ] && [ -w /dev/shm ] && echo /dev/shm)
TEST_ENV := $(if $(TEST_TMPDIR),TMPDIR=$(TEST_TMPDIR))
TEST_OPTIONS := $(if $(TEST_TMPDIR),-o tmp_path_retention_policy=failed)

# Lint beside the suite, not before it: mypy's 9 s on one core would hold the suite up. Beside
# it, ruff and mypy use the cores' time its workers leave while they collect the tests (a third
# of the first ten seconds). Each line of their output is printed whole.
test: setup system-deps ## ruff, mypy and the test suite, side by side
	@$(MAKE) --no-print-directory --jobs=2 --output-sync=line lint suite

suite: setup system-deps ## The test suite alone
	$(TEST_ENV) $(BIN)/pytest -q -n auto --dist worksteal $(TEST_OPTIONS)

bench: setup ## Benchmark: SCALE=quick (1M listings, default), full (10M) or tiny
	$(BIN)/python -m bench --scale $(or $(SCALE),quick)

golden: setup ## Regenerate the golden pages (tests/golden/), the analysts' guide's query results and the reference
	$(BIN)/python -m tests.support.golden
	$(BIN)/python -m pipeline.cli.reference
	$(BIN)/python -m tests.test_docs --update

lint: setup ## ruff and mypy, strict
	$(BIN)/ruff check pipeline bench tests data/make_sample.py
	$(BIN)/ruff format --check pipeline bench tests
	$(BIN)/mypy

clean: ## Remove the environment and build outputs
	rm -rf $(VENV) .venv-duckdb1 $(OUTPUT) .pytest_cache .mypy_cache .ruff_cache
