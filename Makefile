# serQ — the two commands a fresh machine needs: `make demo` and `make test`.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-$(shell cat pyproject.toml tools/clone_path.py | cksum | cut -d' ' -f1)

.PHONY: install demo test check golden bench bench-instructions bench-sweep bench-prefix bench-drt oracle-ir vllm-env vllm-env-0.19 sglang-env sglang-oracle lean clean metrics fuzz

$(STAMP): pyproject.toml tools/clone_path.py
	@test -x $(BIN)/python || $(PY) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e ".[test]"
	$(BIN)/python tools/clone_path.py
	@rm -f $(VENV)/.installed-*
	@touch $(STAMP)

install: $(STAMP)

# The main job: a simulation of the vLLM multi-turn program.
demo: install
	$(BIN)/serq check examples/multi-turn/vllm.sq
	$(BIN)/serq run examples/multi-turn/vllm.sq --horizon 300 --warmup 30

test: install
	$(BIN)/python -m pytest -q
	$(MAKE) --no-print-directory check

# Every example links; every committed generated file (golden IR, oracle IR, the
# example trace serq mooncake-trace makes, …) is current.
check: install
	$(BIN)/python tools/check.py
	$(BIN)/python tools/gen_parser.py --check
	$(BIN)/python tools/draw_check.py
	$(BIN)/python tools/gen_textmate.py --check
	$(BIN)/python -m leangen oracle --check
	$(BIN)/python -m leangen claims --check
	$(BIN)/python tools/figures/mooncake_kv.py --check
	$(BIN)/python tools/check_citations.py $(if $(CI),--fetch,)
	$(BIN)/python tools/metrics.py --check

# Rewrite the golden files under tests/golden/ (review the diff before committing).
golden: install
	$(BIN)/python tools/check.py --write-golden
	$(BIN)/python tools/gen_parser.py
	$(BIN)/python tools/draw_check.py --write
	$(BIN)/python tools/gen_textmate.py
	$(BIN)/python -m leangen claims

# The language's size (tools/metrics.json): IR variants, keywords, functions,
# context variables, lines three programs repeat; `make check` fails when stale.
metrics: install
	$(BIN)/python tools/metrics.py

# The benchmark's comparisons need the `bench` extra (the Rust serQ, SimPy).
BENCH_STAMP := $(VENV)/.bench-$(shell cksum pyproject.toml | cut -d' ' -f1)

$(BENCH_STAMP): $(STAMP)
	$(BIN)/python -m pip install -q -e ".[test,bench]"
	@rm -f $(VENV)/.bench-*
	@touch $(BENCH_STAMP)

# Every figure of issues 14 and 22 with its ratio measured in one run; QUICK=1
# for the short version (bench/bench.py --quick), PROFILE=1 for where each run's time goes.
bench: install $(BENCH_STAMP)
	$(BIN)/python bench/bench.py $(if $(QUICK),--quick,) $(if $(PROFILE),--profile,)

# The instructions one run of (a), (b), (c) and (h) executes (valgrind's
# cachegrind: a figure the machine's load does not move); BASE=DIR beside the
# serq of another tree, QUICK=1 for short runs.
bench-instructions: install
	$(BIN)/python bench/instructions.py $(if $(BASE),--base $(BASE),) $(if $(QUICK),--quick,)

# A 3 x 2 x 5 sweep of the vLLM program with --jobs 1, --jobs 2 and --dask local.
bench-sweep: install
	$(BIN)/python bench/sweep_bench.py

# The content-addressed cache: 1 500 Mooncake requests by serQ and by vLLM's
# scheduler (needs .venv-vllm; `--no-vllm` without), admission cost vs cache size.
bench-prefix: install
	$(BIN)/python bench/prefix_bench.py $(if $(wildcard .venv-vllm/bin/python),,--no-vllm)

# serQ's side of an oracle DRT batch (500 random vLLM scenarios, 300 P/D):
# one link per shape against one per scenario, and vLLM's side when
# .venv-vllm is built.
bench-drt: install
	$(BIN)/python bench/drt_bench.py

# The oracle programs' IR, one file per named scenario and per trace (read by
# the tests and the Lean generator); `make check` fails when one is stale.
oracle-ir: install
	$(BIN)/python tools/check.py --write-oracle-ir
	$(BIN)/python -m leangen oracle

# The Lean package: generated files current, `lake build`, no sorry, the axiom
# audit.  Needs a Lean toolchain (lake on PATH); fails clearly without one.
lean: install
	tools/lean.sh

# vLLM 0.33.0 in its own venv (.venv-vllm), for `serq oracle diff/fuzz` and
# regenerating the committed outputs; CI does not need it.
vllm-env:
	tools/oracle/install_vllm_env.sh

# vLLM 0.19.0, the version LLMServingSim's measured runs used, in .venv-vllm-0.19
# (docs/calibration.md: whether its scheduler decides as 0.33.0's does).
vllm-env-0.19:
	VLLM_VERSION=0.19.0 tools/oracle/install_vllm_env.sh

# SGLang 0.5.23 in its own venv (.venv-sglang), for `serq oracle sglang --diff`,
# `serq oracle sglang-fuzz` and regenerating tools/oracle/sglang/'s outputs;
# CI does not need it.
sglang-env:
	tools/oracle/install_sglang_env.sh

# Regenerate the committed SGLang outputs (tools/oracle/sglang/: the named
# scenarios and their logs, 300 random ones); CHECK=1 compares byte for byte.
sglang-oracle: sglang-env
	$(PY) tools/oracle/sglang/regen.py $(if $(CHECK),--check,)

clean:
	rm -rf $(VENV) .pytest_cache .hypothesis build *.egg-info

# The fuzzers beyond CI's bounded run (tests/fuzz/): N mutants of each kind
# (source, numeric, IR; the surfaces: the IR retyped, traces, oracle inputs,
# tables, the Python API, the command line, the parser held to lark) and
# SIGNAL_N signals sent to sweeps and runs (tests/fuzz/interrupts.py, about a
# second each), from seed SEED, at low priority; a finding is written to
# tests/fuzz/found/ with the command that reproduces it (exit 1).
N ?= 10000
SIGNAL_N ?= 1000
SEED ?= 1
fuzz: install
	nice -n 10 $(BIN)/python -m tests.fuzz run --kind all --n $(N) --seed $(SEED)
	nice -n 10 $(BIN)/python -m tests.fuzz run --kind signals --n $(SIGNAL_N) --seed $(SEED)
