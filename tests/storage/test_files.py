"""The data directory's files: frames and segments recovered up to the first bad entry."""

from __future__ import annotations

from pathlib import Path

from kafka_protocol_codec.records import RecordSpec, build_batch

from mockbroker.cluster.persistence.data_dir import FrameFile, frame, read_frames
from mockbroker.cluster.persistence.replica_files import ReplicaFiles, recover_batches


def _batch(base_offset: int, value: bytes) -> bytes:
    return bytes(build_batch([RecordSpec(value=value, timestamp=1)], base_offset=base_offset))


def test_frames_stop_at_a_torn_tail() -> None:
    data = frame(b"first") + frame(b"second")
    assert read_frames(data) == ([b"first", b"second"], len(data))
    torn = data[:-1]
    assert read_frames(torn) == ([b"first"], len(frame(b"first")))


def test_frames_stop_at_a_bad_crc() -> None:
    data = bytearray(frame(b"first") + frame(b"second") + frame(b"third"))
    data[len(frame(b"first")) + 9] ^= 0xFF  # a payload byte of the second frame
    assert read_frames(bytes(data)) == ([b"first"], len(frame(b"first")))


def test_a_frame_file_is_truncated_where_recovery_stopped(tmp_path: Path) -> None:
    path = tmp_path / "f.log"
    path.write_bytes(frame(b"kept") + b"\x00\x00\x00\x09garbage")
    file = FrameFile(path, fsync=False)
    assert file.recover() == [b"kept"]
    assert path.stat().st_size == len(frame(b"kept"))
    file.append(b"next")
    file.close()
    assert FrameFile(path, fsync=True).recover() == [b"kept", b"next"]


def test_segment_recovery_checks_each_batch_crc() -> None:
    first, second, third = _batch(0, b"a"), _batch(1, b"b"), _batch(2, b"c")
    corrupt = bytearray(second)
    corrupt[-1] ^= 0x01  # a record byte: covered by the CRC
    data = first + bytes(corrupt) + third
    assert recover_batches(data) == ([0], len(first))
    assert recover_batches(first + second + third) == (
        [0, len(first), len(first) + len(second)], len(first + second + third))


def test_segment_recovery_refuses_offsets_that_go_back() -> None:
    first = _batch(5, b"a")
    assert recover_batches(first + _batch(3, b"b")) == ([0], len(first))


def test_replica_files_truncate_and_load(tmp_path: Path) -> None:
    files = ReplicaFiles(tmp_path / "t-0")
    assert files.load() == ([], None, None)
    batches = [_batch(i, bytes([65 + i])) for i in range(3)]
    for offset, data in enumerate(batches):
        files.append(data, offset)
    files.truncate(2)  # drop the batch at offset 2
    files.write_log_start(1)
    files.write_epochs([(0, 0), (3, 2)])
    files.close()
    again = ReplicaFiles(tmp_path / "t-0")
    assert again.load() == (batches[:2], 1, [(0, 0), (3, 2)])
