"""Group coordinators: classic, KIP-848 consumer and KIP-932 share groups.

Owns the groups' state machines on the injected clock, the server-side assignors,
mixed groups and online migration between classic and consumer groups, share-
partitions' record states, and committed offsets (who may commit, fetch and delete
them).
"""
