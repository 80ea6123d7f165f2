"""Spark mode benchmark: session start, the example pipeline's wall time, and read / write
throughput of mockbroker.spark's data source for 100k events.

    .venv/bin/python bench/spark.py [--events 100000] [--reps 3]     # or: make bench-spark

Theory of operation: session start and the example pipeline are timed in fresh interpreters
(`python -c ...`, `examples/spark_pipeline.py`), since a JVM starts once per process. The
throughput phases share one local[2] session and one in-process 3-broker mockbroker: the
events (the example's JSON, ~90 bytes each) are generated and cached in Spark first, one
warm-up round runs untimed (Python workers start, code is generated), then each phase runs
`--reps` times and the median is reported. Phases: batch write (DataFrame -> topic), batch read
(topic -> sum of value lengths, so every row crosses from the Python worker into the JVM),
streaming read (Trigger.AvailableNow into the noop sink) and streaming copy (topic -> topic).
Numbers are measurements, not test assertions.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
PARTITIONS = 4


def timed_process(args: list[str]) -> tuple[float, str]:
    start = time.monotonic()
    done = subprocess.run(args, capture_output=True, text=True, timeout=900, cwd=REPO,
                          check=True)
    return time.monotonic() - start, done.stdout


def session_start(reps: int) -> list[float]:
    code = ("import time; t = time.monotonic(); from mockbroker.spark import local_session; "
            "local_session(); print(time.monotonic() - t)")
    return [float(timed_process([sys.executable, "-c", code])[1].split()[-1])
            for _ in range(reps)]


def median_rate(events: int, reps: int, run: Callable[[int], None]) -> tuple[float, float]:
    """(median msgs/s, median seconds) of `reps` timed calls after one warm-up call."""
    run(-1)
    seconds = []
    for rep in range(reps):
        start = time.monotonic()
        run(rep)
        seconds.append(time.monotonic() - start)
    median = statistics.median(seconds)
    return events / median, median


def throughput(events: int, reps: int) -> dict[str, tuple[float, float]]:
    sys.path.insert(0, str(REPO / "examples"))
    from pyspark.sql import functions as F
    from spark_pipeline import make_events

    from mockbroker.embedded import MockClusterThread
    from mockbroker.spark import local_session, register

    spark = local_session("bench-spark")
    fmt = register(spark)
    results: dict[str, tuple[float, float]] = {}
    with MockClusterThread(brokers=3) as mock:
        boot = mock.bootstrap_servers
        rows = [(e["user"], json.dumps(e)) for e in make_events(events)]
        frame = spark.createDataFrame(rows, "key string, value string").repartition(2).cache()
        assert frame.count() == events

        def topic(name: str) -> str:
            mock.control.create_topic(name, partitions=PARTITIONS)
            return name

        def write(rep: int) -> None:
            (frame.write.format(fmt).mode("append").option("kafka.bootstrap.servers", boot)
             .option("topic", topic(f"write-{rep}")).save())

        results["batch write"] = median_rate(events, reps, write)

        def source(**options: str) -> Any:
            return (spark.read.format(fmt).option("kafka.bootstrap.servers", boot)
                    .option("subscribe", "write-0").options(**options))

        def read(_rep: int) -> None:
            total = source().load().agg(F.sum(F.length("value"))).collect()[0][0]
            assert total > events

        results["batch read"] = median_rate(events, reps, read)

        def stream(sink: str) -> Callable[[int], None]:
            def run(rep: int) -> None:
                with tempfile.TemporaryDirectory() as checkpoint:
                    reader = (spark.readStream.format(fmt).option("kafka.bootstrap.servers", boot)
                              .option("subscribe", "write-0")
                              .option("startingOffsets", "earliest").load())
                    writer = reader.select("key", "value").writeStream.format(sink) \
                        .option("checkpointLocation", checkpoint) \
                        .option("kafka.bootstrap.servers", boot)
                    if sink == fmt:
                        writer = writer.option("topic", topic(f"copy-{rep}"))
                    query = writer.trigger(availableNow=True).start()
                    assert query.awaitTermination(600)
                    assert sum(p["numInputRows"] for p in query.recentProgress) == events
            return run

        results["streaming read (noop sink)"] = median_rate(events, reps, stream("noop"))
        results["streaming copy (topic to topic)"] = median_rate(events, reps, stream(fmt))
    spark.stop()
    return results


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--events", type=int, default=100_000)
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--pipeline-events", type=int, default=20_000)
    args = parser.parse_args()

    starts = session_start(args.reps)
    print(f"Spark session start (fresh interpreter, import included): median "
          f"{statistics.median(starts):.1f} s of {len(starts)} "
          f"({', '.join(f'{s:.1f}' for s in starts)})", flush=True)
    wall, out = timed_process([sys.executable, "examples/spark_pipeline.py",
                               "--events", str(args.pipeline_events)])
    print(f"example pipeline, {args.pipeline_events:,} events, one command: {wall:.1f} s wall")
    print("    " + "\n    ".join(out.strip().splitlines()), flush=True)
    print(f"\n{args.events:,} events, {PARTITIONS} partitions, local[2], median of {args.reps}\n")
    print("| phase | msgs/s | seconds |\n|---|---:|---:|")
    for phase, (rate, seconds) in throughput(args.events, args.reps).items():
        print(f"| {phase} | {rate:,.0f} | {seconds:.2f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
