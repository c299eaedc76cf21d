# The book's two commands are `make book` and `make test`; both install what they need.
# Stored notebook outputs are produced only by `make execute`, under the settings `make test` uses.

SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := help

PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

# One set of run-time settings for executing and for verifying notebooks.
# ATTNLIB_NUM_THREADS is read by attnlib.reproducible() in each chapter's first cell.
# Progress bars stay on where a reader would see them (nbval ignores them: attnlib/book/progress.py);
# only `make execute` turns them off, so the stored outputs and the HTML carry none.
export ATTNLIB_NUM_THREADS ?= 2
export PYTHONHASHSEED := 0
# Idle OpenMP threads sleep instead of spinning: on a busy 2-core machine spinning threads steal
# the core the other thread needs (a training step measured 6 ms passive, 150-240 ms spinning).
export OMP_WAIT_POLICY ?= PASSIVE
export PYDEVD_DISABLE_FILE_VALIDATION := 1
# Bytecode is written on first import (pip installs with --no-compile). Where the environment sets
# PYTHONDONTWRITEBYTECODE (this machine, many containers) no .pyc would ever be written and every
# kernel, worker and test process would compile all it imports again (`import torch`: 4.8 s of
# CPU against 1.7 s; the unit tests' first half 178 s against 92 s). Empty means unset to Python.
# Compiling the whole venv at installation instead cost 41 s of CPU, most of it for modules
# nothing imports. __pycache__ is ignored by git.
export PYTHONDONTWRITEBYTECODE :=
export JUPYTER_PLATFORM_DIRS := 1
export MPLCONFIGDIR := $(CURDIR)/$(VENV)/mplconfig
export PATH := $(CURDIR)/$(BIN):$(PATH)

NOTEBOOKS := $(sort $(wildcard chapters/*.ipynb))

.PHONY: help install system-packages browser-check book book-en book-zh book-zh-html book-join translations i18n-check execute test lint typecheck unit unit-first-half unit-second-half nbval browser build lab lock clean reproduce bench bench-quick diagrams test-offline

help:
	@echo "make book     build the HTML book, English in _build/html and Chinese in _build/html/zh"
	@echo "              (creates .venv and installs the pinned set on first use)"
	@echo "make translations  refresh the Chinese catalogues (locales/zh_CN) from the English source"
	@echo "make i18n-check PO=locales/zh_CN/LC_MESSAGES/chapters/01_kernel_regression.po"
	@echo "              what one catalogue still lacks (untranslated, fuzzy, changed roles or maths)"
	@echo "make test     ruff, mypy, pytest tests/, nbval over every chapter, the book build with -W,"
	@echo "              and every built page checked in headless Chromium (make browser)"
	@echo "make execute  re-execute every chapter notebook in place (the only way stored outputs are made)"
	@echo "make lab      open the chapters in JupyterLab with attnlib importable"
	@echo "make bench    time attnlib against PyTorch (ratios table, _build/bench.csv)"
	@echo "make bench-quick  every benchmark case once at small sizes (a step of make test)"
	@echo "make diagrams regenerate the architecture diagrams (diagrams/*.svg) from diagrams/src"
	@echo "make reproduce  nbval under 1 thread + ATEN_CPU_CAPABILITY=default and 2 threads + avx2 as on AMD"
	@echo "make test-offline  make test in a network namespace with no network (after installing)"

install: $(STAMP)

$(STAMP): requirements.lock pyproject.toml
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	@# The lock pins every package (pip check passes on it), so pip need not resolve: --no-deps.
	@# --no-compile: Python compiles only the modules it imports, on first import, instead of every
	@# file of every package (measured on the loaded 2-core machine: 48 s of CPU against 97 s).
	$(BIN)/python -m pip install --quiet --quiet --disable-pip-version-check --no-deps --no-compile \
	  -r requirements.lock
	$(BIN)/python -m pip install --quiet --quiet --disable-pip-version-check --no-deps --no-build-isolation -e .
	@# Build matplotlib's font cache now, so no notebook prints "building the font cache".
	$(BIN)/python -c "import matplotlib; matplotlib.use('Agg'); import matplotlib.pyplot"
	@touch $@

# The configuration is _config.yml plus the repository and launch buttons when the book has a
# public repository (BOOK_REPOSITORY_URL, or the git remote origin): tools/book_config.py.
# The HTML is rewritten from scratch each time (the parsed pages are cached in _build/.doctrees):
# an incremental build keeps old sidebars and prev/next links after a chapter joins the TOC.
#
# Two editions from one source (_ext/editions.py): English at _build/html and Chinese (language
# zh_CN, the catalogues in locales/zh_CN/LC_MESSAGES) at _build/html/zh, both with -W. The two
# builds are independent (the Chinese one has its own doctrees in $(ZH_BUILD)) and run side by
# side, one per core; their logs are printed one after the other. `make book-zh` rebuilds only
# the Chinese edition (after a `make book`).
ZH_BUILD := _build/zh_CN
book: $(STAMP)
	$(MAKE) --no-print-directory -j2 --output-sync=target book-en book-zh-html
	$(MAKE) --no-print-directory book-join
	@echo "The book: file://$(CURDIR)/_build/html/index.html, 中文版: file://$(CURDIR)/_build/html/zh/index.html"

# The Chinese edition into the English one's folder (after book-en and book-zh-html).
book-join:
	rm -rf _build/html/zh
	mv $(ZH_BUILD)/_build/html _build/html/zh

book-en: $(STAMP)
	@t0=$$(date +%s); \
	rm -rf _build/html; \
	python tools/book_config.py _build/_config.yml; \
	jupyter-book build . --config _build/_config.yml -W -n --keep-going; \
	echo "make book: the English edition built in $$(( $$(date +%s) - t0 )) s"

book-zh-html: $(STAMP)
	@t0=$$(date +%s); \
	rm -rf $(ZH_BUILD)/_build/html; \
	python tools/book_config.py --language zh_CN _build/_config.zh_CN.yml; \
	jupyter-book build . --config _build/_config.zh_CN.yml --path-output $(ZH_BUILD) -W -n --keep-going; \
	echo "make book: the Chinese edition built in $$(( $$(date +%s) - t0 )) s"

book-zh: book-zh-html
	@test -f _build/html/intro.html || { echo "make book-zh: no English edition in _build/html (make book)" >&2; exit 1; }
	rm -rf _build/html/zh
	mv $(ZH_BUILD)/_build/html _build/html/zh
	@echo "中文版: file://$(CURDIR)/_build/html/zh/index.html"

# The catalogues from the English source: the gettext builder writes one .pot per document
# (_build/i18n/_build/gettext), then sphinx-intl merges them into locales/zh_CN/LC_MESSAGES/*.po:
# new messages empty, changed ones marked fuzzy with their old translation, removed ones kept as
# obsolete (#~) entries. A catalogue whose messages did not change is not rewritten. Every page is
# read again (--all): a cached page would not see a change in _ext/editions.py.
translations: $(STAMP)
	python tools/book_config.py _build/_config.yml
	rm -rf _build/i18n/_build/gettext
	jupyter-book build . --config _build/_config.yml --path-output _build/i18n \
	  --builder custom --custom-builder gettext --all -W -n --keep-going
	sphinx-intl update --pot-dir _build/i18n/_build/gettext --locale-dir locales --language zh_CN
	python tools/i18n_check.py --summary

# One catalogue's state: make i18n-check PO=locales/zh_CN/LC_MESSAGES/chapters/01_kernel_regression.po
PO ?= $(sort $(shell find locales -name '*.po' 2>/dev/null))
i18n-check: $(STAMP)
	python tools/i18n_check.py $(PO)

build: book

execute: $(STAMP)
	ATTNLIB_PROGRESS=0 python tools/execute_notebooks.py $(NOTEBOOKS)

lint: $(STAMP)
	ruff check .

typecheck: $(STAMP)
	mypy

unit: $(STAMP)
	python -m pytest tests/

# `make test` runs the unit tests as two halves side by side, one per core (tools/run_tests.py):
# the files below, which mostly start kernels and fresh processes, and every other file (a new
# test file joins the second half by itself). Together they are exactly `make unit`.
UNIT_FIRST_HALF := tests/test_progress.py tests/test_cpu_paths.py tests/test_figure_check.py \
  tests/test_lab.py tests/test_fonts.py
unit-first-half: $(STAMP)
	python -m pytest $(UNIT_FIRST_HALF)
unit-second-half: $(STAMP)
	python -m pytest tests/ $(addprefix --ignore=,$(UNIT_FIRST_HALF))

# Chapters side by side, one per core (NBVAL_JOBS), each in its own pytest process and kernel
# and on one thread (NBVAL_THREADS): two chapters at two threads each, and chapter 4's worker
# processes with two threads each, ask for more threads than there are cores (chapter 4 alone on
# 2 cores: 269 s at 2 threads, 155 s at 1; the outputs are the same, `make reproduce` checks it).
# A merged table of cells, seconds and figures at the end (tools/nbval_chapters.py).
NBVAL_JOBS ?= $(shell nproc 2>/dev/null || echo 1)
export NBVAL_THREADS ?= 1
nbval: $(STAMP)
	ATTNLIB_NUM_THREADS=$(NBVAL_THREADS) python tools/nbval_chapters.py --jobs $(NBVAL_JOBS) $(NOTEBOOKS)

# Chromium and a CJK font for the browser test: installed with apt-get where missing (as root or
# with passwordless sudo), else one line saying what to install. Checked first by `make test`.
system-packages:
	@bash tools/system_packages.sh

# Every page of the built book in headless Chromium (Debian's chromium):
# MathJax typeset, images loaded, clean console, no other host, TOC and prev/next resolve.
# Whole-page screenshots of the intro and each chapter land in _build/screenshots/ (`make test`
# saves only their first screen: the whole pages cost half the test's CPU). Never skipped here.
browser: system-packages book
	ATTNLIB_FULL_SCREENSHOTS=1 $(MAKE) --no-print-directory browser-check

# The browser test over the book already in _build/html (`make test` has just built it).
browser-check: system-packages $(STAMP)
	ATTNLIB_REQUIRE_BROWSER=1 python -m pytest tests/browser -p no:cacheprovider

# Every step side by side on the cores (tools/run_tests.py): lint, typecheck, the unit tests,
# the book's two editions and the browser test over them, bench-quick and i18n-check (two
# documented commands run quickly, so that neither breaks unseen), and nbval of each chapter as
# `make nbval` runs it. Each step's output is printed when it ends; a table of wall-clock and
# CPU seconds per step at the end. The first failure stops the rest.
test: system-packages $(STAMP)
	python tools/run_tests.py --cores $(NBVAL_JOBS) $(NOTEBOOKS)

# The stored outputs must not depend on the thread count, on the CPU code path PyTorch picks
# (ATEN_CPU_CAPABILITY: default = no vector instructions, as on an older machine; `native` for
# PyTorch's own choice) or on the CPU's vendor. `make test` runs nbval at 1 thread on the
# machine's own code path; this adds the two combinations that find different things: 1 thread
# without vector instructions, and 2 threads with avx2 as an AMD processor runs them
# (THREADS:CAPABILITY:amd sets ATTNLIB_CPU_VENDOR=AuthenticAMD: attnlib.fix_cpu_kernels then asks
# MKL only for what MKL gives an AMD processor, so an Intel machine computes what AMD readers get).
# Chapters side by side, one per core. Prints a table (also _build/reproduce.md); fails if any
# combination fails. The full matrix:
# make reproduce REPRO_COMBOS="1:default 1:avx2 2:default 2:avx2 2:avx2:amd" REPRO_RUNS=2
# REPRO_ARGS=--after-make-test (.ci/run) leaves out a combination that is make test's own run on
# this machine (2 threads + avx2 on an AVX2-only CPU; the vendor included when one is named).
# It also leaves out of a combination at make test's thread count on this machine's vendor the
# chapters that pin their code paths (attnlib.fix_cpu_kernels replaces the capability asked
# for): there they compute exactly make test's own run (chapters 4, 7, 10 and 11 in 1:default).
REPRO_COMBOS ?= 1:default 2:avx2:amd
REPRO_RUNS ?= 1
REPRO_ARGS ?=
reproduce: $(STAMP)
	python tools/reproduce.py --combos $(REPRO_COMBOS) --runs $(REPRO_RUNS) $(REPRO_ARGS) $(NOTEBOOKS)

# `make test` with the network switched off: a new network namespace that has only the loopback
# interface (unshare as an unprivileged user needs user namespaces). Installation comes first,
# outside the namespace; tools/assert_offline.py proves the namespace really has no network.
test-offline: system-packages $(STAMP)
	@command -v unshare >/dev/null && command -v ip >/dev/null \
	  || { echo "test-offline: needs unshare (util-linux) and ip (iproute2)" >&2; exit 1; }
	unshare --net --map-root-user bash -c \
	  'ip link set lo up && python tools/assert_offline.py && $(MAKE) --no-print-directory test'

# attnlib side by side with its PyTorch twins; prints a table of ratios, writes _build/bench.csv.
bench: $(STAMP)
	python bench/run_bench.py --threads $(ATTNLIB_NUM_THREADS)

# Every case of `make bench` once, at small sizes, without verdicts (_build/bench-quick.csv): a
# few seconds, a step of `make test`; it fails if a case fails or the cached decoder disagrees.
bench-quick: $(STAMP)
	python bench/run_bench.py --quick --threads $(ATTNLIB_NUM_THREADS)

# The diagrams (diagrams/*.svg) from their sources (diagrams/src/*.py) with graphviz and matplotlib.
# The SVGs are committed: `make book` and `make test` never need graphviz (tests/test_diagrams.py
# checks each SVG's stamp against its source and the values it draws).
diagrams: $(STAMP)
	@command -v dot >/dev/null || { \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	    apt-get update -qq && apt-get install -y -qq --no-install-recommends graphviz fonts-liberation2 fonts-wqy-microhei; \
	  else echo "make diagrams: needs graphviz's dot (Debian/Ubuntu: sudo apt-get install graphviz fonts-liberation2 fonts-wqy-microhei)" >&2; exit 1; fi; }
	python tools/make_diagrams.py

# As root (containers, CI machines) Jupyter refuses to start without --allow-root.
LAB_FLAGS ?= $(if $(filter 0,$(shell id -u)),--allow-root)
lab: $(STAMP)
	jupyter lab $(LAB_FLAGS) $(LAB_ARGS) chapters/

# Re-pin every package: a fresh venv from requirements.in, then an exact freeze.
lock:
	rm -rf /tmp/attnlib-lock-venv
	$(PYTHON) -m venv /tmp/attnlib-lock-venv
	/tmp/attnlib-lock-venv/bin/python -m pip install --quiet -r requirements.in
	{ sed -n '1,3p' requirements.lock; /tmp/attnlib-lock-venv/bin/python -m pip freeze --all \
	  | grep -v -E '^(pip==|-e )' | sed -E 's/^torch==([0-9.]+)\+cpu$$/torch==\1/'; } > requirements.lock.new
	mv requirements.lock.new requirements.lock

clean:
	rm -rf _build .pytest_cache .mypy_cache .ruff_cache
