"""The life of every device plan (TransformPlan, the DCT/DST plan, a Convolver's, TextureFFT's
calls): resources, allocated when the plan is built; dispatches, binding the caller's resources
by name; recorded submissions, a bounded cache keyed by the identity of what they bind; runs,
queued without waiting. One lock and one cache key per plan, declared here."""
from __future__ import annotations

import sys
import threading
import weakref

import numpy as np

from . import kernels
from .backends.base import Buffer, Dispatch
from .lru import LRU


class Recording:
    """A recorded submission with the dispatches it was recorded from. `run` and `result` are
    the submission's own (a replay costs no more than the submission's run). `dispatches` is
    None where the recording binds a caller's buffers (held weakly: Recorded)."""

    __slots__ = ("submission", "dispatches", "dispatch_count", "run", "result", "__weakref__")

    def __init__(self, submission, dispatches):
        self.submission, self.dispatches = submission, tuple(dispatches)
        self.dispatch_count = len(self.dispatches)  # the dispatches it issues per run
        self.run, self.result = submission.run, submission.result

    def stats(self) -> dict:
        """dispatches per run, buffers uploaded and downloaded per run."""
        return {"dispatches": self.dispatch_count, "uploads": len(self.submission.uploads),
                "downloads": len(self.submission.downloads)}


def _weak(obj, callback):
    """A weak reference to a buffer (called back when it goes), else the object itself."""
    return weakref.ref(obj, callback) if isinstance(obj, Buffer) else obj


def _deref(ref):
    return ref() if isinstance(ref, weakref.ref) else ref


def _counts(pool: list) -> list[int]:
    return [sys.getrefcount(item) for item in pool]


# The references counted for an object only a list holds (the list's, the comprehension's
# name, getrefcount's argument), measured rather than assumed: interpreters count differently.
_ONLY_LISTED = _counts([object()])[0]


def _unreferenced(pool: list):
    """The first object of `pool` that nothing but the pool references, else None."""
    for item, count in zip(pool, _counts(pool)):
        if count <= _ONLY_LISTED:
            return item
    return None


class Recorded:
    """The submissions recorded for the last `size` sets of resources, by their identity: a loop
    that reuses its buffers or textures replays one, with no recording or allocation per call.
    An entry is found by the ids of the resources and then checked by `is` (an id may be reused
    once its object is gone). Buffers are held by weak reference, and a recording leaves when
    one of its buffers goes: the device memory held follows what the caller holds (the
    submission binds the memory itself; a backend's submission keeps no buffer object).
    Callers hold their plan's lock."""

    def __init__(self, size: int):
        self._lru = LRU(size)  # (tag, ids) -> (resources or weak references, Recording)

    @property
    def size(self) -> int:
        return self._lru.max_items

    def get(self, resources: tuple, record, tag=()) -> Recording:
        """The recording for `resources` (and `tag`), made by record() if new."""
        key = (tag, tuple(map(id, resources)))
        entry = self._lru.get(key)
        if entry is None or any(_deref(a) is not b for a, b in zip(entry[0], resources)):
            rec, lru = record(), weakref.ref(self._lru)

            def gone(_ref, key=key, rec=weakref.ref(rec)):
                held = lru()
                if held is not None and rec() is not None and \
                        held.peek(key, (None, None))[1] is rec():
                    held.pop(key)
            refs = tuple(_weak(r, gone) for r in resources)
            if any(isinstance(r, weakref.ref) for r in refs):
                rec.dispatches = None  # they would hold the buffers
            entry = (refs, rec)
            self._lru.put(key, entry)
        return entry[1]

    def recordings(self) -> list[Recording]:
        """The recordings held, least recently used first."""
        return [rec for _, rec in self._lru.values()]

    def clear(self) -> None:
        self._lru.clear()

    def __len__(self) -> int:
        return len(self._lru)


class DevicePlan:
    """A plan bound to one device. Subclasses allocate their resources in the constructor, set
    `nbytes` (the device memory they hold) and `dispatch_count` (the dispatches of one call) and
    implement dispatches(resources); this class records, caches and runs them. `cache_key`: the
    plan cache's key of the plan (None for one made outside the cache)."""

    # Recorded submissions kept per plan, by the identity of the resources they bind: a render
    # loop replays one, with no recording or allocation per call (two, alternating work
    # buffers).
    RECORDED = 8

    def __init__(self, device, cache_key=None):
        self.device, self.cache_key = device, cache_key
        self.nbytes = 0
        self.dispatch_count = 0
        # Every call's recording and the plan's shared buffers are used under it, taken after
        # the device (everywhere: a thread holding the device may call).
        self.lock = threading.Lock()
        self.recorded = Recorded(self.RECORDED)

    def dispatches(self, resources: dict | None = None) -> list[list[Dispatch]]:
        """Each pass's dispatches in order, binding `resources` (name -> buffer or image)."""
        raise NotImplementedError

    def flat_dispatches(self, resources: dict | None = None) -> list[Dispatch]:
        """dispatches(resources), every pass's in order in one list."""
        return [d for ds in self.dispatches(resources) for d in ds]

    def recording(self, objs: tuple, build, tag=(), **transfers) -> Recording:
        """The recording binding `objs` (by identity, under `tag`) of the dispatches build()
        makes (with the device's `uploads` and `downloads` in `transfers`), recorded once among
        the last RECORDED. The caller holds device.current() and the plan's lock."""
        def record():
            dispatches = build()
            return Recording(self.device.record(dispatches, **transfers), dispatches)
        return self.recorded.get(objs, record, tag)

    def submission(self, resources: dict, tag=()) -> Recording:
        """The recording of this plan's call on `resources` (name -> buffer or image)."""
        with self.device.current(), self.lock:
            names = tuple(sorted(resources))
            return self.recording(tuple(resources[n] for n in names),
                                  lambda: self.flat_dispatches(resources), (tag, names))

    def own(self, name: str, nbytes: int):
        """The plan's own host-visible buffer `name` of at least `nbytes` (what host calls
        upload to and download from), allocated on first use and counted in `nbytes`."""
        with self.device.current(), self.lock:
            own = self.__dict__.setdefault("_own", {})
            buf = own.get(name)
            if buf is None or buf.nbytes < nbytes:
                buf = own[name] = self.device.buffer(max(4, nbytes))
                self.nbytes += buf.nbytes
            return buf

    # Device-only result buffers a plan keeps per name (pooled): a loop that drops each result
    # before the next call alternates two, so both recordings replay.
    POOLED = 3

    def pooled(self, name: str, nbytes: int):
        """A device-only buffer of `nbytes` for a result the caller will own: one of the plan's
        POOLED buffers `name` that nothing else references (the caller dropped every array on
        it; recordings hold buffers weakly), else a new one, kept in the pool (counted in
        `nbytes`) while it has room. The pool's buffers go with the plan."""
        with self.device.current(), self.lock:
            pool = self.__dict__.setdefault("_pooled", {}).setdefault(name, [])
            buf = _unreferenced(pool)
            if buf is not None:
                return buf
            buf = self.device.buffer(max(4, nbytes), device_only=True)
            if len(pool) < self.POOLED:
                pool.append(buf)
                self.nbytes += buf.nbytes
            return buf

    def host_call(self, inputs: dict, out_nbytes: int) -> np.ndarray:
        """A call on host arrays (name -> C-contiguous array): each uploaded to the plan's own
        buffer of its name, the call run into the plan's own "out", downloaded; the result's
        bytes as float32. One recorded submission per set of names: a repeated call allocates
        and records nothing."""
        names = tuple(sorted(inputs))
        ups = [self.own("host " + n, inputs[n].nbytes) for n in names]
        down = self.own("host out", out_nbytes)
        res = {**dict(zip(names, ups)), "out": down}
        with self.device.current(), self.lock:
            rec = self.recording((), lambda: self.flat_dispatches(res), ("host", names),
                                 uploads=ups, downloads=[down])
            rec.run([inputs[n].reshape(-1).view(np.float32) for n in names])
            return rec.result(0)

    def run(self, resources: dict) -> None:
        """Queue this plan's call on `resources` (the host does not wait)."""
        self.submission(resources).run(wait=False)

    def recordings(self) -> list[Recording]:
        """The recordings held, least recently used first."""
        with self.lock:
            return self.recorded.recordings()

    def forget_recordings(self) -> None:
        with self.lock:
            self.recorded.clear()

    def stats(self) -> dict:
        """dispatches: of one call; recorded: recorded submissions held; bytes: device memory
        held."""
        return {"dispatches": self.dispatch_count, "recorded": len(self.recorded),
                "bytes": self.nbytes}


def run_once(device, dispatches) -> None:
    """Record and queue `dispatches` once (work on resources no later call binds again)."""
    with device.current():
        sub = device.record(dispatches)
    sub.run(wait=False)


def element_dispatches(device, p, buffers) -> list[Dispatch]:
    """The dispatches of the planner's element pass `p` (planner.ElementPass) binding
    `buffers`, its program compiled once per device (kernels.program_cache)."""
    prog = kernels.get_program(device, p.kernel, p.defines(), p.push_names)
    return [Dispatch(prog, (gx, gy, 1), np.array(p.push(base), np.uint32), tuple(buffers))
            for base, gx, gy in p.grids(device.info.limits)]


class TextureSpectrum:
    """A kernel's 2D spectrum on the GPU (a TextureFFT's spectrum(), ModernGL's or wgpu's):
    `fields` complex values per element, 1 (applied to every field of an image) or 2 (one per
    field of an rgba image)."""

    def __init__(self, owner, buffer, fields: int):
        self.owner, self.buffer, self.fields = owner, buffer, fields

    @property
    def shape(self) -> tuple[int, ...]:
        return self.owner.shape + ((2,) if self.fields == 2 else ())

    def check(self) -> None:
        """Raise where the spectrum's memory can no longer be read (a released context)."""

    def get(self) -> np.ndarray:
        """A host copy: complex64 of shape (height, width), or (height, width, 2) per field."""
        self.check()
        flat = self.owner.device.read(self.buffer, 2 * self.fields * self.owner.size)  # locks
        return flat.view(np.complex64).reshape(self.shape)

    def __repr__(self):
        return f"<Spectrum {self.shape} complex64 on {self.owner.device.info.name}>"
