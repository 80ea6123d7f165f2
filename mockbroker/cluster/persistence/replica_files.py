"""One replica's log on disk: segment files of record batches plus two checkpoints.

Theory of operation. Kafka's on-disk log is the record batches themselves, back to back, in
segment files named by their base offset. A replica here keeps the same layout under its
directory (`DIR/broker-<id>/<topic>-<partition>/`): `<base offset, 20 digits>.log` holding the
batches exactly as PartitionLog stores them (offset and leader epoch already patched), a
`leader-epoch-checkpoint` (Kafka's text format: version, count, then "epoch start-offset"
lines) and a `log-start-offset` checkpoint (a DeleteRecords low watermark), both replaced
atomically (write a temporary file, rename it over the old one).

Writes are plain `os.write` calls on a descriptor opened for appending: the bytes are in the
kernel's page cache when the call returns, so a killed process (SIGKILL) loses nothing; only
a machine crash can lose the tail, as with Kafka, which relies on the page cache and on log
recovery. `fsync=True` (`--data-dir-fsync`) syncs after every write instead.

Recovery (`recover_batches`): each batch is checked (magic 2, a length that fits, the
CRC-32C over attributes..end, offsets above the previous batch's); the segment is truncated
at the first batch that fails, as Kafka's log recovery truncates a torn or corrupt tail.

Truncation (an unclean election, a follower diverging) cuts the segment at the end of the
last batch kept: the store remembers the end position of each batch it holds
(`_ends`, parallel to `_last_offsets`), so a cut is a bisect and one ftruncate. The log start
moving (DeleteRecords) writes only the checkpoint: batches below it stay in the segment and
are skipped at load (deleting whole segments is retention's business, not done here).
"""

from __future__ import annotations

import bisect
import os
import struct
from collections.abc import Sequence
from pathlib import Path

from kafka_protocol_codec.record_batches import HEADER_SIZE, LOG_OVERHEAD, BatchHeader, crc32c

SEGMENT_SUFFIX = ".log"
EPOCH_CHECKPOINT = "leader-epoch-checkpoint"
LOG_START_CHECKPOINT = "log-start-offset"
_CRC_AT, _CRC_FROM = 17, 21  # the CRC field, and where the bytes it covers start
_LENGTH = struct.Struct(">i")
_CRC = struct.Struct(">I")
_BASE = struct.Struct(">q")


def segment_name(base_offset: int) -> str:
    return f"{base_offset:020d}{SEGMENT_SUFFIX}"


def write_atomically(path: Path, text: str, fsync: bool = False) -> None:
    """Replace `path` with `text` through a temporary file and a rename, so a reader (or a
    restart after a crash) sees the old content or the new, never half of it."""
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "w", encoding="utf-8") as out:
        out.write(text)
        if fsync:
            out.flush()
            os.fsync(out.fileno())
    os.replace(tmp, path)


def recover_batches(data: bytes | memoryview, after_offset: int = -1) -> tuple[list[int], int]:
    """The start positions of the valid batches in a segment's bytes, and the length of the
    valid prefix (where to truncate). A batch is valid when its header is whole, its magic
    is 2, its length fits, its CRC-32C matches and its base offset follows `after_offset`."""
    view = memoryview(data)
    starts: list[int] = []
    pos, size = 0, len(view)
    while size - pos >= HEADER_SIZE:
        length = _LENGTH.unpack_from(view, pos + 8)[0]
        end = pos + LOG_OVERHEAD + length
        if length < HEADER_SIZE - LOG_OVERHEAD or end > size or view[pos + 16] != 2:
            break
        if crc32c(view[pos + _CRC_FROM:end]) != _CRC.unpack_from(view, pos + _CRC_AT)[0]:
            break
        base = _BASE.unpack_from(view, pos)[0]
        if base <= after_offset:
            break
        starts.append(pos)
        after_offset = base + _LENGTH.unpack_from(view, pos + 23)[0]  # + lastOffsetDelta
        pos = end
    return starts, pos


class ReplicaFiles:
    """The files of one replica's log, appended to as the in-memory log changes."""

    def __init__(self, directory: Path, fsync: bool = False) -> None:
        self.directory = directory
        self.fsync = fsync
        self._fd: int | None = None
        self._segment: Path | None = None
        self._position = 0  # bytes in the active segment
        self._last_offsets: list[int] = []  # of each batch in the active segment
        self._ends: list[int] = []  # the segment position after each batch
        self._written_epochs: tuple[tuple[int, int], ...] = ()

    # -- loading ----------------------------------------------------------------------------

    def load(self) -> tuple[list[bytes], int | None, list[tuple[int, int]] | None]:
        """Recover the segments (truncating a bad tail) and return the batches, the
        checkpointed log start offset and the checkpointed leader-epoch cache (None when a
        checkpoint is missing). Segments after one that had to be truncated are removed,
        as they cannot follow a gap."""
        self.directory.mkdir(parents=True, exist_ok=True)
        batches: list[bytes] = []
        last = -1
        segments = sorted(self.directory.glob("*" + SEGMENT_SUFFIX))
        for index, path in enumerate(segments):
            data = path.read_bytes()
            starts, valid = recover_batches(data, last)
            ends = [*starts[1:], valid]
            segment_batches = [data[s:e] for s, e in zip(starts, ends, strict=True)]
            if valid < len(data):
                with open(path, "r+b") as handle:
                    handle.truncate(valid)
                for later in segments[index + 1:]:
                    later.unlink()
                segments = segments[:index + 1]
            batches.extend(segment_batches)
            self._segment, self._position = path, valid
            self._last_offsets = [_last_offset(b) for b in segment_batches]
            self._ends = ends
            if segment_batches:
                last = self._last_offsets[-1]
            if valid < len(data):
                break
        return batches, self._read_log_start(), self._read_epochs()

    def _read_log_start(self) -> int | None:
        path = self.directory / LOG_START_CHECKPOINT
        try:
            return int(path.read_text(encoding="utf-8").split()[-1])
        except (OSError, ValueError, IndexError):
            return None

    def _read_epochs(self) -> list[tuple[int, int]] | None:
        path = self.directory / EPOCH_CHECKPOINT
        try:
            lines = path.read_text(encoding="utf-8").split("\n")
            count = int(lines[1])
            entries = [tuple(int(x) for x in line.split()) for line in lines[2:2 + count]]
        except (OSError, ValueError, IndexError):
            return None
        if any(len(e) != 2 for e in entries):
            return None
        cache = [(e[0], e[1]) for e in entries]
        self._written_epochs = tuple(cache)
        return cache

    # -- writing ----------------------------------------------------------------------------

    def _open(self) -> int:
        if self._fd is None:
            self.directory.mkdir(parents=True, exist_ok=True)
            if self._segment is None:
                self._segment = self.directory / segment_name(0)
            self._fd = os.open(self._segment, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
            self._position = os.fstat(self._fd).st_size
        return self._fd

    def append(self, data: bytes | memoryview, last_offset: int) -> None:
        """One stored batch at the end of the active segment."""
        fd = self._open()
        view = memoryview(data)
        written = 0
        while written < len(view):  # os.write may write less than asked (bounded by size)
            written += os.write(fd, view[written:])
        if self.fsync:
            os.fsync(fd)
        self._position += len(data)
        self._last_offsets.append(last_offset)
        self._ends.append(self._position)

    def truncate(self, log_end_offset: int) -> None:
        """Drop the batches whose last offset is at or past `log_end_offset` (the in-memory
        log already kept a straddling batch whole, so its last offset is below the end)."""
        keep = bisect.bisect_left(self._last_offsets, log_end_offset)
        if keep == len(self._last_offsets):
            return
        cut = self._ends[keep - 1] if keep else 0
        fd = self._open()
        os.ftruncate(fd, cut)
        if self.fsync:
            os.fsync(fd)
        self._position = cut
        del self._last_offsets[keep:]
        del self._ends[keep:]

    def write_log_start(self, offset: int) -> None:
        self.directory.mkdir(parents=True, exist_ok=True)
        write_atomically(self.directory / LOG_START_CHECKPOINT, f"{offset}\n", self.fsync)

    def write_epochs(self, cache: Sequence[tuple[int, int]]) -> None:
        """The leader-epoch checkpoint, rewritten only when the cache changed."""
        current = tuple(cache)
        if current == self._written_epochs:
            return
        self.directory.mkdir(parents=True, exist_ok=True)
        lines = "".join(f"{epoch} {start}\n" for epoch, start in current)
        write_atomically(self.directory / EPOCH_CHECKPOINT, f"0\n{len(current)}\n{lines}",
                         self.fsync)
        self._written_epochs = current

    def epochs_written(self) -> tuple[tuple[int, int], ...]:
        return self._written_epochs

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    def delete(self) -> None:
        """The replica went away (its topic was deleted): remove its directory."""
        import shutil  # only with a data directory (it imports bz2 and lzma: start-up)

        self.close()
        shutil.rmtree(self.directory, ignore_errors=True)
        self._segment, self._position = None, 0
        self._last_offsets.clear()
        self._ends.clear()
        self._written_epochs = ()


def _last_offset(batch: bytes) -> int:
    header = BatchHeader.parse(batch)
    return header.base_offset + header.last_offset_delta
