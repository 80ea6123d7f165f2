"""The controller and its metadata log, KRaft-shaped.

Owns the metadata log and the images built from it (the controller's and each
broker's, at its own applied offset), the controller's decisions (brokers, topics,
partitions, leaders, ISRs, configs, producer ids), partition reassignments, broker
heartbeats and the lowest acknowledged metadata offset, images at past offsets for
consistent reads, and finalized features with their renegotiation.
"""
