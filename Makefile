# make demo  — run the gateway in front of the scripted upstream and show a session
# make test  — every check: format, lint, types, unit, contract and end-to-end tests
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed
CLIENTS_DIR := .cache/clients
CLIENTS_STAMP := $(CLIENTS_DIR)/.installed
CLIENT_PACKAGES := @openai/codex@0.171.0 opencode-ai@1.18.33 @anthropic-ai/claude-code@2.1.197

.PHONY: demo test venv clients lint typecheck unit bench clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

venv: $(STAMP)

$(CLIENTS_STAMP):
	@mkdir -p $(CLIENTS_DIR)
	@if command -v npm >/dev/null 2>&1; then \
	  npm install --silent --no-audit --no-fund --prefix $(CLIENTS_DIR) $(CLIENT_PACKAGES) \
	    && touch $(CLIENTS_STAMP) \
	    || echo "clients: npm install failed; end-to-end CLI tests will be skipped"; \
	else echo "clients: npm not found; end-to-end CLI tests will be skipped"; fi

clients: $(CLIENTS_STAMP)

lint: venv
	$(VENV)/bin/ruff format --check src tests
	$(VENV)/bin/ruff check src tests

typecheck: venv
	$(VENV)/bin/mypy

unit: venv
	$(VENV)/bin/pytest -q -n 2

test: venv clients lint typecheck unit

demo: venv
	$(PY) -m skillstate.testing.demo

bench: venv
	$(PY) -m skillstate.bench.overhead

clean:
	rm -rf $(VENV) .cache .pytest_cache .mypy_cache .ruff_cache .hypothesis
