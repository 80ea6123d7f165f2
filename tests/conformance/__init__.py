"""Differential conformance: the same requests to real Kafka and to mockbroker, compared."""
