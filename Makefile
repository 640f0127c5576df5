# Front door for newcomers and CI. Every target installs what it needs into .venv first.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: eval test ci record-bundled clean

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

clean:
	rm -rf runs $(VENV)
