VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: install demo test soak lint bench clean

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

# The sandbox stress test at full size (make test runs it at 100).
soak: $(STAMP)
	GITMEM_SOAK_RUNS=500 $(VENV)/bin/pytest -q tests/test_sandbox_attacks.py -k stress

bench: $(STAMP)
	$(PY) bench/store.py
	$(PY) bench/capability.py
	$(PY) bench/sandbox.py
	$(PY) bench/curated.py
	$(PY) bench/mcp.py
	$(PY) bench/anthropic.py
	$(PY) bench/sync.py
	$(PY) bench/console.py
	$(PY) bench/guards.py

clean:
	rm -rf $(VENV) build *.egg-info
