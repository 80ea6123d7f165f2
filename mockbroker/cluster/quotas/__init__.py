"""Quotas: client quotas and controller mutation quotas.

Owns the client quota entities (ClientQuotaRecords in the metadata log), each
broker's rate windows and throttle times, and KIP-599's token buckets.
"""
