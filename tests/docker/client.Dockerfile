# The compose file's `app` for tests/docker: a base image with python3 plus confluent-kafka,
# installed from the wheels in the build context (build/docker-wheels), without a network.
ARG BASE=python:3.11-slim
FROM ${BASE}
LABEL org.opencontainers.image.title=mockbroker-test-client
COPY . /tmp/wheels
RUN python3 -m venv /opt/client \
    && /opt/client/bin/pip install -q --no-index --find-links /tmp/wheels 'confluent-kafka>=2.4,<3' \
    && rm -rf /tmp/wheels
ENV PATH=/opt/client/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    PYTHONUNBUFFERED=1
