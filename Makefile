VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: install demo test soak lint docs bench clean runtime

$(STAMP): pyproject.toml
	test -x $(PY) || python3 -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[test,bench,docs]'
	touch $(STAMP)

install: $(STAMP)

demo: $(STAMP)
	$(VENV)/bin/gitmem demo

lint: $(STAMP)
	$(VENV)/bin/ruff check gitmem tests bench
	$(VENV)/bin/ruff format --check gitmem tests bench
	$(VENV)/bin/pyright
	$(VENV)/bin/pyright --pythonversion 3.13 gitmem
	$(VENV)/bin/deno fmt --check --quiet sandbox/runtime.ts

test: lint docs
	$(VENV)/bin/pytest -n 2

# The documentation site (docs/, mkdocs.yml) into site/; any warning fails the build.
docs: $(STAMP)
	NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs build --strict --quiet

# The sandbox stress test at full size (make test runs it at 100), then the load, kill
# and fuzz runs (tests marked `soak`) at the sizes docs/reliability.md reports; make test runs
# them scaled down. The figures are printed and kept in soak-report.txt.
soak: $(STAMP)
	GITMEM_SOAK_RUNS=500 $(VENV)/bin/pytest -q tests/test_sandbox_attacks.py -k stress
	rm -f soak-report.txt
	GITMEM_SOAK=full GITMEM_SOAK_REPORT=soak-report.txt $(VENV)/bin/pytest -q -s -m soak
	cat soak-report.txt

bench: $(STAMP)
	$(PY) bench/store.py
	$(PY) bench/capability.py
	$(PY) bench/sandbox.py
	$(PY) bench/curated.py
	$(PY) bench/mcp.py
	$(PY) bench/memory.py
	$(PY) bench/anthropic.py
	$(PY) bench/sync.py
	$(PY) bench/review.py
	$(PY) bench/console.py
	$(PY) bench/cold.py
	$(PY) bench/guards.py
	$(PY) bench/asof.py
	$(PY) bench/observer.py
	$(PY) bench/blame.py
	$(PY) bench/scale.py

# The sandbox runtime ships as JavaScript, so no Deno process transpiles it at start.
# Rebuild it after editing sandbox/runtime.ts (`deno bundle` fetches esbuild once);
# tests/test_sandbox.py checks that runtime.js was built from the runtime.ts beside it.
runtime: $(STAMP)
	{ printf '// Built from runtime.ts (sha256 %s) by `make runtime`: edit runtime.ts, not this.\n' \
		"$$(sha256sum sandbox/runtime.ts | cut -d' ' -f1)"; \
	  $(VENV)/bin/deno bundle --quiet --platform deno sandbox/runtime.ts; } > sandbox/runtime.js.tmp
	mv sandbox/runtime.js.tmp sandbox/runtime.js

clean:
	rm -rf $(VENV) build site *.egg-info soak-report.txt
