# The two entry points a newcomer needs (see README):
#   make demo   the product's main job end to end on local defaults
#   make test   lint, type-check and the whole test suite (what CI runs)
#   make test-fast   the suite without process-level tests (marked services or slow)
#   make demo KEEP=1, make demo-stop   the same, left running to try commands on
#   make bench  every benchmark under bench/, then one table (tools/run_bench.py)
#   make docs   the manual (docs/, MkDocs) built with --strict: broken links fail
# They create .venv; the tests use Redis on $TFCOMPAT_TEST_REDIS_PORT, default 6379
# (started when nothing answers there; an error when something else does),
# RabbitMQ for the broker tests (a virtual host added, and deleted after `make test`)
# and Debian's Chromium for the fleet page's (installed with apt-get when missing), the
# demo its own; the demo, the tests and the benchmarks start their local S3 endpoint.

PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
comma  := ,
STAMP  := $(VENV)/.installed-$(shell cat pyproject.toml | cksum | cut -d' ' -f1)

.PHONY: test test-fast demo demo-stop bench docs lint lint-infra typecheck services venv clean

venv: $(STAMP)

$(STAMP): pyproject.toml
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else "Python >= 3.11 is needed")'
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	@echo "venv: installing the worker and its development tools into $(VENV)" \
	  "(pip install -e '.[dev]': about 2 minutes with a warm pip cache, longer on a cold one)"
	$(BIN)/python -m pip install --upgrade --progress-bar on pip
	$(BIN)/python -m pip install --progress-bar on -e '.[dev]'
	@rm -f $(VENV)/.installed-* && touch $@

services:
	@tools/services.sh redis
	@tools/services.sh rabbitmq
	@tools/services.sh chromium

lint: venv
	$(BIN)/ruff check worker tests
	$(BIN)/ruff format --check worker tests
	$(BIN)/lint-imports

typecheck: venv
	$(BIN)/mypy

# The container image and the cloud templates (tests/infra validates compose and k8s, and
# holds compose to the same hardening), then checkov's security checks over them: any failed
# check fails the build; a check skipped says why where it is skipped (docs/security.md).
# checkov lives in its own venv: its pins clash with ours. Offline at run time: no update
# check, no download of check metadata or external modules.
SCAN        := .venv-scan
CHECKOV     := 3.3.30
SCAN_STAMP  := $(SCAN)/.installed-checkov-$(CHECKOV)
CHECKOV_RUN := CKV_SKIP_PACKAGE_UPDATE_CHECK=true BC_SKIP_MAPPING=TRUE \
	$(SCAN)/bin/checkov --skip-download --download-external-modules false \
	--skip-results-upload --quiet --compact

$(SCAN_STAMP):
	@test -x $(SCAN)/bin/python || $(PYTHON) -m venv $(SCAN)
	$(SCAN)/bin/python -m pip install --upgrade --progress-bar on pip
	$(SCAN)/bin/python -m pip install --progress-bar on checkov==$(CHECKOV)
	@rm -f $(SCAN)/.installed-* && touch $@

lint-infra: venv $(SCAN_STAMP)
	$(BIN)/hadolint Dockerfile
	$(BIN)/cfn-lint infra/aws/*.yaml
	$(CHECKOV_RUN) --framework kubernetes -d infra/k8s
	$(CHECKOV_RUN) --framework cloudformation -d infra/aws
	$(CHECKOV_RUN) --framework dockerfile -f Dockerfile

# The broker tests' RabbitMQ virtual host (`make services` adds it) is deleted after the
# suite, whatever its result. The suite runs as two streams at once, each on its own
# Redis, since a test file empties the Redis databases it uses:
# - the live tests (LIVE_TESTS: real Celery workers, brokers restarted, MLflow down, and the
#   services script's, which adds and deletes the RabbitMQ virtual host the broker tests
#   use) in two processes (pytest-xdist), a file staying in one, the longest first and the
#   files using RabbitMQ together in one (tests/live_scheduling.py), each process on a
#   Redis of its own: TFCOMPAT_TEST_REDIS_PORT (6379) and THIRD_REDIS_PORT (started when
#   nothing answers); their output shown as they run; they mostly wait on processes, so
#   they leave the cores to the other stream;
# - beside them, the tests of the pure packages (PURE_TESTS: rules, readers, catalog, fleet
#   logic: no Redis, broker, S3 or worker process) one pytest process per core, a file
#   staying in one process, then the rest (the page, the sinks, the CLI, the demo) in one
#   process, on a Redis of their own on SECOND_REDIS_PORT (started when nothing answers);
#   their output follows the live tests'.
PURE_TESTS := tests/catalog tests/compat tests/fix tests/fleet tests/formats tests/model \
	tests/proto tests/registries tests/standins
LIVE_TESTS := tests/pipeline tests/test_services_script.py
SECOND_REDIS_PORT ?= 16379
THIRD_REDIS_PORT ?= 16380
test: venv services lint lint-infra typecheck docs
	@TFCOMPAT_TEST_REDIS_PORT=$(SECOND_REDIS_PORT) tools/services.sh redis
	@TFCOMPAT_TEST_REDIS_PORT=$(THIRD_REDIS_PORT) tools/services.sh redis
	@mkdir -p .cache && rm -f .cache/test-pure.* .cache/test-rest.*
	@echo "test: the live tests run here, in two processes (Redis on ports" \
	  "$${TFCOMPAT_TEST_REDIS_PORT:-6379} and $(THIRD_REDIS_PORT)); the pure tests and then the rest" \
	  "run beside them (Redis on port $(SECOND_REDIS_PORT)), their output shown when the live tests end"
	@(export TFCOMPAT_TEST_REDIS_PORT=$(SECOND_REDIS_PORT); \
	  $(BIN)/python -m pytest -q -n 2 --dist loadfile $(PURE_TESTS) \
	    >.cache/test-pure.log 2>&1; echo $$? >.cache/test-pure.rc; \
	  $(BIN)/python -m pytest -q $(addprefix --ignore=,$(PURE_TESTS) $(LIVE_TESTS)) \
	    >.cache/test-rest.log 2>&1; echo $$? >.cache/test-rest.rc) & \
	TFCOMPAT_TEST_REDIS_PORTS=$${TFCOMPAT_TEST_REDIS_PORT:-6379},$(THIRD_REDIS_PORT) \
	  $(BIN)/python -m pytest -q -n 2 --dist loadfile $(LIVE_TESTS); live=$$?; wait; \
	echo "== the pure packages' tests (.cache/test-pure.log)"; cat .cache/test-pure.log; \
	echo "== the other tests (.cache/test-rest.log)"; cat .cache/test-rest.log; \
	tools/services.sh rabbitmq-remove; test $$live -eq 0 \
	  && test "$$(cat .cache/test-pure.rc)" = 0 && test "$$(cat .cache/test-rest.rc)" = 0

# The manual, built offline with --strict (mkdocs.yml): a link to a missing page or
# anchor, or a page left out of the nav, fails it. The site goes to .cache/site.
docs: venv
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict --quiet

# The edit-test loop: everything but real worker processes, broker restarts, the demo,
# browsers and pre-commit runs (pytest markers `services` and `slow`). CI runs `make test`.
# One pytest process per core (pytest-xdist); a test file stays in one process, since a
# file's tests share its Redis database and module fixtures.
test-fast: venv
	$(BIN)/python -m pytest -q -m "not services and not slow" -n auto --dist loadfile

# The demo starts its own redis-server on a free port (TFCOMPAT_DEMO_REDIS_URL picks one
# instead). KEEP=1 leaves the stack running, with the commands to try; demo-stop ends it.
demo: venv
	$(BIN)/python -m worker.cli.demo $(if $(KEEP),--keep)

demo-stop:
	$(BIN)/python -m worker.cli.demo --stop

# Timings, not tests: each bench/*.py script with a __main__ block, one after the
# other, then their result rows as one table with the machine's load noted.
# BENCH=name1,name2 runs only those; RESULTS=FILE also writes the run as JSON, which
# tools/bench_doc.py renders into docs/benchmarks.md.
bench: venv services
	$(BIN)/python tools/run_bench.py $(if $(BENCH),--only $(subst $(comma), ,$(BENCH))) $(if $(RESULTS),--results $(RESULTS))

clean:
	rm -rf $(VENV) $(SCAN) .pytest_cache .mypy_cache .ruff_cache .hypothesis
