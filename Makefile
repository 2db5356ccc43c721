# Two entry points: `make run` (the default study) and `make test` (the suite; `make test-fast`
# runs its unit tier only: no end-to-end workflow and no Slurm tests).
# Both create .venv on first use. TORCH pins the torch build installed first; the
# default 2.13.0 matches a local CPU wheel here; set TORCH=torch for the newest release.
PYTHON ?= python3
VENV ?= .venv
TORCH ?= torch==2.13.0
CORES ?= all
BIN := $(VENV)/bin

.PHONY: env run test test-fast test-slurm lint

env: $(VENV)/.installed

$(VENV)/.installed: pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet "$(TORCH)"
	$(BIN)/python -m pip install --quiet -e ".[test]"
	$(BIN)/python -m statelayers.models.kernels  # compile the CPU kernels into numba's cache once
	touch $@

run: env
	$(BIN)/snakemake --cores $(CORES) --resources gpu=1

# pytest's addopts (pyproject.toml) run two workers, each test file whole on one of them (so
# module fixtures, such as the finished tiny study of test_workflow.py, are built once), the
# end-to-end workflow files first (tests/conftest.py).
test: env
	$(BIN)/python -m pytest -q

test-fast: env
	$(BIN)/python -m pytest -q -m "not workflow and not slurm"

# README.md's verdict table and docs/results.md (every table) from the last complete run
# in this directory and the committed benchmarks/ tables.
readme-results: env
	$(BIN)/python tools/readme_results.py README.md

# The workflow through profiles/slurm on a real single-node Slurm (root; installs
# Debian's slurm packages if missing; several minutes). See docs/slurm.md.
test-slurm: env
	$(BIN)/python -m pip install --quiet -e ".[slurm]"
	STATELAYERS_SLURM=1 $(BIN)/python -m pytest -m slurm -q

lint: env
	$(BIN)/snakemake --lint
	$(BIN)/snakefmt --check Snakefile workflow/rules
