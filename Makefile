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
UNIT_WORKERS ?= 2
CLAIMS := _build/claims
# nbmake executes copies of notebooks/ here (with outputs); the book is rendered from them.
# Not under _build/: nbmake skips every path that has a "_build" folder in it.
EXECUTED := .executed
TIMES := _build/timings.txt
# MathJax, require.js and the widget manager, served by the site itself (tools/pages/vendor_assets.py)
ASSETS := _vendor/ASSETS.json
TEST_ASSETS := _vendor-test/ASSETS.json
# Every path below is quoted: a checkout may live under "我的 书/pt book".

.PHONY: help install assets sync book test lint unit nbmake appendix build-book html-test \
	lab record-run readability pdf student class-check grade grade-class bench stress stress-seeds clean \
	test-oldest test-newest colab-check mutate

help:
	@echo "make book   build the book into _build/html (sets everything up first)"
	@echo "make test   run every check: lint, unit tests, notebooks (nbmake), -W build"
	@echo "make lab    JupyterLab on your own copies of the chapters in workspace/ (BOOK_LANG=zh,"
	@echo "            EDITION=student); no command overwrites them"
	@echo "make pdf    the book as PDFs in _build/pdf/ (both languages; after make book)"
	@echo "make sync   regenerate notebooks/ from book/ (and book/zh/'s code, notebooks/zh/)"
	@echo "make record-run  the glued numbers of make nbmake's run into the notebooks (then sync)"
	@echo "make readability  per chapter: reading-path words, visible code, share that verifies"
	@echo "make bench  time each notebook on this machine (CELLS=N: also its N slowest cells)"
	@echo "make stress run the chapters with timing claims 5 times, then 2 under load"
	@echo "make stress-seeds  every chapter with all its seeds shifted, SEEDS=1,2,3,4,5"
	@echo "make student            write the student edition (no solutions) into student/"
	@echo "make grade NB=path.ipynb grade a learner's notebook, exercise by exercise"
	@echo "make grade-class DIR=submissions/ [CHAPTER=NN] [TIMEOUT=s] [REGRADE=1]  grade a class into grades.csv"
	@echo "make test-oldest  every chapter on the oldest supported torch (a second venv)"
	@echo "make test-newest  every chapter on the newest torch the index serves (a third venv)"
	@echo "make colab-check  every chapter alone, offline, in a Colab-like venv"
	@echo "make mutate       mutation testing of the helpers (slow; resumable)"

$(STAMP): requirements.txt pyproject.toml
	start=$$(date +%s)
	test -x "$(BIN)/python" || "$(PYTHON)" -m venv "$(VENV)"
	"$(BIN)/python" -m pip install -q --upgrade pip
	"$(BIN)/python" -m pip install -q -r requirements.txt -e .
	mkdir -p _build
	echo "install $$(( $$(date +%s) - start ))" > "$(TIMES).install"
	touch "$(STAMP)"

install: $(STAMP)

$(ASSETS): tools/pages/vendor_assets.py _config.yml $(STAMP)
	"$(BIN)/python" -m tools.pages.vendor_assets
	touch "$(ASSETS)"

# axe-core, for the browser test only (not served): tools/pages/vendor_assets.py TEST_ASSETS
$(TEST_ASSETS): tools/pages/vendor_assets.py $(STAMP)
	"$(BIN)/python" -m tools.pages.vendor_assets
	touch "$(TEST_ASSETS)"

assets: $(ASSETS) $(TEST_ASSETS)

# A generated file changed by hand is kept and reported; REPLACE=path discards that change.
sync: $(STAMP)
	"$(BIN)/python" -m tools.build.sync_notebooks $(if $(REPLACE),--replace $(REPLACE))

# The claims appendix is made from the records the chapters write while they execute: build,
# write the appendix from this build's records, then build again (only the appendix changes).
# After `make test`, every chapter is in the cache already and nothing is executed here.
# Each stage runs only when one of its inputs is newer than its stamp in _build/ (so an
# unchanged book costs make's own checks); `make book FORCE=1` runs every stage. The Chinese
# build re-reads only pages whose source or cache record changed (book/_ext/cache_records.py).
# New records come from make nbmake, whose executed copies ($(EXECUTED)/) are an input; not the
# cache's database, which every build that reads from it writes to.
BOOK_TOOLS := tools/build/chapter_format.py tools/build/generated.py tools/build/jupyter_markdown.py \
  tools/build/book_run.py notebooks/book-run.json
# (not the appendix pages: the appendix stage writes them, after sync)
SYNC_IN := $(filter-out %/appendix_claims.md %/appendix_glossary.md,\
  $(wildcard book/*.md book/zh/*.md notebooks/*.ipynb notebooks/zh/*.ipynb)) \
  _config.yml tools/build/sync_notebooks.py tools/build/zh/edition.py $(BOOK_TOOLS)
APPENDIX_IN := claims/ledger.yml $(wildcard claims/records/*.jsonl $(CLAIMS)/*.jsonl) \
  $(wildcard book/*.md book/zh/*.md) book/zh/glossary.yml tools/pages/claims_appendix.py \
  tools/pages/chapter_map.py tools/build/zh/glossary.py $(BOOK_TOOLS)
SITE_IN := $(shell find book -type f -not -path 'book/zh/*' 2>/dev/null) _config.yml \
  _toc.yml $(ASSETS) $(wildcard $(EXECUTED)/*.ipynb)
SITE_ZH_IN := $(shell find book/zh -type f 2>/dev/null) $(wildcard book/_ext/*.py book/_static/*) \
  tools/build/zh/edition.py tools/build/zh/glossary.py
STAGE := _build/.stage
# Each stage notes its seconds in $(STAGE)/times; `make book` prints and clears them (issue 36:
# where the seconds of an edit loop go). NOW is a clock that works with any make and shell.
NOW = "$(BIN)/python" -c "import time; print(time.time())"
define stage_done
	echo "$(notdir $@) $$start $$($(NOW))" >> "$(STAGE)/times"
	touch "$@"
endef
$(STAGE):
	mkdir -p "$(STAGE)"
$(STAGE)/sync: $(STAMP) $(SYNC_IN) | $(STAGE)
	start=$$($(NOW))
	"$(BIN)/python" -m tools.build.sync_notebooks
	$(stage_done)
$(STAGE)/appendix: $(STAGE)/sync $(APPENDIX_IN)
	start=$$($(NOW))
	"$(BIN)/python" -m tools.pages.claims_appendix
	"$(BIN)/python" -m tools.pages.chapter_map
	"$(BIN)/python" -m tools.build.zh.glossary
	$(stage_done)
$(STAGE)/site: $(STAGE)/sync $(STAGE)/appendix $(SITE_IN)
	start=$$($(NOW))
	mkdir -p "$(CLAIMS)"
	BOOK_CLAIMS_LOG="$(CURDIR)/$(CLAIMS)/book.jsonl" "$(BIN)/jupyter-book" build -W --keep-going .
	# a second build only when this build's records changed the claims appendix
	if "$(BIN)/python" -m tools.pages.claims_appendix | grep -q "^wrote book/appendix_claims.md"; then
	  "$(BIN)/jupyter-book" build -W --keep-going .
	fi
	$(stage_done)
# SIDE_BY_SIDE=1 (set by `make book`, see there): the Chinese build does not wait for the English.
# The appendix stage and the English build run first, but only as an order: their stamps move
# whenever an English chapter is edited, and the Chinese build needs to run only when a file it
# reads changed: a Chinese page, including the code cells `make sync` copies into it and the
# pages the appendix stage writes into book/zh/ (all rewritten only when their text changes),
# or the extensions and static files. So a prose edit of an English chapter rebuilds the
# English site alone (issue 46).
$(STAGE)/site-zh: $(SITE_ZH_IN) | $(STAGE)/appendix $(if $(SIDE_BY_SIDE),,$(STAGE)/site)
	start=$$($(NOW))
	"$(BIN)/python" -m tools.build.zh.edition build
	$(stage_done)
$(STAGE)/pdf-link: $(STAGE)/site-zh $(wildcard _build/pdf/*.pdf)
	start=$$($(NOW))
	"$(BIN)/python" -m tools.pages.pdf --publish
	$(stage_done)

# (the sub-makes of `book` get FORCE= : the stages are removed once)
ifdef FORCE
$(shell rm -rf "$(STAGE)")
endif
# When both editions are out of date and every chapter is in the cache (nothing to execute, so
# no new claim records and no appendix change), the two builds run side by side on the two
# cores, each printing its output when it ends: an edit of a chapter and its twin costs the
# longer build, not both. Otherwise the Chinese build follows the English one, which executes
# what the cache lacks (once, for both editions).
book: $(STAMP) $(ASSETS)
	@$(MAKE) -s --no-print-directory FORCE= $(STAGE)/appendix
	# only a chapter edited since the last English build can have code the cache lacks
	if ! $(MAKE) -sq FORCE= SIDE_BY_SIDE=1 $(STAGE)/site && ! $(MAKE) -sq FORCE= SIDE_BY_SIDE=1 $(STAGE)/site-zh \
	    && [ -e "$(STAGE)/site" ] && edited=$$(find book -maxdepth 1 -name '[0-9]*.md' -newer "$(STAGE)/site") \
	    && { [ -z "$$edited" ] || "$(BIN)/python" -m tools.build.cache_executed --would-execute $$edited; }; then
	  $(MAKE) --no-print-directory -j2 --output-sync=target FORCE= SIDE_BY_SIDE=1 \
	    $(STAGE)/site $(STAGE)/site-zh
	fi
	@$(MAKE) -s --no-print-directory FORCE= $(STAGE)/pdf-link
	@if [ -s "$(STAGE)/times" ]; then
	  awk 'BEGIN { print "make book: seconds per stage that ran" }
	       { printf "  %-10s %6.1f s\n", $$1, $$3 - $$2 }' "$(STAGE)/times"
	  rm -f "$(STAGE)/times"
	fi
	@echo "The book is at file://$(CURDIR)/_build/html/index.html (中文: _build/html/zh/)"

lint: $(STAMP)
	"$(BIN)/ruff" check src tests tools book/_ext notebooks

unit: $(STAMP)
	"$(BIN)/python" -m pytest -q -n $(UNIT_WORKERS) --durations=10 tests \
	  --ignore=tests/book --ignore=tests/chapters/test_chapters_run.py \
	  --ignore=tests/tools/teach/test_grade_class.py --ignore=tests/tools/teach/test_forgeries.py

# Each chapter is executed once, here, for both editions (tools/teach/chapter_run.py, issue 46):
# the book's notebook runs in a copy of notebooks/ and keeps its outputs, which then go into the
# jupyter-cache that the book build reads; in the same kernel, the student edition's exercises
# run with every check tried on wrong answers and the solution. (The target kept nbmake's name;
# nbmake itself runs the chapters in other venvs: test-oldest, test-newest.)
RUN_TIMES := _build/chapter-run-times.json
nbmake: $(STAMP)
	rm -rf "$(EXECUTED)" && mkdir -p "$(EXECUTED)" "$(CLAIMS)"
	cp notebooks/*.ipynb "$(EXECUTED)/"
	rm -f "$(CLAIMS)/nbmake.jsonl" "$(RUN_TIMES)"
	BOOK_CLAIMS_LOG="$(CURDIR)/$(CLAIMS)/nbmake.jsonl" BOOK_EXECUTED="$(CURDIR)/$(EXECUTED)" \
	  BOOK_RUN_TIMES="$(CURDIR)/$(RUN_TIMES)" "$(BIN)/python" -m pytest -q -p no:cacheprovider \
	  --durations=0 tests/chapters/test_chapters_run.py
	"$(BIN)/python" -m tools.build.cache_executed "$(EXECUTED)"

# The glued numbers of the executed run (make nbmake's $(EXECUTED)/) become the numbers the
# notebooks show, marked as the book's run (notebooks/book-run.json, committed; then make sync)
record-run: $(STAMP)
	"$(BIN)/python" -m tools.build.book_run "$(EXECUTED)"
	"$(BIN)/python" -m tools.build.sync_notebooks

# What each chapter asks of a reader, as the rendered page shows it (tools/check/readability.py);
# exits 1 while a chapter is over a budget (issue 43's reading pass brings them under)
readability: $(STAMP)
	"$(BIN)/python" -m tools.check.readability

# The claims ledger and the intro's chapter map (both editions) and the Chinese edition's
# glossary, generated pages
appendix: $(STAMP)
	"$(BIN)/python" -m tools.pages.claims_appendix
	"$(BIN)/python" -m tools.pages.chapter_map
	"$(BIN)/python" -m tools.build.zh.glossary

# The test build renders from the cache that `make nbmake` filled: it must execute nothing.
# The Chinese edition (book/zh/ -> _build/html/zh/) has the English code, so the same records.
build-book: appendix $(ASSETS)
	mkdir -p "$(CLAIMS)"
	BOOK_CLAIMS_LOG="$(CURDIR)/$(CLAIMS)/book.jsonl" "$(BIN)/jupyter-book" build -W \
	  --keep-going . 2>&1 | tee _build/build.log
	"$(BIN)/python" -m tools.build.zh.edition build 2>&1 | tee _build/build-zh.log
	if grep -n "Executing notebook" _build/build.log _build/build-zh.log; then
	  echo "the build executed a chapter that nbmake had run: the cache did not match"; exit 1
	fi

# The built HTML, then every page in Chromium with the network cut (skipped, saying why, when
# this machine has no Chromium: .ci/run installs it).
html-test: $(STAMP) $(TEST_ASSETS)
	BOOK_REQUIRE_HTML=1 "$(BIN)/python" -m pytest -q -rs --durations=15 tests/book \
	  tests/tools/check/test_prose_numbers.py

# The class grader on a synthetic class, and on forgeries (a kernel per submission).
class-check: $(STAMP)
	"$(BIN)/python" -m pytest -q --durations=10 tests/tools/teach/test_grade_class.py \
	  tests/tools/teach/test_forgeries.py

# nbmake runs first and alone: its outputs are the book's, so its measurements get the cores.
# The rest executes no chapter (build, HTML checks), or is made to hold with a core busy
# (the unit tests: see make stress), so it runs side by side.
test: $(STAMP)
	mkdir -p _build
	mv "$(TIMES).install" "$(TIMES)" 2>/dev/null || echo "install 0" > "$(TIMES)"
	# returns the step's own status: `set -e` does not apply inside a function called in `a && b`
	timed() {
	  local start=$$(date +%s) rc=0; "$$@" || rc=$$?
	  echo "$$* $$(( $$(date +%s) - start ))" >> "$(TIMES)"; return $$rc
	}
	timed $(MAKE) --no-print-directory lint
	timed $(MAKE) --no-print-directory nbmake
	trap 'kill $$(jobs -p) 2>/dev/null || true' EXIT  # no orphans if the build fails
	start=$$(date +%s)
	{ timed $(MAKE) --no-print-directory unit UNIT_WORKERS=1 &&
	  timed $(MAKE) --no-print-directory class-check; } > _build/unit.log 2>&1 &
	unit=$$!
	timed $(MAKE) --no-print-directory build-book
	timed $(MAKE) --no-print-directory pdf PDF_FLAGS=--if-chromium
	timed $(MAKE) --no-print-directory html-test 2>&1 | tee _build/html-test.log
	status=0
	wait $$unit || status=1
	echo "side-by-side-wall $$(( $$(date +%s) - start ))" >> "$(TIMES)"
	cat _build/unit.log
	test $$status -eq 0 || { echo "make test: unit or class-check tests failed"; exit 1; }
	@echo "make test: seconds per step (install 0: it was done before); unit then class-check,"
	@echo "and build-book, pdf, html-test ran side by side (side-by-side-wall)"
	@sed 's/^make --no-print-directory //' "$(TIMES)" | awk '{printf "  %-18s %5d s\n", $$1, $$NF}'
	@grep -ho "browser test skipped: .*" _build/html-test.log | head -1 | sed 's/^/make test: /' || true
	@echo "make test: all checks passed"

# JupyterLab on the learner's own copies (workspace/, never overwritten): BOOK_LANG=zh for the
# Chinese edition, EDITION=student for the exercise-only copies (tools/teach/lab.py)
lab: sync
	"$(BIN)/python" -m tools.teach.lab --lang "$(or $(BOOK_LANG),en)" --edition "$(or $(EDITION),book)"

# The book as PDFs, printed from the built site by Chromium (tools/pages/pdf.py): after make book.
# EDITION=student leaves the solutions out.
pdf: $(STAMP)
	"$(BIN)/python" -m tools.pages.pdf --edition "$(or $(EDITION),book)" $(PDF_FLAGS)

student: $(STAMP)
	"$(BIN)/python" -m tools.teach.student_edition --out student $(if $(REPLACE),--replace $(REPLACE))

grade: $(STAMP)
	@test -n "$(NB)" || { echo "usage: make grade NB=path/to/notebook.ipynb"; exit 2; }
	"$(BIN)/python" -m tools.teach.grade "$(NB)" $(if $(TIMEOUT),--timeout "$(TIMEOUT)")

# CHAPTER=NN is optional (detected from each notebook's check cells); OUT defaults to DIR
grade-class: $(STAMP)
	@test -n "$(DIR)" || { echo "usage: make grade-class DIR=submissions/ [CHAPTER=NN] [TIMEOUT=s] [REGRADE=1]"; exit 2; }
	"$(BIN)/python" -m tools.teach.grade_class "$(DIR)" --out "$(or $(OUT),$(DIR))" \
	  $(if $(CHAPTER),--chapter "$(CHAPTER)") $(if $(TIMEOUT),--timeout "$(TIMEOUT)") \
	  $(if $(REGRADE),--regrade)

bench: $(STAMP)
	"$(BIN)/python" -m tools.check.bench $(if $(CELLS),--cells "$(CELLS)") notebooks/*.ipynb
	"$(BIN)/python" -m tools.check.bench_train

stress: $(STAMP)
	"$(BIN)/python" -m tools.check.stress_claims

# Every chapter once per setting, with every seed its code cells set shifted by that much
# (tools/check/shift_seeds.py): a claim holds for any draw, not for seed 0. Table: _build/.
SEEDS ?= 1,2,3,4,5
stress-seeds: $(STAMP)
	"$(BIN)/python" -m tools.check.stress_claims --seeds "$(SEEDS)" --out _build/stress-seeds.md \
	  $(CHAPTERS)

# Every chapter under nbmake in a second venv with another torch: $(1) venv, $(2) what to pip
# install besides the requirements (torch pins removed), $(3) a name for the run's folder and
# records, $(4) extra environment for pip. The pip line names torch and torchvision together.
define nbmake_in_venv
	test -x "$(1)/bin/python" || "$(PYTHON)" -m venv "$(1)"
	grep -v '^torch\(vision\)\?==' requirements.txt > "$(1)/requirements.txt"
	$(4) "$(1)/bin/python" -m pip install -q --upgrade pip
	$(4) "$(1)/bin/python" -m pip install -q $(2) -r "$(1)/requirements.txt" -e .
	"$(1)/bin/python" -c "import torch, torchvision; \
	  print(f'$(3): torch {torch.__version__}, torchvision {torchvision.__version__}')"
	rm -rf ".executed-$(3)" && mkdir -p ".executed-$(3)" "$(CLAIMS)"
	cp notebooks/*.ipynb ".executed-$(3)/"
	rm -f "$(CLAIMS)/$(3).jsonl"
	BOOK_CLAIMS_LOG="$(CURDIR)/$(CLAIMS)/$(3).jsonl" "$(1)/bin/python" -m pytest -q \
	  -p no:cacheprovider --nbmake --nbmake-timeout=300 --durations=0 \
	  --junitxml="_build/nbmake-$(3).xml" ".executed-$(3)"
endef

# The lower bound of the supported torch range (pyproject.toml, README): every chapter under
# nbmake in a second venv with that torch. Not part of `make test`: a second torch install.
TORCH_OLDEST ?= torch==2.9.1 torchvision==0.24.1
VENV_OLDEST ?= .venv-oldest
test-oldest:
	$(call nbmake_in_venv,$(VENV_OLDEST),$(TORCH_OLDEST),oldest,)

# The newest torch and torchvision the package index serves (pip's own choice, unpinned, and
# upgraded on every run): what `pip install torch torchvision` gives a reader today. pip's
# configuration files are ignored for this venv only (PIP_CONFIG_FILE=/dev/null), so that a
# machine whose pip is capped at a local release still gets the index's newest.
# The weekly nightly job: make test-newest NEWEST=nightly \
#   NEWEST_FROM="--pre --extra-index-url https://download.pytorch.org/whl/nightly/cpu"
NEWEST ?= newest
NEWEST_FROM ?=
VENV_NEWEST ?= .venv-$(NEWEST)
test-newest:
	$(call nbmake_in_venv,$(VENV_NEWEST),--upgrade $(NEWEST_FROM) torch torchvision,$(NEWEST),PIP_CONFIG_FILE=/dev/null)

# Each chapter alone in an empty folder, in a venv with only Colab's preinstalled packages and
# the helpers' wheel, with the network cut (tools/check/colab_check.py). COLAB_TORCH picks the torch.
colab-check: $(STAMP)
	"$(BIN)/python" -m tools.check.colab_check $(if $(COLAB_TORCH),--torch $(COLAB_TORCH))

# Mutation testing of the helpers the chapters rely on, with their unit tests (mutmut,
# configured in pyproject.toml). Slow (most of an hour on 2 cores), so not part of `make test`;
# it resumes where it stopped. Writes a per-module table to _build/mutation.md.
mutate: $(STAMP)
	"$(BIN)/python" -m pip install -q "mutmut==3.8.1"
	"$(BIN)/mutmut" run --max-children 2
	mkdir -p _build && "$(BIN)/mutmut" results --all true > _build/mutation-results.txt
	"$(BIN)/python" -m tools.check.mutation_report _build/mutation-results.txt --out _build/mutation.md

clean:
	rm -rf _build "$(EXECUTED)" .executed-oldest .executed-newest .executed-nightly
