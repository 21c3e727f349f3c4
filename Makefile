# Two commands for a fresh machine with Python 3.11+ and make:
#   make demo   creates .venv, installs the project, audits sample_carnets/ into reports/
#   make test   installs the test extras if needed and runs the whole suite (what CI runs)
#   make test-fast   the edit loop: leaves out the slow, browser and subprocess tests
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP      := $(VENV)/.installed
TEST_STAMP := $(VENV)/.installed-test
PIP := $(BIN)/python -m pip --disable-pip-version-check --quiet

.PHONY: demo test test-fast samples gold bench clean serve

$(STAMP): pyproject.toml
	@$(PYTHON) -c 'import sys; sys.exit(sys.version_info < (3, 11))' || { echo "Python 3.11 or newer is required ($(PYTHON))"; exit 1; }
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(PIP) install -e .
	@touch $@

$(TEST_STAMP): $(STAMP)
	$(PIP) install -e '.[test]'
	@touch $@

# The whole sample set, then one casino's archive on its own: a carnet that
# cannot be placed in its table (the damaged and coverless samples) stops the
# rules across a table's carnets for its whole batch (rules.md v1.2).
demo: $(STAMP)
	$(BIN)/ecarte-audit audit sample_carnets --out reports --format html,json,xlsx --fail-on never
	$(BIN)/ecarte-audit audit sample_carnets/archives --out reports/archives --format html,json,xlsx --fail-on never

# The local page for inspectors (prints its address and opens the browser).
serve: $(STAMP)
	$(BIN)/ecarte-audit serve

# The project's bytecode, compiled before the tests and the benchmarks, as an
# installed wheel's is (pip compiles it; an editable install under
# PYTHONDONTWRITEBYTECODE never does): the suite and the benchmarks start
# hundreds of processes, each of which would compile the auditor's modules
# again (some 0.6 s of CPU each).
COMPILE := $(BIN)/python -m compileall -q auditor schemas

test: $(TEST_STAMP)
	$(COMPILE)
	$(BIN)/python -m pytest

# About 90 s on 2 cores: every test but those marked slow (> ~2 s), browser or
# subprocess (markers registered in pyproject.toml).
test-fast: $(TEST_STAMP)
	$(COMPILE)
	$(BIN)/python -m pytest -m "not slow and not browser and not subprocess"

BENCH_STAMP := $(VENV)/.installed-bench
$(BENCH_STAMP): $(STAMP)
	$(PIP) install -e '.[bench]'
	@touch $@

# The speed benchmarks, side by side (figures to bench/RESULTS.md); not timed tests.
bench: $(BENCH_STAMP)
	$(COMPILE)
	$(BIN)/python bench/bench_audit.py
	$(BIN)/python bench/bench_nightly.py
	$(BIN)/python bench/bench_batch_memory.py
	$(BIN)/python bench/bench_archive.py

# Regenerate the sample carnets (deterministic) from scripts/make_samples.py.
samples: $(STAMP)
	$(BIN)/python scripts/make_samples.py

# Regenerate tests/gold/ (the sample carnets' outputs) on purpose; read the diff.
gold: $(STAMP)
	$(BIN)/python scripts/make_gold.py

clean:
	rm -rf $(VENV) build *.egg-info reports/*/ reports/*.html reports/*.json

# Fuzz the reader with hypothesis-generated hostile carnets (FUZZ_INPUTS inputs,
# default 100000; every 1000th goes through the whole audit); prints the count.
.PHONY: fuzz
FUZZ_INPUTS ?= 100000
fuzz: $(TEST_STAMP)
	$(BIN)/python fuzz/fuzz_reader.py --inputs $(FUZZ_INPUTS)
