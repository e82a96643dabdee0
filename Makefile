# polars-sdca: every target sets up what it needs (venv, dependencies, release build).
SHELL := /bin/bash
.DEFAULT_GOAL := help

PYTHON ?= python3
# The build cache and the venv live outside the clone, so CI (a fresh clone each run) reuses
# the compiled Polars crates (a cold build takes 11-14 minutes on 2 cores): pyo3's build script
# reruns when the interpreter path changes, so one shared venv keeps that cache warm. A machine
# without them still builds everything from nothing.
CACHE ?= $(HOME)/.cache/polars-sdca
VENV ?= $(CACHE)/venv
PY := $(VENV)/bin/python
export CARGO_TARGET_DIR ?= $(CACHE)/target
CORE_TARGET ?= $(CACHE)/target-core
DEPS_STAMP := $(VENV)/.deps-$(shell cksum pyproject.toml | cut -d' ' -f1)
RUST_SRC := $(shell find src crates/sdca-core/src -name '*.rs') Cargo.toml crates/sdca-core/Cargo.toml
# One build stamp per clone: the venv's editable install points at the clone that built last.
BUILD_STAMP := $(VENV)/.build-$(shell pwd | cksum | cut -d' ' -f1)

.PHONY: help venv build test test-rust fuzz-build fuzz-smoke fuzz-long typecheck test-python test-compat test-fast lint fmt demo bench bench-quick docs clean

help: ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-12s %s\n", $$1, $$2}'

$(DEPS_STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip 'tomli>=2; python_version < "3.11"'
	$(PY) -m pip install --quiet $$($(PY) scripts/deps.py build test dev bench ray)
	rm -f $(VENV)/.deps-* && touch $@

venv: $(DEPS_STAMP) ## create the venv and install the build, test, benchmark and Ray dependencies

$(BUILD_STAMP): $(DEPS_STAMP) $(RUST_SRC) pyproject.toml
	VIRTUAL_ENV=$(abspath $(VENV)) PATH=$(abspath $(VENV))/bin:$$PATH $(VENV)/bin/maturin develop --release --quiet
	rm -f $(VENV)/.build-* && touch $@

build: $(BUILD_STAMP) ## build the plugin (release) into the venv

test-rust: ## cargo tests of the solver core (no Polars: seconds)
	CARGO_TARGET_DIR=$(CORE_TARGET) cargo test -p sdca-core --quiet

test-python: build ## pytest: behaviour, references, errors, doctests (all markers)
	$(PY) -m pytest -q

# The compatibility job: the same extension and sources against the lowest Polars the package
# declares (pyproject), in a second venv; the newest is the main venv's.
COMPAT_VENV ?= $(CACHE)/venv-lowest
COMPAT_STAMP := $(COMPAT_VENV)/.deps-$(shell cksum pyproject.toml | cut -d' ' -f1)

$(COMPAT_STAMP): pyproject.toml $(DEPS_STAMP)
	test -x $(COMPAT_VENV)/bin/python || $(PYTHON) -m venv $(COMPAT_VENV)
	$(COMPAT_VENV)/bin/python -m pip install --quiet $$($(PY) scripts/deps.py lowest test)
	rm -f $(COMPAT_VENV)/.deps-* && touch $@

test-compat: build $(COMPAT_STAMP) ## pytest (fast set) against the lowest declared Polars
	PYTHONPATH=python $(COMPAT_VENV)/bin/python -c "import polars; print('polars', polars.__version__)"
	PYTHONPATH=python $(COMPAT_VENV)/bin/python -m pytest -q -m "not slow" -p no:cacheprovider

# Fuzzing (fuzz/, README "Fuzzing"): libFuzzer through libfuzzer-sys, built the way cargo-fuzz
# builds with `--sanitizer none` (SanitizerCoverage flags, `--cfg fuzzing`, debug assertions and
# overflow checks), which the stable toolchain accepts; `--target` keeps the flags off build
# scripts. The smoke run in `make test` is deterministic (fixed seed and execution count, from
# the committed seeds only: past findings), so CI cannot turn red by chance: it runs without
# comparison tracing (`-use_cmp=0`), because the values compared include pointers and hash
# seeds, which change from run to run and, fed back as coverage, sent two runs of the same
# binary with `-seed=1` down different inputs (a CI run failed on an input the same smoke had
# never reached here). A campaign (`fuzz-long`) keeps the tracing, runs on the clock and grows
# a corpus outside the clone.
FUZZ_TARGET_DIR ?= $(CACHE)/target-fuzz
FUZZ_CORPUS ?= $(CACHE)/fuzz-corpus
FUZZ_TARGETS := csr fit crf memory
FUZZ_RUNS ?= 300000
FUZZ_BIN := $(FUZZ_TARGET_DIR)/x86_64-unknown-linux-gnu/release
FUZZ_RUSTFLAGS := -Cpasses=sancov-module -Cllvm-args=-sanitizer-coverage-level=4 \
	-Cllvm-args=-sanitizer-coverage-inline-8bit-counters -Cllvm-args=-sanitizer-coverage-pc-table \
	-Cllvm-args=-sanitizer-coverage-trace-compares --cfg fuzzing -Cdebug-assertions -Coverflow-checks

fuzz-build:
	cd fuzz && RUSTFLAGS="$(FUZZ_RUSTFLAGS)" CARGO_TARGET_DIR=$(FUZZ_TARGET_DIR) \
		cargo build --release --bins --quiet --target x86_64-unknown-linux-gnu

# $(1): libFuzzer flags; $(2): the corpus directory new inputs go to (libFuzzer writes into the
# first directory it is given, so the committed seeds come second and stay untouched).
# Crash artifacts go to $(FUZZ_CORPUS), made here: a fresh machine has no campaign folder.
define fuzz_each
	mkdir -p $(FUZZ_CORPUS)
	for t in $(FUZZ_TARGETS); do \
		corpus=$(2) && mkdir -p $$corpus fuzz/seeds/$$t && \
		$(FUZZ_BIN)/$$t $(1) -rss_limit_mb=2048 -timeout=10 -print_final_stats=1 \
			-artifact_prefix=$(FUZZ_CORPUS)/$$t- $$corpus fuzz/seeds/$$t 2>&1 \
			| grep -E "^(stat::number_of_executed_units|Done)|panicked|ERROR|SUMMARY|Test unit written" ; \
		test $${PIPESTATUS[0]} -eq 0 || exit 1; \
	done
endef

fuzz-smoke: fuzz-build ## every fuzz target for FUZZ_RUNS executions, reproducible (in make test)
	$(call fuzz_each,-runs=$(FUZZ_RUNS) -seed=1 -use_cmp=0,$$(mktemp -d))

fuzz-long: fuzz-build ## a fuzzing campaign: FUZZ_SECONDS per target (default 3600), growing corpus
	$(call fuzz_each,-max_total_time=$(or $(FUZZ_SECONDS),3600),$(FUZZ_CORPUS)/$$t)

typecheck: venv ## mypy (strict) and ruff on the Python package, tests and scripts
	$(PY) -m mypy
	$(VENV)/bin/ruff check python tests benchmarks examples scripts

test: test-rust fuzz-smoke typecheck test-python test-compat ## everything CI runs

test-fast: build ## pytest without the slow real-data tests
	$(PY) -m pytest -q -m "not slow"

lint: venv ## rustfmt, clippy, ruff, mypy
	cargo fmt --all -- --check
	cargo clippy --all-targets -- -D warnings
	$(VENV)/bin/ruff check python tests benchmarks examples scripts
	$(VENV)/bin/ruff format --check python tests benchmarks examples scripts
	$(PY) -m mypy

fmt: venv ## format Rust and Python
	cargo fmt --all
	$(VENV)/bin/ruff format python tests benchmarks examples scripts

demo: build ## per-group fits and a CRF named-entity tagger on real data, with summaries
	$(PY) examples/demo.py
	$(PY) examples/ner.py --subset 2000

bench: build ## benchmarks against peers; writes benchmarks/results.md and PNG plots
	$(PY) benchmarks/run.py

bench-quick: build ## the benchmarks on subsamples (50,000 rows, 2,000 groups, 3 repeats)
	$(PY) benchmarks/run.py --quick

# The site's own tools go into the same venv: its examples run against the plugin built there.
DOCS_STAMP := $(VENV)/.docs-$(shell cksum pyproject.toml | cut -d' ' -f1)

$(DOCS_STAMP): $(DEPS_STAMP)
	$(PY) -m pip install --quiet $$($(PY) scripts/deps.py docs)
	rm -f $(VENV)/.docs-* && touch $@

docs: build $(DOCS_STAMP) ## the documentation site into site/ (offline, --strict; runs its examples)
	NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs build --strict

clean: ## remove the shared venv (the build cache in $(CARGO_TARGET_DIR) stays)
	rm -rf $(VENV)
