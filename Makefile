# hierviz: `make demo` sets everything up and runs the main job; `make test` sets up and runs the tests.
PY ?= python3.11
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.setup-stamp
# the tests run in this many processes (pytest-xdist; each test file stays in one of them)
TEST_WORKERS ?= 2
PYTEST := $(BIN)/python -m pytest -q -ra -n $(TEST_WORKERS) --dist loadfile

.PHONY: setup demo test check lint typecheck test-zoo-compile clean snapshot api-snapshot docs

setup: $(STAMP)
	@bash scripts/system_deps.sh

$(STAMP): pyproject.toml requirements-setup.txt
	@test -x $(BIN)/python || $(PY) -m venv $(VENV) || python3 -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -r requirements-setup.txt
	$(BIN)/python -m pip install -q --no-deps -e .
	@touch $(STAMP)

demo: setup
	$(BIN)/hierviz demo

test: setup lint typecheck
	$(PYTEST)

# the linter (ruff, configured in pyproject.toml)
lint: setup
	$(BIN)/ruff check .

# mypy over hierviz/ in its default mode (configured in pyproject.toml); check and test run it
typecheck: setup
	$(BIN)/mypy

# the fast inner loop: the linter and the type checker, then everything but the slow, browser, notebook
# and zoo-compile tests
check: setup lint typecheck
	$(PYTEST) -m "not slow and not browser and not notebook and not zoo_compile"

test-zoo-compile: setup
	$(BIN)/python -m pytest -q -ra -m zoo_compile tests/support/test_support_inductor.py

# the docs site and the API reference from the docstrings (mkdocs.yml) into site/; a warning fails it
docs: setup
	$(BIN)/mkdocs build --strict

snapshot: setup
	$(BIN)/python scripts/snapshot_converters.py

# rewrite tests/expect/public_api.txt after a deliberate change of the public API (review its diff)
api-snapshot: setup
	HIERVIZ_ACCEPT_API=1 $(BIN)/python -m pytest -q tests/test_public_api.py

clean:
	rm -rf $(VENV) hierviz-demo .pytest_cache build site *.egg-info
