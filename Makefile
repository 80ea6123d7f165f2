# mockbroker: set-up, test, lint, codegen and benchmarks.
# `make run` and `make test` do all set-up on a fresh Debian machine.

PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
SCHEMAS ?= ../shared/kafka-message-schemas
RECORD_SCHEMAS ?= ../shared/kafka-metadata-record-schemas
# the tagged-field extensions compiled into the codecs (protocol/extensions.py)
EXTENSIONS ?= mockbroker/cluster/wire_extensions.py
STAMP := $(VENV)/.installed-$(shell cat pyproject.toml | cksum | cut -d' ' -f1)
# kafkajs (the Node.js client of tests/clients/test_kafkajs.py), from npm at the version of
# tests/kafkajs/package-lock.json; reinstalled when the lock file changes
KAFKAJS_STAMP := tests/kafkajs/node_modules/.installed-$(shell cat tests/kafkajs/package-lock.json | cksum | cut -d' ' -f1)

.PHONY: all venv accel wheel wheel-check run test lint codegen bench bench-checkout bench-spark \
	spark-example sysdeps kafkajs jvm \
	conformance \
	compat clean \
	docker-up docker-down crash-loop

all: test

# The editable install compiles nothing (MOCKBROKER_BUILD_COMPILED=no): `make accel` does.
$(STAMP): pyproject.toml
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	MOCKBROKER_BUILD_COMPILED=no $(PY) -m pip install -q -e '.[dev,spark]'
	@rm -f $(VENV)/.installed-*
	@touch $@

venv: $(STAMP)

# The optional compiled parts of the codec, built in place next to their sources by the package
# build itself (setup.py build_ext --inplace): the modules of setup.py's COMPILED, the one list
# the wheel holds too. Cython and setuptools rebuild a module when its source or an included
# .pxi is newer (the C files and objects stay in build/temp.*). Without them the pure Python
# code runs: a failed build is reported and does not stop the target that asked for it
# (`make test` sets KAFKA_PROTOCOL_CODEC_REQUIRE_ACCEL=1, so the suite then fails).
accel: venv
	@MOCKBROKER_BUILD_COMPILED=require $(PY) setup.py -q build_ext --inplace >build-accel.log 2>&1 \
	  && rm -f build-accel.log \
	  || echo "could not compile the codec's compiled parts (setup.py COMPILED), the pure" \
	       "Python fallback runs (see build-accel.log)"

# The sdist and the wheel users install, into dist/ (`python -m build`: the wheel is built from
# the sdist, with pyproject.toml's build requirements from the index); a module of setup.py's
# COMPILED that does not compile fails the build.
wheel: venv
	MOCKBROKER_BUILD_COMPILED=require $(PY) -m build --outdir dist .

# The wheel as a user gets it: built as `make wheel` does, its contents checked, installed with
# its dependencies from the index into a new venv (build/wheel-check-venv), and checked there
# (compiled parts loaded, a broker serving): tests/support/wheel.py. Minutes, so not part of
# `make test`, which checks a wheel built without isolation (tests/test_wheel.py).
wheel-check: venv
	$(PY) -m tests.support.wheel --venv build/wheel-check-venv --dist dist

run: venv accel
	$(PY) -m mockbroker --brokers 3 --port 9092

# System packages the tests need, each installed only when missing: kcat for the client
# tests, Node.js and npm for kafkajs, Docker's engine (docker.io), Compose and debootstrap for
# tests/docker, Chromium for the web view's browser test, Maven for real Kafka's jars, a Java
# 17+ runtime for the Spark tests (PySpark 4's driver is a JVM) and real Kafka. Debian
# bookworm has openjdk-17-jre-headless
# (default-jre-headless is the fallback); slim images lack the man directory its postinst
# links into, hence the mkdir. `apt` installs one package set after a single apt-get update
# (the first time anything is missing); a failed install stops the target.
APT_GET = $$( [ "$$(id -u)" = 0 ] || echo sudo ) env DEBIAN_FRONTEND=noninteractive apt-get
sysdeps:
	@apt() { why=$$1; shift; echo "installing $$why with apt-get"; \
	  [ -n "$$updated" ] || { $(APT_GET) update -qq && updated=1; } \
	  && $(APT_GET) install -y -qq "$$@" >/dev/null; }; \
	{ command -v kcat || command -v kafkacat; } >/dev/null 2>&1 \
	  || apt "kcat (the client tests)" kcat || exit 1; \
	{ command -v node && command -v npm; } >/dev/null 2>&1 \
	  || apt "Node.js and npm (the kafkajs tests)" nodejs npm || exit 1; \
	{ docker compose version || command -v docker-compose; } >/dev/null 2>&1 \
	  || apt "Compose (tests/docker runs docker/compose.yaml)" \
	       --no-install-recommends docker-compose || exit 1; \
	{ command -v dockerd && command -v debootstrap; } >/dev/null 2>&1 \
	  || apt "docker.io and debootstrap (tests/docker builds and runs the image)" \
	       --no-install-recommends docker.io debootstrap || exit 1; \
	{ command -v chromium || command -v chromium-browser; } >/dev/null 2>&1 \
	  || apt "Chromium (tests/control/test_webview.py drives the web view)" \
	       --no-install-recommends chromium || exit 1; \
	command -v mvn >/dev/null 2>&1 \
	  || apt "Maven (real Kafka's jars for tests/support/real_kafka.py)" \
	       --no-install-recommends maven || exit 1; \
	major=$$(java -version 2>&1 | sed -n 's/.* version "\([0-9]*\).*/\1/p' | head -n1); \
	if [ "$${major:-0}" -lt 17 ]; then \
	  $$( [ "$$(id -u)" = 0 ] || echo sudo ) mkdir -p /usr/share/man/man1; \
	  apt "a Java 17 runtime (found: $${major:-none})" openjdk-17-jre-headless \
	    || apt "the default Java runtime instead" default-jre-headless || exit 1; \
	fi

$(KAFKAJS_STAMP): tests/kafkajs/package.json tests/kafkajs/package-lock.json
	npm ci --prefix tests/kafkajs --no-audit --no-fund --loglevel=error
	@rm -f tests/kafkajs/node_modules/.installed-*
	@touch $@

kafkajs: sysdeps $(KAFKAJS_STAMP)

# Real Apache Kafka, the Java client, Kafka Streams and Kafka's tools (tests/jvm/pom.xml) from
# Maven Central into build/jvm/lib, the class path tests/support/real_kafka.py runs them from;
# copied again when the pom changes (Maven's own cache keeps the downloads). The suite's Java
# programs (tests/jvm/src) are compiled by the same project into build/jvm/classes.
JVM_STAMP := build/jvm/.resolved-$(shell cat tests/jvm/pom.xml | cksum | cut -d' ' -f1)
$(JVM_STAMP): tests/jvm/pom.xml
	@command -v mvn >/dev/null || { echo "Maven (mvn) is needed for real Kafka's jars"; exit 1; }
	rm -rf build/jvm/lib
	mvn -q -B -f tests/jvm/pom.xml dependency:copy-dependencies -DoutputDirectory=$(CURDIR)/build/jvm/lib
	@rm -f build/jvm/.resolved-*
	@touch $@

JVM_SOURCES := $(shell find tests/jvm/src -name '*.java' 2>/dev/null)
build/jvm/.compiled: $(JVM_STAMP) $(JVM_SOURCES)
	rm -rf build/jvm/classes
	mvn -q -B -f tests/jvm/pom.xml compile
	@touch $@

jvm: sysdeps $(JVM_STAMP) build/jvm/.compiled

# A Docker engine for tests/docker around the run: when none answers, scripts/dockerd.sh starts
# dockerd, and the trap stops it by its PID afterwards, also when pytest fails or is interrupted
# (an engine that already answered is left running). When dockerd cannot start, the run goes on
# and the Docker tests fail, saying so.
test: venv accel sysdeps kafkajs jvm
	@own=; trap '[ -z "$$own" ] || scripts/dockerd.sh stop' EXIT; trap 'exit 130' INT TERM; \
	if scripts/dockerd.sh status; then echo "using the running Docker engine"; else \
	  own=1; scripts/dockerd.sh start || echo "no Docker engine: the tests in tests/docker will fail"; \
	fi; \
	KAFKA_PROTOCOL_CODEC_REQUIRE_ACCEL=1 $(PY) -m pytest -q -p no:cacheprovider $(PYTEST_ARGS)

# the same engine by hand: `make docker-up`, then pytest tests/docker, docker compose, ...
docker-up: sysdeps
	scripts/dockerd.sh start

docker-down:
	scripts/dockerd.sh stop

lint: venv
	$(VENV)/bin/ruff check protocol mockbroker tests bench examples
	@mkdir -p build/mypy-path && ln -sfn ../../protocol build/mypy-path/kafka_protocol_codec
	MYPYPATH=build/mypy-path $(VENV)/bin/mypy -p kafka_protocol_codec
	MYPYPATH=build/mypy-path $(VENV)/bin/mypy -p mockbroker

codegen: venv
	$(PY) -m kafka_protocol_codec.codegen --schemas $(SCHEMAS) --record-schemas $(RECORD_SCHEMAS) \
	  --extensions $(EXTENSIONS) --out protocol/generated

# The benchmarks measure what users install: the wheel built from the checkout (sdist, then
# wheel) and installed with the `bench` extra (the peers) into a new venv, build/bench-venv,
# whose Python runs them. Each says what it measured (bench/measured.py: installed wheel or
# checkout, compiled parts loaded). `make bench-checkout` runs the same with the development
# environment (editable install, `make accel`'s modules), for the figures of the checkout.
BENCH_VENV := build/bench-venv
BENCH_SCRIPTS := codec validation throughput throughput_broker startup scale
bench: venv
	$(PY) -m tests.support.wheel --venv $(BENCH_VENV) --dist build/bench-dist --extras bench
	@set -e; for script in $(BENCH_SCRIPTS); do \
	  echo "== bench/$$script.py (installed wheel, $(BENCH_VENV))"; \
	  $(BENCH_VENV)/bin/python bench/$$script.py; \
	done

bench-checkout: venv accel
	@set -e; for script in $(BENCH_SCRIPTS); do \
	  echo "== bench/$$script.py (checkout)"; \
	  $(PY) bench/$$script.py; \
	done

# docs/conformance.md: the differential corpus (tests/conformance), the same requests to real
# Kafka and to mockbroker; `make test` writes it too whenever the whole corpus runs.
conformance: venv accel jvm
	KAFKA_PROTOCOL_CODEC_REQUIRE_ACCEL=1 $(PY) -m pytest -q -p no:cacheprovider tests/conformance

# docs/compatibility.md: which real client passed which capability, from the client suites.
compat: venv sysdeps kafkajs
	$(PY) -m pytest -q -p no:cacheprovider tests/clients tests/dynamics --compat-report docs/compatibility.md

# The SIGKILL-and-restart loop on --data-dir under load (tests/support/crash_loop.py) for
# longer than the suite's 20 restarts: `make crash-loop RESTARTS=100 SEED=7`. Prints the
# figures and every anomaly; exits 1 on any.
RESTARTS ?= 50
SEED ?= 1
crash-loop: venv accel
	$(PY) -m tests.support.crash_loop --restarts $(RESTARTS) --seed $(SEED)

# The Spark example (examples/spark_pipeline.py) against an in-process mockbroker.
spark-example: venv sysdeps
	$(PY) examples/spark_pipeline.py

# Spark session start, pipeline wall time, read/write throughput (README's Spark section).
bench-spark: venv sysdeps
	$(PY) bench/spark.py

clean:
	rm -rf $(VENV) build dist *.egg-info tests/kafkajs/node_modules protocol/_*_accel.c \
	  protocol/*.so build-accel.log
