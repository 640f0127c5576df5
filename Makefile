# Front door for newcomers and CI. Every target installs what it needs into .venv first.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: eval run test ci typecheck lint record-bundled agents-install clean clean-results
# `make eval k=3`: the variable assignments make received on its command line
# (MAKEOVERRIDES) are forwarded to the lab as Hydra overrides; PYTHON is make's own.
OVERRIDES := $(filter-out PYTHON=%,$(MAKEOVERRIDES))
RECORDED := $(notdir $(wildcard cassettes/*))

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

# uv installs the same dependencies about 5x faster than pip (benchmarks/install_uv_vs_pip.py);
# pip is the fallback when uv cannot be installed or fails. Both leave compiled bytecode behind
# (uv only when asked), so no lab process recompiles its dependencies when PYTHONDONTWRITEBYTECODE is set.
# editable_mode=compat: the checkout is one path line in a .pth file. setuptools' default puts an import
# finder there instead, which every start of the virtualenv's Python imports (about 25 ms of CPU: each
# sandboxed verifier and agent command pays it).
EDITABLE := --config-settings editable_mode=compat -e '.[dev,ray]'
$(STAMP): pyproject.toml | $(BIN)/python
	@echo "make: installing the lab and its dependencies into $(VENV) with uv (first time, or pyproject.toml changed)"
	@if $(BIN)/python -m pip install --quiet --disable-pip-version-check uv && \
	    $(BIN)/uv pip install --python $(BIN)/python --index-strategy unsafe-best-match --compile-bytecode \
	      $$($(BIN)/python tools/uv_args.py $(BIN)/python) $(EDITABLE); then :; else \
	  echo "make: installing with pip instead (uv unavailable)"; \
	  $(BIN)/python -m pip install --progress-bar on $(EDITABLE); \
	fi
	@$(BIN)/python -c 'import lab.bytecode as b; b.main()'  # the lab's own .pyc: PEP 552 checked-hash (lab/bytecode.py)
	@touch $(STAMP)
	@echo "make: $(VENV) is ready"

## eval: replay the bundled default suite and print where the report is (`make eval k=3` adds overrides)
eval: $(STAMP)
	$(BIN)/doit eval suite=smoke-coding mode=replay $(OVERRIDES)

## run: an eval with no preset suite or mode: `make run suite=core k=5` = `lab run suite=core k=5`
run: $(STAMP)
	$(BIN)/lab run $(OVERRIDES)

## test: run the test suite, one worker per core (tests share no directory or port); prints the ten slowest
# compileall first: the tests start hundreds of lab processes, and without bytecode on disk
# (PYTHONDONTWRITEBYTECODE=1) each would compile the lab's sources again (~0.25 s apiece).
# The lab's own bytecode is PEP 552 checked-hash (lab.bytecode: never older than its source).
# A file that does not compile is left to pytest, which names it. pytest keeps its assertion-rewritten
# test modules in __pycache__ only when bytecode may be written: the next `make test` collects in half the time.
test: $(STAMP)
	@$(BIN)/python -c 'import lab.bytecode as b; b.main()' >/dev/null 2>&1 || true
	@$(BIN)/python -m compileall -q tests dodo.py >/dev/null 2>&1 || true
	env -u PYTHONDONTWRITEBYTECODE $(BIN)/python -m pytest -q -n auto --dist loadgroup --durations=10

## typecheck: mypy --strict over the library
typecheck: $(STAMP)
	$(BIN)/mypy --strict lab

## lint: import-layer contracts (import-linter, see pyproject.toml) and ruff
lint: $(STAMP)
	$(BIN)/lint-imports
	$(BIN)/ruff check lab tests dodo.py benchmarks tools

## ci: replay every bundled cassette; fails on a divergence or a failed task (`doit ci` exits 2 and 1; make exits 2)
ci: $(STAMP)
	$(BIN)/doit ci $(OVERRIDES)

## record-bundled: re-record every bundled cassette with the scripted provider (byte-identical when nothing changed)
record-bundled: $(STAMP)
	@for suite in $(RECORDED); do \
	  $(BIN)/doit record suite.id=$$suite suite.path=suites/$$suite provider=scripted || exit $$?; \
	done

## agents-install: install a command agent under the data dir (make agents-install AGENT=aider)
agents-install: $(STAMP)
	@if [ -z "$(AGENT)" ]; then echo "make: agents-install needs AGENT=NAME (make agents-install AGENT=aider; \`$(BIN)/lab agents list\` names them)" >&2; exit 1; fi
	$(BIN)/lab agents install $(AGENT)

## clean: remove what the build made (the virtualenv, bytecode, tool caches); results and agents stay
clean:
	rm -rf $(VENV) reliability_lab.egg-info build .pytest_cache .mypy_cache .ruff_cache .hypothesis .import_linter_cache
	find . -path ./runs -prune -o -name __pycache__ -type d -prune -exec rm -rf {} + 2>/dev/null || true

## clean-results: delete every result in the run store (runs/, or $LAB_DATA_DIR), naming each entry;
## the installed command agents (its agents/, and $LAB_AGENTS_DIR when that lies inside the store) stay
RESULTS := $(or $(LAB_DATA_DIR),runs)
clean-results:
	@store="$$(realpath -m "$(RESULTS)")"; \
	if [ "$$store" = / ] || [ "$$store" = "$$(realpath -m "$$HOME")" ]; then \
	  echo "make: $(RESULTS) is / or your home directory, not a run store: nothing deleted" >&2; exit 1; fi; \
	if [ -d "$(RESULTS)" ]; then \
	  shared=""; [ -n "$$LAB_AGENTS_DIR" ] && shared="$$(realpath -m "$$LAB_AGENTS_DIR")"; \
	  for entry in "$(RESULTS)"/* "$(RESULTS)"/.[!.]* "$(RESULTS)"/..?*; do \
	    [ -e "$$entry" ] || [ -L "$$entry" ] || continue; \
	    [ "$$entry" = "$(RESULTS)/agents" ] && continue; \
	    full="$$(realpath -m "$$entry")"; \
	    [ -n "$$shared" ] && case "$$shared/" in "$$full"/*) echo "make: kept $$entry (holds LAB_AGENTS_DIR=$$LAB_AGENTS_DIR)"; continue;; esac; \
	    [ -n "$$shared" ] && case "$$full/" in "$$shared"/?*) echo "make: kept $$entry (inside LAB_AGENTS_DIR=$$LAB_AGENTS_DIR)"; continue;; esac; \
	    echo "make: deleting $$entry"; rm -rf "$$entry"; \
	  done; \
	  if [ -d "$(RESULTS)/agents" ]; then echo "make: kept $(RESULTS)/agents (installed command agents)"; fi; \
	else echo "make: $(RESULTS) does not exist: nothing to delete"; fi
