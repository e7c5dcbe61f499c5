# gcsim: two commands do all the set-up on a fresh machine.
#   make demo   -- reproduce the headline results at a quick scale (results/)
#   make test   -- lint (ruff, mypy), then the whole test suite
#   make lint   -- ruff check (the notebooks too), ruff format --check, mypy
#   make docs   -- the documentation site, strict (site/); make lab -- JupyterLab on notebooks/
#   make fuzz   -- the property-based fuzz suite (tests/fuzz/) at length: 20x the examples of make test
#   make mutation -- mutmut on the analysis core, the score per module (slow; not part of make test)
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed-stamp

.PHONY: demo test lint bench docs lab clean fuzz mutation

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	# torch: the local CPU wheel (an unpinned torch would pull a multi-GB CUDA build)
	$(BIN)/python -m pip install --quiet 'torch==2.13.0'
	$(BIN)/python -m pip install --quiet -e '.[all,test,lint,docs]'
	touch $(STAMP)

demo: $(STAMP)
	$(BIN)/python -m gcsim reproduce

# BLAS threads for the test run (two pytest workers on two cores); `make test BLAS_THREADS=2` checks
# the suite with multi-threaded BLAS (the library limits batched kernels itself, see gcsim/_threads.py)
BLAS_THREADS ?= 1

lint: $(STAMP)
	$(BIN)/ruff check gcsim tests benchmarks scripts examples notebooks
	$(BIN)/ruff format --check gcsim tests benchmarks scripts examples
	$(BIN)/mypy

test: lint
	OPENBLAS_NUM_THREADS=$(BLAS_THREADS) OMP_NUM_THREADS=$(BLAS_THREADS) MKL_NUM_THREADS=$(BLAS_THREADS) $(BIN)/python -m pytest -n 2 --dist loadfile -q tests notebooks --nbmake gcsim --doctest-modules --ignore=gcsim/__main__.py

# the fuzz suite at length: hypothesis profile fuzz-long (tests/fuzz/fuzzing.py), random inputs instead of
# make test's fixed derandomized ones, failures kept in .hypothesis/fuzz and replayed first next time;
# `make fuzz FUZZ_EXAMPLES=5000` sets the examples per test (default 800)
FUZZ_EXAMPLES ?= 800
fuzz: $(STAMP)
	GCSIM_FUZZ_PROFILE=fuzz-long GCSIM_FUZZ_EXAMPLES=$(FUZZ_EXAMPLES) OPENBLAS_NUM_THREADS=$(BLAS_THREADS) OMP_NUM_THREADS=$(BLAS_THREADS) MKL_NUM_THREADS=$(BLAS_THREADS) $(BIN)/python -m pytest -n 2 --dist loadfile -q tests/fuzz

# mutation testing (scripts/mutation.py, docs/contributing.md): mutmut on bounds, cerar.constructions,
# evaluate, bibd_existence, partial (stragglers), quantize, equal_load, sequential_multiplexed,
# sequential, load_allocation, the collectives' link model, the straggler-aware collective and the
# other collectives' costs and schedules, each with its own test files, nice'd, at most 2 test
# processes; prints number-changing killed / total per module and the message-only mutants apart
# (exit 1 below 85 %); all but constructions, bibd_existence (thousands of mutants), straggler_aware and
# collectives (their named functions, every mutant) by a random sample of 100 (equal_load,
# sequential_multiplexed, sequential, load_allocation: 60) with its 95 % interval.
# `make mutation MUTATION_ARGS="--functions _best_roots,exact_design cerar.constructions"` runs a part
MUTATION_ARGS ?=
mutation: $(STAMP)
	$(BIN)/python -m pip install --quiet -e '.[mutation]'
	$(BIN)/python scripts/mutation.py $(MUTATION_ARGS)

# benchmarks print tables and write benchmarks/results/*.json (ratios against baselines in the same run)
bench: $(STAMP)
	OPENBLAS_NUM_THREADS=1 $(BIN)/python benchmarks/bench_evaluate.py
	OPENBLAS_NUM_THREADS=1 $(BIN)/python benchmarks/bench_cerar.py
	OPENBLAS_NUM_THREADS=1 $(BIN)/python benchmarks/bench_cerar_optimize.py

# the docs site (mkdocs.yml) into site/, strict: a broken link or anchor, or a docstring mkdocstrings
# cannot parse, fails the build (tests/test_docs_site.py runs the same build)
docs: $(STAMP)
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict --site-dir site

# JupyterLab on the tour notebooks, from .venv (the install stamp brings the `notebooks` extra:
# jupyterlab, and ipywidgets for tqdm's notebook progress bars)
# (as root, as in containers, JupyterLab refuses to start without --allow-root)
lab: $(STAMP)
	$(BIN)/jupyter lab --notebook-dir=notebooks $(if $(filter 0,$(shell id -u)),--allow-root,)

clean:
	rm -rf $(VENV) results site .pytest_cache .hypothesis
