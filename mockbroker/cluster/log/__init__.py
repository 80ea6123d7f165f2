"""Partition logs and replication: the data a broker stores and serves.

Owns each replica's PartitionLog (its stored batches, segments and leader-epoch
cache), the produce path's checks before an append, followers fetching from the
leader (high watermark, ISR by lag), leader-epoch fencing and leadership checks,
fetch sessions (KIP-227), the read-replica selector (KIP-392), retention and
compaction, and the logical log directories (KIP-858).
"""
