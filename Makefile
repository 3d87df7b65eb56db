# The two entry points a newcomer needs (see README):
#   make demo   the product's main job end to end on local defaults
#   make test   lint, type-check and the whole test suite (what CI runs)
# Both create .venv and start the services they need (Redis, RabbitMQ for the broker
# tests; the local S3 endpoint is started by the demo and the tests themselves).

PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed-$(shell cat pyproject.toml | cksum | cut -d' ' -f1)

.PHONY: test demo lint lint-infra typecheck services venv clean

venv: $(STAMP)

$(STAMP): pyproject.toml
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else "Python >= 3.11 is needed")'
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	@rm -f $(VENV)/.installed-* && touch $@

services:
	@tools/services.sh redis
	@tools/services.sh rabbitmq

lint: venv
	$(BIN)/ruff check worker tests
	$(BIN)/ruff format --check worker tests
	$(BIN)/lint-imports

typecheck: venv
	$(BIN)/mypy

# The container image and the cloud templates (tests/infra validates compose and k8s).
lint-infra: venv
	$(BIN)/hadolint Dockerfile
	$(BIN)/cfn-lint infra/aws/*.yaml

test: venv services lint lint-infra typecheck
	$(BIN)/python -m pytest -q

demo: venv services
	$(BIN)/python -m worker.cli.demo

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache .hypothesis
