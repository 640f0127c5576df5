# Front door for newcomers and CI. Every target installs what it needs into .venv first.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: eval test ci typecheck lint record-bundled agents-install clean
RECORDED := $(notdir $(wildcard cassettes/*))

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

$(STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

## eval: replay the bundled default suite and print where the report is
eval: $(STAMP)
	$(BIN)/doit eval suite=smoke-coding mode=replay

## test: run the test suite
test: $(STAMP)
	$(BIN)/python -m pytest -q

## typecheck: mypy --strict over the library
typecheck: $(STAMP)
	$(BIN)/mypy --strict lab

## lint: import-layer contracts (import-linter, see pyproject.toml) and ruff
lint: $(STAMP)
	$(BIN)/lint-imports
	$(BIN)/ruff check lab tests dodo.py benchmarks

## ci: replay every bundled cassette; exit 2 on a divergence, 1 on a failed task
ci: $(STAMP)
	$(BIN)/doit ci

## record-bundled: re-record every bundled cassette with the scripted provider (byte-identical when nothing changed)
record-bundled: $(STAMP)
	@for suite in $(RECORDED); do \
	  $(BIN)/doit record suite.id=$$suite suite.path=suites/$$suite provider=scripted || exit $$?; \
	done

## agents-install: install a command agent under the data dir (make agents-install AGENT=aider)
agents-install: $(STAMP)
	$(BIN)/lab agents install $(AGENT)

clean:
	rm -rf runs $(VENV)
