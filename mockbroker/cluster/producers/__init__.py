"""Producers: producer ids, epochs and sequences, and transactions.

Owns the idempotent-producer state of each partition log and the transaction
coordinator (one state machine per transactional.id, markers, transactional
offsets).
"""
