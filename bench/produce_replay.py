"""In-process replay of one Produce request: broker CPU per request without sockets.

Run as `.venv/bin/python bench/produce_replay.py [--size 100] [--requests 20000]`. Not a
test: it prints CPU microseconds per request (process time, steadier than wall time on a
shared machine), the median of --repeat rounds.

Why. bench/throughput_broker.py measures the whole broker process under load, which on a
shared machine moves by 10-20% from run to run. This replays the same framed Produce v7
request (acks=-1, one batch of records of --size bytes filling 16 KiB, as that bench sends)
through a broker's Connection.handle_frame, with a writer that only counts the bytes: the header peek, decode, authorization dispatch,
validation and CRC-32C, the append and its bookkeeping (with `--replicas 3`, the followers'
fetches too), and the response encode, i.e. everything but the socket reads and writes and
the event loop. `--profile FILE` writes a cProfile of one round to FILE.

Each replayed request gets a bytearray copy of the frame of its own, as a connection
receives every request into a bytearray of its own: the broker patches a produced batch in
place and keeps it as a view of that frame, so replaying one frame would make every stored
batch alias the same bytes. The copies are made in chunks of up to COPY_CHUNK_BYTES, between
the timed sections, so copying is not counted.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from raw_requests import build_record_batch, produce_request

COPY_CHUNK_BYTES = 32 << 20  # frames copied at a time (at most 200), outside the timed sections


class CountingTransport:
    """Just enough of a transport for Connection: accepts writes, never closes."""

    def __init__(self) -> None:
        self.bytes = 0

    def is_closing(self) -> bool:
        return False

    def get_write_buffer_size(self) -> int:
        return 0

    def get_protocol(self) -> None:
        return None


class CountingWriter:
    def __init__(self) -> None:
        self.transport = CountingTransport()

    def get_extra_info(self, name: str) -> Any:
        return ("127.0.0.1", 1) if name in ("peername", "sockname") else None

    def write(self, data: Any) -> None:
        self.transport.bytes += len(data)

    def writelines(self, buffers: Any) -> None:
        for data in buffers:
            self.write(data)


class TransactionalFrames:
    """`--transactional`: the request of a transactional producer inside its ongoing
    transaction, each copy with the next base sequence (and so its own CRC-32C), as a
    producer's successive requests carry them."""

    BASE_SEQUENCE = 53  # batch bytes 53-56, inside what the CRC-32C covers

    def __init__(self, cluster: Any, topic: str, size: int) -> None:
        from kafka_protocol_codec.records import RecordSpec, build_batch
        from raw_requests import records_per_batch

        txn = cluster.transactions
        init = txn.init_producer_id(f"{topic}-tx", 60_000)
        assert init.error == 0 and txn.add_partitions(
            f"{topic}-tx", init.producer_id, init.producer_epoch, [(topic, 0)]) == 0
        self.count = records_per_batch(size)
        self.batch = build_batch([RecordSpec(value=b"v" * size) for _ in range(self.count)],
                                 producer_id=init.producer_id,
                                 producer_epoch=init.producer_epoch, base_sequence=0,
                                 transactional=True)
        frame = produce_request(topic, 0, self.batch)[4:]
        self.before = frame[:len(frame) - len(self.batch)]  # the batch is the last field
        self.sequence = 0

    def next(self) -> bytearray:
        from kafka_protocol_codec.record_batches import store_crc

        batch = bytearray(self.batch)
        batch[self.BASE_SEQUENCE:self.BASE_SEQUENCE + 4] = self.sequence.to_bytes(4, "big")
        store_crc(batch)
        self.sequence += self.count
        return bytearray(self.before) + batch


async def replay(size: int, requests: int, repeat: int, profile: str | None,
                 replicas: int = 1,
                 transactional: bool = False) -> list[float]:
    from mockbroker.embedded import MockCluster
    from mockbroker.server.connection import Connection, ListenerContext

    async with MockCluster(brokers=replicas) as mock:
        await mock.control.create_topic("replay", partitions=1, replication_factor=replicas)
        server = mock.server
        node = mock.cluster.brokers[mock.cluster.image.topics["replay"].partitions[0].leader]
        ctx = ListenerContext(mock.cluster, node, server.advertised, hooks=server.hooks)
        conn = Connection(ctx, asyncio.StreamReader(), CountingWriter())  # type: ignore[arg-type]
        frame = produce_request("replay", 0, build_record_batch(size))[4:]
        sequenced = TransactionalFrames(mock.cluster, "replay", size) if transactional else None

        def copy() -> bytearray:
            return bytearray(frame) if sequenced is None else sequenced.next()
        topic_id = mock.cluster.image.topics["replay"].topic_id
        log = mock.cluster.log(topic_id, 0)
        assert log is not None
        handle = conn.handle_frame
        for _ in range(200):  # warm-up
            await handle(copy())
        rounds = []
        chunk = max(1, min(200, COPY_CHUNK_BYTES // len(frame)))
        for r in range(repeat):
            prof = cProfile.Profile() if profile and r == 0 else None
            elapsed = 0.0
            for start in range(0, requests, chunk):
                frames = [copy() for _ in range(min(chunk, requests - start))]
                if prof:
                    prof.enable()
                t0 = time.process_time()
                for each in frames:
                    await handle(each)
                elapsed += time.process_time() - t0
                if prof:
                    prof.disable()
            log.delete_records_before(log.log_end_offset)  # untimed: keeps memory flat
            if prof:
                prof.dump_stats(profile)
            else:
                rounds.append(elapsed / requests * 1e6)
        return rounds


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--size", type=int, default=100)
    p.add_argument("--requests", type=int, default=20000)
    p.add_argument("--repeat", type=int, default=5)
    p.add_argument("--profile", default=None)
    p.add_argument("--replicas", type=int, default=1,
                   help="brokers and replicas of the partition (the leader is sent to; its "
                        "followers fetch in the append)")
    p.add_argument("--transactional", action="store_true",
                   help="a transactional producer's requests, inside its ongoing transaction")
    args = p.parse_args()
    if args.replicas < 1:
        p.error("--replicas must be at least 1")
    rounds = asyncio.run(replay(args.size, args.requests, args.repeat + bool(args.profile),
                                args.profile, args.replicas,
                                args.transactional))
    print(f"size {args.size} B, {args.replicas} replica(s)"
          f"{', transactional' if args.transactional else ''}: "
          f"{statistics.median(rounds):.1f} us/request "
          f"(rounds {', '.join(f'{x:.1f}' for x in rounds)})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
