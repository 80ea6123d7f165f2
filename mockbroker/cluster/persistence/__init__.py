"""Persistence (--data-dir): what is written, and the start-up that reads it back.

Owns the storage the cluster writes through (memory only, or a data directory),
the replica logs' segment files and checkpoints, and the restore at start-up.
"""
