"""The conformance corpus, one module per API family; importing this package registers every
case (tests/conformance/registry.py)."""

from tests.conformance.cases import api_versions, findings, metadata  # noqa: F401
