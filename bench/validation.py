"""Cost of validating a produced batch (kafka_protocol_codec.validation.validate_batch).

Run as `.venv/bin/python bench/validation.py`. For 1, 100 and 1000 records of 100-byte values
(16-byte keys, no headers) in every codec, prints the best-of-N time per batch and per record
of: validate_batch with the record walk (protocol/record_walk.py) run as plain Python and
with its compiled build (when `make accel` built it), in the same run; the decompression
alone (its share of the total); and decode_batch, which builds Record objects, for comparison.
Figures in microseconds.

    .venv/bin/python bench/validation.py [--repeat N] [--headers]
"""

from __future__ import annotations

import argparse
import platform
import sys
import timeit
from collections.abc import Callable

from kafka_protocol_codec import record_batches as rb
from kafka_protocol_codec import records as r
from kafka_protocol_codec import validation
from kafka_protocol_codec.native import import_pure_mode, is_compiled
from kafka_protocol_codec.validation import validate_batch
from measured import statement  # bench/measured.py: installed wheel or checkout

PURE_WALK = import_pure_mode("record_walk", source=True)  # the .py, run as plain Python
BUILT_WALK = import_pure_mode("record_walk")  # its compiled build when there is one
COMPILED_WALK = BUILT_WALK if is_compiled(BUILT_WALK) else None

CODECS = {0: "none", 1: "gzip", 2: "snappy", 3: "lz4", 4: "zstd"}
SIZES = (1, 100, 1000)
LIMIT = 64 << 20
T0 = 1_700_000_000_000


def make_batch(count: int, codec: int, headers: bool) -> bytes:
    specs = [
        r.RecordSpec(
            key=b"key-%012d" % i,
            value=bytes((i + j) % 251 for j in range(100)),
            headers=[("trace-id", b"%016x" % i)] if headers else (),
            timestamp=T0 + i,
        )
        for i in range(count)
    ]
    return r.build_batch(specs, compression=codec, producer_id=7, producer_epoch=0, base_sequence=0)


def best_us(func: Callable[[], object], repeat: int) -> float:
    """Best time of one call in microseconds, over `repeat` runs of an auto-sized loop."""
    timer = timeit.Timer(func)
    number, _ = timer.autorange()
    return min(timer.repeat(repeat=repeat, number=number)) / number * 1e6


def measure(batch: bytes, codec: int, repeat: int) -> tuple[float, float | None, float, float]:
    """(validate with the pure walk, with the compiled walk or None, inflate alone,
    decode_batch) in microseconds per batch."""
    view = memoryview(batch)  # what split_batches hands over
    body = view[rb.HEADER_SIZE :]
    times: list[float | None] = []
    for walk in (PURE_WALK, COMPILED_WALK):
        if walk is None:
            times.append(None)
            continue
        saved = validation.use_record_walk(walk)
        validate_batch(view, max_uncompressed_bytes=LIMIT)  # must pass before it is timed
        times.append(best_us(lambda: validate_batch(view, max_uncompressed_bytes=LIMIT), repeat))
        validation.use_record_walk(saved)
    inflate = best_us(lambda: r.decompress(codec, body, LIMIT), repeat) if codec else 0.0
    decode = best_us(lambda: r.decode_batch(view), repeat)
    pure = times[0]
    assert pure is not None
    return pure, times[1], inflate, decode


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--headers", action="store_true", help="one header per record")
    args = parser.parse_args()
    print(f"# {statement()}")
    print(f"# validate_batch, Python {platform.python_version()} on {platform.machine()}")
    print(f"# 100-byte values, 16-byte keys, {'one header' if args.headers else 'no headers'}")
    print()
    if COMPILED_WALK is None:
        print("# compiled walker not built (make accel) or KAFKA_PROTOCOL_CODEC_PURE=1: pure only")
        print()
    print(
        "| records | codec  | batch bytes | pure µs/batch | µs/record | compiled µs/batch "
        "| µs/record | pure / compiled | of which inflate µs | decode_batch µs/batch |"
    )
    print("|--------:|--------|------------:|------:|------:|------:|------:|------:|------:|------:|")
    for count in SIZES:
        for codec, name in CODECS.items():
            batch = make_batch(count, codec, args.headers)
            pure, compiled, inflate, decode = measure(batch, codec, args.repeat)
            fast = (
                f"{compiled:.1f} | {compiled / count:.3f} | {pure / compiled:.1f}x"
                if compiled is not None
                else "- | - | -"
            )
            print(
                f"| {count:7d} | {name:6s} | {len(batch):11d} | {pure:.1f} | {pure / count:.2f} "
                f"| {fast} | {inflate:.1f} | {decode:.1f} |"
            )
    sys.stdout.flush()


if __name__ == "__main__":
    main()
