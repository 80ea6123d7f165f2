"""Metadata images at past offsets, for consistent-read mode.

Theory of operation: an image at offset N is, by definition, the result of applying the
metadata log's records 0..N to an empty image, so it never changes once N is in the log.
`ImageHistory.image_at(log, N, bases)` builds it from the nearest image at or before N it
can find -- one it built before, or one of the `bases` the caller offers (the brokers' own
images) -- by copying that image (copy-on-write at partition granularity, so cheap) and
applying the records in between. Built images are kept in a small LRU cache: in
consistent-read mode every broker reads at the same lowest acknowledged offset, so one
image serves them all until the offset moves.

Images handed out are shared: callers only read them.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterable

from mockbroker.cluster.kraft.metadata_log import MetadataImage, MetadataLog

CACHE_SIZE = 8


class ImageHistory:
    def __init__(self, cache_size: int = CACHE_SIZE) -> None:
        self.cache_size = cache_size
        self._cache: OrderedDict[int, MetadataImage] = OrderedDict()
        self._log: MetadataLog | None = None

    def image_at(self, log: MetadataLog, offset: int,
                 bases: Iterable[MetadataImage] = ()) -> MetadataImage:
        """The image of `log` as of `offset` (-1: the empty image)."""
        if log is not self._log:
            self._cache.clear()
            self._log = log
        offset = min(offset, log.end_offset - 1)
        cached = self._cache.get(offset)
        if cached is not None:
            self._cache.move_to_end(offset)
            return cached
        base: MetadataImage | None = None
        for candidate in (*self._cache.values(), *bases):
            if candidate.offset <= offset and (base is None or candidate.offset > base.offset):
                base = candidate
        image = base.copy() if base is not None else MetadataImage()
        image.cluster_id = log.cluster_id
        for record in log.records[image.offset + 1:offset + 1]:
            image.apply(record)
        image.offset = offset  # also for -1 and an empty log
        self._cache[offset] = image
        while len(self._cache) > self.cache_size:
            self._cache.popitem(last=False)
        return image
