VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: install demo test lint bench clean

$(STAMP): pyproject.toml
	test -x $(PY) || python3 -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[test,bench]'
	touch $(STAMP)

install: $(STAMP)

demo: $(STAMP)
	$(VENV)/bin/gitmem demo

lint: $(STAMP)
	$(VENV)/bin/ruff check gitmem tests bench
	$(VENV)/bin/ruff format --check gitmem tests bench
	$(VENV)/bin/pyright

test: lint
	$(VENV)/bin/pytest -n 2

bench: $(STAMP)
	$(PY) bench/store.py
	$(PY) bench/capability.py
	$(PY) bench/sandbox.py
	$(PY) bench/console.py

clean:
	rm -rf $(VENV) build *.egg-info
