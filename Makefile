# The README's commands. `make install` is implied by every target that runs code.
PYTHON ?= python3
UV_VERSION := 0.13.9
TOOLS := .tools
UV := $(TOOLS)/bin/uv
VENV := .venv
STAMP := $(VENV)/.signoff-installed
BIN := $(VENV)/bin
JS := tests/js
JS_STAMP := $(JS)/node_modules/.package-lock.json
# The suite waits on real processes (servers, browsers, npm peers) much of the time: two workers,
# each given whole files, overlap those waits (1.7x on a 2-core machine).
PYTEST := $(BIN)/pytest -n 2 --dist loadfile --durations=15

# uv uses this machine's Python (>= 3.11) and never downloads one.
export UV_PYTHON_DOWNLOADS := never
export VIRTUAL_ENV := $(CURDIR)/$(VENV)

.PHONY: install ready test test-all pytest lint format typecheck bench demo lock clean chromium debian verify chaos screenshots dist

install: $(STAMP)

$(UV):
	$(PYTHON) -m venv $(TOOLS)
	$(TOOLS)/bin/python -m pip install --quiet --disable-pip-version-check uv==$(UV_VERSION)

# requirements.lock pins every dependency with its hashes; regenerate it with `make lock`.
# The dependencies are compiled to bytecode once here (half a minute), as pip does and uv does not:
# else a shell with PYTHONDONTWRITEBYTECODE compiles them at every start (`signoff --help` 0.65 s
# instead of 0.19 s on a 2-core machine, and each of the suite's processes likewise).
$(STAMP): pyproject.toml requirements.lock | $(UV)
	$(UV) venv --quiet --allow-existing --python $(PYTHON) $(VENV)
	$(UV) pip sync --quiet --require-hashes --compile-bytecode requirements.lock
	$(UV) pip install --quiet --no-deps --editable .
	touch $@

# The type check (a minute of one core on a fresh clone: mypy has no cache yet) runs beside the
# tests, whose processes leave a core idle much of the time; its report shows when it is done, and
# the tests' summary stays last. Under CI (CI=true) the property, fuzz and chaos tests run their
# full counts; a developer's run samples lighter, to stay within minutes on two cores.
test: ready chromium debian
	@types=$$(mktemp); \
	{ $(BIN)/mypy >"$$types" 2>&1; typed=$$?; printf '\n%s\n' "$(BIN)/mypy"; cat "$$types"; \
	  rm -f "$$types"; exit $$typed; } & mypy=$$!; \
	$(PYTEST); tests=$$?; \
	wait $$mypy || { echo "make test: the type check failed (its report is above)"; exit 1; }; \
	exit $$tests

# The Python environment (then its lint) and the npm peers are made side by side: about 50 s and
# 40 s on a fresh clone, one mostly compiling, the other mostly unpacking.
ready:
	@$(MAKE) --no-print-directory $(JS_STAMP) & peers=$$!; \
	$(MAKE) --no-print-directory lint; linted=$$?; \
	wait $$peers || { echo "make: the npm peers (tests/js) could not be installed"; exit 1; }; \
	exit $$linted

# Every test: what CI runs. `make test` leaves the heaviest to it (tests marked heavy, the
# end-to-end tier, the PostgreSQL runs of the framework and protocol tests): see tests/conftest.py.
test-all: export SIGNOFF_TEST_ALL := 1
test-all: test

pytest: install $(JS_STAMP) chromium debian
	$(PYTEST)

# The browser tests drive Debian's Chromium (Playwright cannot download a browser here), the one
# system package `make test` may install: under CI, or when SIGNOFF_INSTALL=yes, it does (as root or
# with passwordless sudo); at a terminal it asks first; otherwise those tests are skipped.
chromium:
	@command -v chromium >/dev/null || { \
		if [ -n "$$CI" ] || [ "$$SIGNOFF_INSTALL" = yes ]; then answer=y; \
		elif [ -t 0 ]; then printf "chromium is not installed; install Debian's chromium with apt for the browser tests? [y/N] "; read -r answer; \
		else answer=n; fi; \
		if [ "$$answer" != y ]; then echo "chromium is not installed: the browser tests will be skipped"; \
		elif [ "$$(id -u)" = 0 ]; then apt-get update -qq && apt-get install -y -qq chromium; \
		elif command -v sudo >/dev/null && sudo -n true 2>/dev/null; then \
			sudo apt-get update -qq && sudo apt-get install -y -qq chromium; \
		else echo "chromium is not installed (and apt needs root): the browser tests will be skipped"; fi; }

# Prometheus (the metrics tests scrape with it), Spin (it checks the protocols' models, with the
# machine's C compiler) and libfaketime (a replica an hour ahead) are Debian packages that are
# unpacked into .tools/debian, not installed: `apt-get download` and `dpkg-deb -x`, no service, no
# root needed (root refreshes apt's package lists where a fresh machine has none). Without them,
# the tests that need them are skipped (and fail under CI).
DEBIAN := $(TOOLS)/debian
DEBIAN_PACKAGES := prometheus spin libfaketime
debian: $(DEBIAN)/.unpacked

$(DEBIAN)/.unpacked:
	@mkdir -p $(DEBIAN)/debs && cd $(DEBIAN)/debs && \
	{ apt-get download $(DEBIAN_PACKAGES) >/dev/null 2>&1 || \
	  { [ "$$(id -u)" = 0 ] && apt-get update -qq && apt-get download $(DEBIAN_PACKAGES) >/dev/null 2>&1; }; } && \
	for deb in *.deb; do dpkg-deb -x "$$deb" ..; done && rm -f *.deb && touch ../.unpacked || \
	echo "could not fetch Debian's $(DEBIAN_PACKAGES): the tests that need them will be skipped"

# Three workers as well as two, and two aborted transactions: minutes and a few GB, not seconds.
verify: install debian
	$(BIN)/python -m tests.verify.spin

# Two replicas and a PostgreSQL of their own in network namespaces (root only), partitioned,
# killed and paused under a workload, then checked (tests/chaos/partitions.py): the large size,
# a few minutes; `make test-all` and CI run the small one.
chaos: install
	$(BIN)/python -m tests.chaos.partitions

# Save each page of the web inbox to docs/images/ (the README and docs/ show them).
screenshots: install chromium
	SIGNOFF_SCREENSHOTS=1 $(BIN)/pytest tests/web -q

# The real npm peers the tests drive, pinned by tests/js/package-lock.json.
$(JS_STAMP): $(JS)/package.json $(JS)/package-lock.json
	npm ci --prefix $(JS) --no-audit --no-fund --loglevel=error
	touch $@

lint: install
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

format: install
	$(BIN)/ruff format .
	$(BIN)/ruff check --fix .

typecheck: install
	$(BIN)/mypy

bench: install
	$(BIN)/python bench/policy.py
	$(BIN)/python bench/approvals.py
	$(BIN)/python bench/insights.py
	$(BIN)/python bench/pause_resume.py
	$(BIN)/python bench/server.py
	$(BIN)/python bench/inbox.py
	$(BIN)/python bench/a2a_roundtrip.py
	$(BIN)/python bench/mcp_gateway.py
	$(BIN)/python bench/coding_agents.py
	$(BIN)/python bench/integrations.py
	$(BIN)/python bench/frameworks.py
	$(BIN)/python bench/overhead.py
	$(BIN)/python bench/peers.py
	$(BIN)/python bench/telemetry.py

demo: install
	$(BIN)/signoff demo $(ARGS)

lock: | $(UV)
	$(UV) pip compile pyproject.toml --group dev --group bench --universal --generate-hashes \
		--no-emit-index-url --no-header --python-version 3.11 -o requirements.lock

# The wheel and the sdist in dist/, as a release would publish them (the wheel carries the web
# inbox and the example policies): `pip install 'dist/signoff-0.1.0-py3-none-any.whl[server]'`.
dist: | $(UV)
	rm -rf dist
	$(UV) build --out-dir dist

clean:
	rm -rf $(VENV) $(TOOLS) $(JS)/node_modules .pytest_cache .mypy_cache .ruff_cache .hypothesis
