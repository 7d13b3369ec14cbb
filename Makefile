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
PYTEST := $(BIN)/pytest -n 2 --dist loadfile

# uv uses this machine's Python (>= 3.11) and never downloads one.
export UV_PYTHON_DOWNLOADS := never
export VIRTUAL_ENV := $(CURDIR)/$(VENV)

.PHONY: install test pytest lint format typecheck bench demo lock clean chromium prometheus spin faketime verify chaos screenshots dist

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
test: lint $(JS_STAMP) chromium prometheus spin faketime
	@types=$$(mktemp); \
	{ $(BIN)/mypy >"$$types" 2>&1; typed=$$?; printf '\n%s\n' "$(BIN)/mypy"; cat "$$types"; \
	  rm -f "$$types"; exit $$typed; } & mypy=$$!; \
	$(PYTEST); tests=$$?; \
	wait $$mypy || { echo "make test: the type check failed (its report is above)"; exit 1; }; \
	exit $$tests

pytest: install $(JS_STAMP) chromium prometheus spin faketime
	$(PYTEST)

# The browser tests drive Debian's Chromium (Playwright cannot download a browser here). Installed
# when missing and this user may; otherwise those tests are skipped (and fail under CI).
chromium:
	@command -v chromium >/dev/null || { \
		if [ "$$(id -u)" = 0 ]; then apt-get update -qq && apt-get install -y -qq chromium; \
		elif command -v sudo >/dev/null && sudo -n true 2>/dev/null; then \
			sudo apt-get update -qq && sudo apt-get install -y -qq chromium; \
		else echo "chromium is not installed: the browser tests will be skipped"; fi; }

# The metrics tests scrape a server with a real Prometheus (Debian's package; its service is not
# started: the tests run their own). Installed like Chromium, else those tests are skipped.
prometheus:
	@command -v prometheus >/dev/null || { \
		if [ "$$(id -u)" = 0 ]; then apt-get update -qq && \
			apt-get install -y -qq --no-install-recommends prometheus && \
			{ systemctl disable --now prometheus 2>/dev/null || service prometheus stop 2>/dev/null || true; }; \
		elif command -v sudo >/dev/null && sudo -n true 2>/dev/null; then \
			sudo apt-get update -qq && sudo apt-get install -y -qq --no-install-recommends prometheus; \
		else echo "prometheus is not installed: the metrics scrape tests will be skipped"; fi; }

# The run-once protocol's model (verify/once.pml) is checked with Spin (Debian's package, with the
# C compiler it needs): by the tests at the bounds CI affords, and deeper by `make verify`.
spin:
	@command -v spin >/dev/null || { \
		if [ "$$(id -u)" = 0 ]; then apt-get update -qq && apt-get install -y -qq spin gcc; \
		elif command -v sudo >/dev/null && sudo -n true 2>/dev/null; then \
			sudo apt-get update -qq && sudo apt-get install -y -qq spin gcc; \
		else echo "spin is not installed: the model-checking tests will be skipped"; fi; }

# A replica whose clock runs an hour ahead is a real `signoff serve` under libfaketime (Debian's
# faketime package): the tests show it decides nothing early. Installed like Spin.
faketime:
	@command -v faketime >/dev/null || { \
		if [ "$$(id -u)" = 0 ]; then apt-get update -qq && apt-get install -y -qq faketime; \
		elif command -v sudo >/dev/null && sudo -n true 2>/dev/null; then \
			sudo apt-get update -qq && sudo apt-get install -y -qq faketime; \
		else echo "faketime is not installed: the skewed-clock tests will be skipped"; fi; }

# Three workers as well as two, and two aborted transactions: minutes and a few GB, not seconds.
verify: install spin
	$(BIN)/python -m tests.verify.spin

# Two replicas and a PostgreSQL of their own in network namespaces (root only), partitioned,
# killed and paused under a workload, then checked (tests/chaos/partitions.py): the large size,
# a few minutes; `make test` runs the small one.
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
	$(BIN)/python bench/integrations.py
	$(BIN)/python bench/frameworks.py
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
