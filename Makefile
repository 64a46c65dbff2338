# Two commands set up and run everything on a fresh machine:
#   make book   - create .venv, install, sync notebooks, execute and render the book
#   make test   - same set-up, then lint, unit tests, sync check, nbmake, the -W build
SHELL := /bin/bash
.ONESHELL:
.SHELLFLAGS := -eu -o pipefail -c

PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
# Notebooks run one at a time by default: several chapters measure speed (workers, padding,
# overheads) and need the machine's cores to themselves. NB_WORKERS=2 is faster on more cores.
NB_WORKERS ?= 1
CLAIMS := _build/claims

.PHONY: help install sync book test lint unit nbmake appendix build-book html-test \
	student student-check grade bench clean

help:
	@echo "make book   build the book into _build/html (sets everything up first)"
	@echo "make test   run every check: lint, unit tests, notebooks (nbmake), -W build"
	@echo "make sync   regenerate notebooks/ from book/"
	@echo "make bench  time each notebook on this machine"
	@echo "make student            write the student edition (no solutions) into student/"
	@echo "make grade NB=path.ipynb grade a learner's notebook, exercise by exercise"

$(STAMP): requirements.txt pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -r requirements.txt -e .
	touch $(STAMP)

install: $(STAMP)

sync: $(STAMP)
	$(BIN)/python -m tools.sync_notebooks

# The claims appendix is made from the records the chapters write while they execute: build,
# write the appendix from this build's records, then build again (only the appendix changes).
book: sync
	mkdir -p $(CLAIMS)
	$(BIN)/python -m tools.claims_appendix
	BOOK_CLAIMS_LOG=$(CURDIR)/$(CLAIMS)/book.jsonl $(BIN)/jupyter-book build -W --keep-going .
	$(BIN)/python -m tools.claims_appendix
	$(BIN)/jupyter-book build -W --keep-going .
	@echo "The book is at file://$(CURDIR)/_build/html/index.html"

lint: $(STAMP)
	$(BIN)/ruff check src tests tools book/_ext notebooks

unit: $(STAMP)
	$(BIN)/python -m pytest -q tests --ignore=tests/test_built_book.py \
	  --ignore=tests/test_student_edition_runs.py

nbmake: $(STAMP)
	mkdir -p $(CLAIMS)
	rm -f $(CLAIMS)/nbmake.jsonl
	BOOK_CLAIMS_LOG=$(CURDIR)/$(CLAIMS)/nbmake.jsonl \
	  $(BIN)/python -m pytest -q -p no:cacheprovider --nbmake --nbmake-timeout=300 \
	  -n $(NB_WORKERS) --durations=0 notebooks

appendix: $(STAMP)
	$(BIN)/python -m tools.claims_appendix

build-book: appendix
	mkdir -p $(CLAIMS)
	BOOK_CLAIMS_LOG=$(CURDIR)/$(CLAIMS)/book.jsonl $(BIN)/jupyter-book build -W --keep-going .

html-test: $(STAMP)
	BOOK_REQUIRE_HTML=1 $(BIN)/python -m pytest -q tests/test_built_book.py

student-check: $(STAMP)
	$(BIN)/python -m pytest -q tests/test_student_edition_runs.py

# nbmake runs first so that the appendix built next shows this run's claim results
test: lint unit nbmake build-book html-test student-check
	@echo "make test: all checks passed"

student: $(STAMP)
	$(BIN)/python -m tools.student_edition --out student

grade: $(STAMP)
	@test -n "$(NB)" || { echo "usage: make grade NB=path/to/notebook.ipynb"; exit 2; }
	$(BIN)/python -m tools.grade "$(NB)"

bench: $(STAMP)
	$(BIN)/python -m tools.bench notebooks/*.ipynb
	$(BIN)/python -m tools.bench_train

clean:
	rm -rf _build
