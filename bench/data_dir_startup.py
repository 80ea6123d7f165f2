"""Start-up time of a cluster restarted on a data directory holding ~100 MB of records.

Run as `.venv/bin/python bench/data_dir_startup.py [--megabytes 100] [--brokers 3]
[--batch-bytes 16384] [--repeat 3]`. Not a test: it prints a markdown table.

A Cluster (the model, no sockets) with `data_dir` is filled with batches of the given size
through the produce path (replication factor = brokers, so every broker writes its replica's
segment), closed, then built again on the directory `--repeat` times; the time reported is
the median of the constructions: reading every segment, checking every batch's CRC-32C,
rebuilding producer state and epoch caches, replaying the metadata log. Batches of 16 KiB
are what a Java producer's default batch.size makes; 1 MiB ones are the large-message case.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from pathlib import Path

from kafka_protocol_codec.records import RecordSpec, build_batch

from mockbroker.cluster import Cluster, ClusterConfig

RECORD_OVERHEAD = 128


def fill(directory: Path, megabytes: int, brokers: int, batch_bytes: int,
         partitions: int) -> int:
    cluster = Cluster(ClusterConfig(brokers=brokers, data_dir=str(directory)))
    for broker in range(brokers):
        cluster.start_broker(broker, "127.0.0.1", 9092 + broker)
    cluster.create_topic("bench", partitions, brokers)
    value_size = min(1024, batch_bytes - RECORD_OVERHEAD)
    per_batch = max(1, batch_bytes // (value_size + 16))
    batch = bytes(build_batch([RecordSpec(value=os.urandom(value_size), timestamp=1)
                               for _ in range(per_batch)]))
    batches = megabytes * 1_000_000 // len(batch)
    for index in range(batches):
        partition = index % partitions
        part = cluster.image.partition("bench", partition)
        assert part is not None
        result = cluster.produce(cluster.brokers[part.leader], "bench", partition, batch,
                                 acks=-1)
        assert result.ok, result
    cluster.close_storage()
    return batches * len(batch)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--megabytes", type=int, default=100)
    parser.add_argument("--brokers", type=int, default=3)
    parser.add_argument("--partitions", type=int, default=4)
    parser.add_argument("--batch-bytes", type=int, default=16384)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="mockbroker-datadir-") as tmp:
        directory = Path(tmp)
        t0 = time.perf_counter()
        stored = fill(directory, args.megabytes, args.brokers, args.batch_bytes,
                      args.partitions)
        fill_seconds = time.perf_counter() - t0
        on_disk = sum(p.stat().st_size for p in directory.rglob("*.log"))
        timings = []
        for _ in range(args.repeat):
            t0 = time.perf_counter()
            cluster = Cluster(ClusterConfig(brokers=args.brokers, data_dir=str(directory)))
            timings.append(time.perf_counter() - t0)
            unique = {id(b.data): len(b.data) for log in cluster.replication.all_logs()
                      for b in log.batches}  # replicas share a batch's bytes
            held = sum(unique.values())
            cluster.close_storage()
    print(f"| {stored / 1e6:.0f} MB of {args.batch_bytes} B batches, {args.brokers} "
          f"broker(s), {args.partitions} partitions | {on_disk / 1e6:.0f} MB on disk | "
          f"filled in {fill_seconds:.1f} s | start {statistics.median(timings):.2f} s "
          f"(median of {args.repeat}: {', '.join(f'{t:.2f}' for t in timings)}) | "
          f"batch bytes in memory {held / 1e6:.0f} MB |")


if __name__ == "__main__":
    main()
