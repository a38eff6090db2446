# Attention, from first principles: build, test and grade from one place.
#   make book       build the book into _build/html (every code cell executed)
#   make test       run the whole test suite (installs bubblewrap and PostgreSQL as root, with apt-get)
#   make test-unit  the unit layer only (tests/unit: no process, no sandbox, no book), in seconds
#   make typecheck  the type checker (mypy) over autograder/; make test runs it, with make lint
#   make exercises  regenerate exercises/ from solutions/ (nbgrader generate_assignment)
#   make mathjax    fetch MathJax into _vendor/mathjax (typesets the formulas at build time, in node)
#   make mathjax2   fetch MathJax 2 for Formgrader's pages (`autograder formgrade` refuses without it)
#   make browser    install Debian's Chromium for the browser tests (tests/book/test_browser.py)
#   make pdf        the whole book as one PDF, _build/pdf/book.pdf (printed by Chromium, offline)
#   make student-repo  the repository students clone, _build/student-repo (no solution, no hidden test)
#   make edition    a term's edition, frozen: site, PDF, student repository, manifest (_build/edition/VERSION)
# Both main targets create .venv from requirements.txt when it is missing or stale.

PYTHON ?= python3.11
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
# nbgrader shells out to alembic, and reads its configuration from autograder/.
export PATH := $(abspath $(BIN)):$(PATH)
export JUPYTER_CONFIG_PATH := $(abspath autograder)
export PYDEVD_DISABLE_FILE_VALIDATION := 1

.PHONY: book test lint typecheck exercises sandbox browser poppler pdf mathjax mathjax2 node postgresql bench-grading \
        bytecode clean venv student-repo student-setup-size edition test-unit

venv: $(STAMP)

$(STAMP): requirements.txt pyproject.toml
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -r requirements.txt
	$(BIN)/python -m pip install --quiet --no-deps --no-build-isolation -e .
	$(BIN)/python -m ipykernel install --sys-prefix --name python3 >/dev/null
	@touch $@

book: $(STAMP) bytecode mathjax node
	$(BIN)/jupyter-book build . --warningiserror --nitpick --keep-going

# MathJax from the npm registry at build time, never from a CDN at read time.
MATHJAX_VERSION := 3.2.2
MATHJAX := _vendor/mathjax
mathjax: $(MATHJAX)/.version-$(MATHJAX_VERSION)

$(MATHJAX)/.version-$(MATHJAX_VERSION):
	@command -v npm >/dev/null 2>&1 || { echo "error: npm is needed once to fetch MathJax $(MATHJAX_VERSION) (apt-get install npm)"; exit 1; }
	rm -rf $(MATHJAX) && mkdir -p $(MATHJAX)
	tmp=$$(mktemp -d) && (cd $$tmp && npm pack --silent mathjax@$(MATHJAX_VERSION) >/dev/null) \
	  && tar xzf $$tmp/mathjax-$(MATHJAX_VERSION).tgz -C $$tmp && cp -r $$tmp/package/es5/. $(MATHJAX)/ \
	  && cp $$tmp/package/LICENSE $(MATHJAX)/ && rm -rf $$tmp
	@touch $@

# Formgrader (nbgrader's manual grading page) loads MathJax 2 from a CDN; the course serves it
# from here instead (autograder/jupyter_server_config.py), so manual grading works offline.
MATHJAX2 := _vendor_formgrader/mathjax2
mathjax2: $(MATHJAX2)/.version-2.7.7

$(MATHJAX2)/.version-2.7.7:
	@command -v npm >/dev/null 2>&1 || { echo "error: npm is needed once to fetch MathJax 2.7.7 for Formgrader (apt-get install npm)"; exit 1; }
	rm -rf $(MATHJAX2) && mkdir -p $(MATHJAX2)/config $(MATHJAX2)/jax/input $(MATHJAX2)/jax/output $(MATHJAX2)/fonts/HTML-CSS/TeX $(MATHJAX2)/localization
	tmp=$$(mktemp -d) && (cd $$tmp && npm pack --silent mathjax@2.7.7 >/dev/null) && tar xzf $$tmp/mathjax-2.7.7.tgz -C $$tmp \
	  && cp $$tmp/package/MathJax.js $$tmp/package/LICENSE $(MATHJAX2)/ \
	  && cp $$tmp/package/config/TeX-AMS_CHTML-full.js $$tmp/package/config/Safe.js $(MATHJAX2)/config/ \
	  && cp -r $$tmp/package/extensions $(MATHJAX2)/ && cp -r $$tmp/package/jax/element $(MATHJAX2)/jax/ \
	  && cp -r $$tmp/package/jax/input/TeX $(MATHJAX2)/jax/input/ && cp -r $$tmp/package/jax/output/CommonHTML $(MATHJAX2)/jax/output/ \
	  && cp -r $$tmp/package/fonts/HTML-CSS/TeX/woff $(MATHJAX2)/fonts/HTML-CSS/TeX/ \
	  && cp -r $$tmp/package/localization/en $(MATHJAX2)/localization/ && rm -rf $$tmp
	@touch $@

# The sandbox for grading untrusted code is Debian's bubblewrap; install it where we can.
sandbox:
	@command -v bwrap >/dev/null 2>&1 || { \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	    (apt-get update -qq && apt-get install -y -qq bubblewrap) >/dev/null 2>&1 \
	      || echo "warning: could not install bubblewrap; sandboxed grading tests will be skipped"; \
	  else echo "note: bubblewrap (bwrap) not found; install it to grade submissions safely"; fi; }

# The book's formulas are typeset when it is built, by MathJax run in node (_ext/typeset_math.py):
# Debian's nodejs; installed where we can, else `make book` stops here with one line.
node:
	@command -v node >/dev/null 2>&1 || { \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	    (apt-get update -qq && apt-get install -y -qq nodejs) >/dev/null 2>&1 || true; fi; \
	  command -v node >/dev/null 2>&1 || { echo "error: node is needed to typeset the book's formulas (apt-get install nodejs)"; exit 1; }; }

# The browser tests drive Debian's Chromium (never `playwright install`); install it where we can.
browser:
	@command -v chromium >/dev/null 2>&1 || { \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	    (apt-get update -qq && apt-get install -y -qq chromium) >/dev/null 2>&1 \
	      || echo "warning: could not install chromium; the browser tests will be skipped"; \
	  else echo "note: chromium not found; install it to run the browser tests"; fi; }

# The PDF build reads back where its chapters and solutions landed (pdfinfo), and the PDF tests
# read the whole-book PDF (pdftotext, pdftohtml, pdfimages): Debian's poppler-utils; install it where we can.
poppler:
	@command -v pdftotext >/dev/null 2>&1 || { \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	    (apt-get update -qq && apt-get install -y -qq poppler-utils) >/dev/null 2>&1 \
	      || echo "warning: could not install poppler-utils; the PDF test will be skipped"; \
	  else echo "note: pdftotext not found; install poppler-utils to test the PDF"; fi; }

# The whole book as one PDF: the single-page HTML build (same execution cache) printed by
# Debian's Chromium (its formulas typeset by the build), with _ext/book_pdf.css and .js (page numbers,
# contents with pages, solutions at each chapter's end); copied into _build/html as a download.
pdf: $(STAMP) bytecode mathjax node browser poppler
	$(BIN)/python _ext/book_pdf.py

# A shared gradebook is tested against Debian's PostgreSQL server (initdb, pg_ctl, run by the
# test in a temporary folder); install it where we can. Under CI its test fails without it.
postgresql:
	@{ ls /usr/lib/postgresql/*/bin/initdb || command -v initdb; } >/dev/null 2>&1 || { \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	    (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql) >/dev/null 2>&1 \
	      || echo "warning: could not install postgresql; the shared-gradebook test will be skipped (and fail under CI)"; \
	  else echo "note: PostgreSQL (initdb, pg_ctl) not found; install it to test a shared gradebook"; fi; }

# Both cores: the independent tests spread over two workers; files whose tests share one
# expensive fixture (the book build, the adversarial class) run whole on one worker.
# The package's bytecode, compiled ahead: where PYTHONDONTWRITEBYTECODE is set (as on this
# machine), every grading process would compile the package again (0.08 s each: the parent,
# the fork server, a student's check). Only stale files are compiled again. So is nbformat's
# validator, which each of them would otherwise generate and compile (0.08 s each).
bytecode: $(STAMP)
	@$(BIN)/python -m compileall -q autograder
	@$(BIN)/python -c "from autograder.startup import ready_validator; ready_validator(write=True)"

# A base folder of the run's own for the tests' temporary files: pytest takes away the group and
# other bits of /tmp/pytest-of-USER whenever any pytest session starts, and the tests that run
# as a user without root (they enter folders of root's) would lose their way in mid-run.
test: $(STAMP) bytecode sandbox browser poppler mathjax mathjax2 node postgresql lint typecheck
	$(BIN)/python -m pytest tests -n 2 --dist loadgroup --durations=15 --basetemp="$$(mktemp -d)/pytest"

# The unit layer (CONTRIBUTING.md, "Tests in layers"): pure functions and classes, no process
# started, no sandbox, no book; what a change to planning or the term needs first, in seconds.
test-unit: $(STAMP)
	$(BIN)/python -m pytest tests/unit -q

# The linter (pyproject.toml's [tool.ruff]: pycodestyle and pyflakes at the package's 120
# columns) over the package, its tests, the book's helpers and extensions, and docs/.
lint: $(STAMP)
	$(BIN)/ruff check autograder tests _ext book/helpers docs

# The type checker over the package (pyproject.toml's [tool.mypy]: every function body checked,
# annotated or not). Its cache (.mypy_cache) makes a run after a small change take a second or so;
# a first run reads the libraries' types (about 17 s of one core; PyTorch's are skipped, pyproject.toml).
typecheck: $(STAMP)
	@t0=$$(date +%s%N); $(BIN)/mypy autograder; rc=$$?; \
	  echo "typecheck: mypy took $$(( ($$(date +%s%N) - t0) / 1000000 )) ms"; exit $$rc

exercises: $(STAMP) bytecode
	$(BIN)/python -m autograder release --all

# The repository students clone: exercises, the checker, its set-up (autograder/student_repo.py).
student-repo: $(STAMP)
	$(BIN)/python -m autograder.student_repo

# A student's set-up, measured: the student repository's install.py in a fresh copy of it, with a
# new .venv (pip's cache as it is), then a first check. PyTorch from its CPU index by default;
# STUDENT_TORCH_INDEX=pypi where pip's own index serves the CPU build (as here).
STUDENT_TORCH_INDEX ?= https://download.pytorch.org/whl/cpu
student-setup-size: student-repo
	rm -rf _build/student-setup && cp -r _build/student-repo _build/student-setup
	cd _build/student-setup && $(PYTHON) install.py --torch-index $(STUDENT_TORCH_INDEX)
	cd _build/student-setup && .venv/bin/python -c "import subprocess, time; t = time.monotonic(); \
	  subprocess.run(['.venv/bin/autograder', 'check', 'exercises/02_similarity/02_similarity.ipynb'], capture_output=True); \
	  print(f'first check of an untouched notebook: {time.monotonic() - t:.1f} s')"

# What a term hands out, frozen under the course version (autograder/edition.py).
edition: book pdf student-repo
	$(BIN)/python -m autograder.edition

bench-grading: $(STAMP) bytecode sandbox
	$(BIN)/python -m autograder.bench

clean:
	rm -rf _build grading
