# mockbroker: set-up, test, lint, codegen and benchmarks.
# `make run` and `make test` do all set-up on a fresh Debian machine.

PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
SCHEMAS ?= ../shared/kafka-message-schemas
RECORD_SCHEMAS ?= ../shared/kafka-metadata-record-schemas
STAMP := $(VENV)/.installed-$(shell cat pyproject.toml | cksum | cut -d' ' -f1)

.PHONY: all venv run test lint codegen bench sysdeps clean

all: test

$(STAMP): pyproject.toml
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[dev]'
	@rm -f $(VENV)/.installed-*
	@touch $@

venv: $(STAMP)

# System packages the client tests need (kcat). Installed only when missing.
sysdeps:
	@command -v kcat >/dev/null 2>&1 || command -v kafkacat >/dev/null 2>&1 || { \
	  echo "installing kcat with apt-get"; \
	  SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq kcat >/dev/null; }

run: venv
	$(PY) -m mockbroker --brokers 3 --port 9092

test: venv sysdeps
	$(PY) -m pytest -q -p no:cacheprovider

lint: venv
	$(VENV)/bin/ruff check protocol mockbroker tests bench
	@mkdir -p build/mypy-path && ln -sfn ../../protocol build/mypy-path/kafka_protocol_codec
	MYPYPATH=build/mypy-path $(VENV)/bin/mypy -p kafka_protocol_codec
	MYPYPATH=build/mypy-path $(VENV)/bin/mypy -p mockbroker

codegen: venv
	$(PY) -m kafka_protocol_codec.codegen --schemas $(SCHEMAS) --record-schemas $(RECORD_SCHEMAS) --out protocol/generated

bench: venv
	$(PY) bench/codec.py
	$(PY) bench/throughput.py

clean:
	rm -rf $(VENV) build *.egg-info
