# The README's two commands: `make demo` and `make test`. Both set up .venv on a fresh machine.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed-stamp

.PHONY: demo test lint typecheck pytest bench clean generate

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

demo: $(STAMP)
	$(BIN)/m3mon demo

test: $(STAMP) lint typecheck pytest

lint: $(STAMP)
	$(BIN)/ruff check monitor tests bench
	$(BIN)/ruff format --check monitor tests bench

typecheck: $(STAMP)
	$(BIN)/mypy monitor

pytest: $(STAMP)
	$(BIN)/python -m pytest -W error $(PYTEST_ARGS)

generate: $(STAMP)
	$(BIN)/m3mon generate -c examples/monitor.yaml -o .

bench: $(STAMP)
	for b in bench/*.py; do $(BIN)/python $$b || exit 1; done

clean:
	rm -rf $(VENV) .mypy_cache .ruff_cache build *.egg-info
