"""Configuration: topic and broker config definitions, static broker properties.

Owns the config tables (defaults, types, validators, documentation) and the
server.properties a cluster's brokers start with.
"""
