# Two commands do all the set-up on a fresh machine with Python 3.11 (see README):
#   make serve   build the knowledge base and serve it with Datasette on http://127.0.0.1:8001/
#   make test    run the tests (installs Debian's chromium for the browser tests where missing)
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin

.PHONY: serve test validate clean

$(BIN)/kb: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[test,pdf,bench]'
	touch $(BIN)/kb

serve: $(BIN)/kb
	$(BIN)/kb serve $(if $(PORT),--port $(PORT))

validate: $(BIN)/kb
	$(BIN)/kb validate

test: $(BIN)/kb
	bash scripts/ensure-debian chromium
	$(BIN)/python -m pytest $(PYTEST_ARGS)

clean:
	rm -rf $(VENV) site/kb.db *.egg-info
