"""The one least-recently-used map of the library: plans, compiled programs, recorded submissions
and staging memory are all bounded by it (by count, and by bytes where a weight is given)."""
from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Callable, Hashable


class LRU:
    """A map bounded by `max_items` entries and, where `weigh(value)` is given, `max_bytes` of
    their summed weights; least recently used entries leave first, except the newest `keep`
    (an entry larger than the whole bound stays while it is the one in use). Thread-safe;
    `on_drop(key, value)` is called for what leaves by eviction (not by clear or pop)."""

    def __init__(self, max_items: int, max_bytes: int | None = None,
                 weigh: Callable[[object], int] | None = None, keep: int = 0,
                 on_drop: Callable[[Hashable, object], None] | None = None):
        self.max_items, self.max_bytes, self.keep = max_items, max_bytes, keep
        self._weigh, self._on_drop = weigh, on_drop
        self.hits = self.misses = 0
        self._entries: OrderedDict = OrderedDict()
        self._lock = threading.RLock()

    def get(self, key, default=None):
        """The value of `key` (now the most recent), else `default`; counts a hit or a miss."""
        with self._lock:
            if key in self._entries:
                self._entries.move_to_end(key)
                self.hits += 1
                return self._entries[key]
            self.misses += 1
            return default

    def peek(self, key, default=None):
        """The value of `key`, else `default`, leaving the order and the counts as they are."""
        with self._lock:
            return self._entries.get(key, default)

    def put(self, key, value) -> None:
        with self._lock:
            self._entries[key] = value
            self._entries.move_to_end(key)
            self._evict()

    def get_or_make(self, key, make: Callable[[], object]):
        """The value of `key`, made by make() (outside the lock: it may be slow) if absent."""
        missing = object()
        value = self.get(key, missing)
        if value is missing:
            value = make()
            self.put(key, value)
        return value

    def pop(self, key, default=None):
        with self._lock:
            return self._entries.pop(key, default)

    def drop_where(self, predicate: Callable[[Hashable, object], bool]) -> None:
        """Remove every entry for which predicate(key, value) holds."""
        with self._lock:
            for key in [k for k, val in self._entries.items() if predicate(k, val)]:
                del self._entries[key]

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()

    def resize(self, max_items: int | None = None, max_bytes: int | None = None) -> None:
        """New bounds; entries beyond them leave, least recently used first."""
        with self._lock:
            if max_items is not None:
                self.max_items = int(max_items)
            if max_bytes is not None:
                self.max_bytes = int(max_bytes)
            self._evict()

    @property
    def nbytes(self) -> int:
        """The summed weights of the entries (0 without a weight)."""
        with self._lock:
            return sum(map(self._weigh, self._entries.values())) if self._weigh else 0

    def values(self) -> list:
        with self._lock:
            return list(self._entries.values())

    def items(self) -> list:
        with self._lock:
            return list(self._entries.items())

    def __contains__(self, key) -> bool:
        with self._lock:
            return key in self._entries

    def __len__(self) -> int:
        with self._lock:
            return len(self._entries)

    def _over(self) -> bool:
        if len(self._entries) > max(self.max_items, 0):
            return True
        return self.max_bytes is not None and self.nbytes > self.max_bytes

    def _evict(self) -> None:
        while len(self._entries) > self.keep and self._over():
            key, value = self._entries.popitem(last=False)
            if self._on_drop is not None:
                self._on_drop(key, value)
