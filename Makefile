# The two commands a newcomer needs:
#   make demo   set up, fetch the default model, run a real edit and show program, diff and stats
#   make test   set up, fetch the models the tests use, run the whole test suite
# Both are idempotent: the virtual environment is rebuilt only when pyproject.toml changes, models
# are assembled once and verified by sha256, and pip caches the llama-cpp-python wheel it builds.

PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: demo test setup models

setup: $(STAMP)

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[test]'
	touch $(STAMP)

models: setup
	$(BIN)/copyedit model fetch qwen2.5-coder-0.5b smollm2-135m

demo: setup
	$(BIN)/copyedit model fetch qwen2.5-coder-0.5b
	$(BIN)/copyedit apply examples/stats.py --instruction "Fix the bug in mean: it must return the plain average."

test: models
	$(BIN)/python -m pytest -q -p no:cacheprovider
