"""The one device protocol both backends implement.

A backend compiles GLSL compute programs, allocates storage buffers, and records a list of
dispatches as one submission that can be replayed (with GPU timestamps when asked). A dispatch
names its program, grid, push constants and the resources it binds: resources are bound when a
submission is recorded, not when a program is made, so one program runs on any buffers or images
without new pipelines (as GLFFT binds on the command buffer). Everything above this layer
(planner, plans, API) is backend-agnostic.

The shared logic is here (pyvkfft's habit): Device.read/write/record/buffer/... hold the device's
lock, check that it is usable, wrap driver failures and count live objects and host transfers,
around each backend's primitives `_read/_write/_record/_buffer/...`, which only allocate and
launch.
"""
from __future__ import annotations

import abc
import contextlib
import functools
import threading
from dataclasses import dataclass
from typing import Callable, Sequence

import numpy as np

from ..limits import Limits
from . import profiles
from .errors import BackendUnavailable, DeviceError, PrecisionUnavailable  # noqa: F401 (their home)


_lost_listeners: list = []  # called with a device when it is lost (on_device_lost)


def on_device_lost(listener) -> None:
    """Call `listener(device)` when a device is lost: the backend selection opens a new one next
    time, and the layers above drop what they hold of it (plans, programs)."""
    _lost_listeners.append(listener)


@dataclass(frozen=True)
class DeviceInfo:
    api: str  # "vulkan", "gl" or "webgpu"
    name: str  # the GPU (or software rasteriser) name
    driver: str  # driver name/version as the API reports it
    api_version: str
    limits: Limits
    is_software: bool  # lavapipe / llvmpipe: CPU emulation of a GPU
    float64: bool = False  # the kernels may compute in double (PRECISION 64)
    profile: str = ""  # the device profile (pyfftgl.profiles) the limits are held to, if any


class _InfoUnderProfile:
    """Device.info: the device's `driver_info`, or its view under the device profile in force
    (backends/profiles.py computes it once per device and profile), so that no one rewrites a
    device's info. Not a data descriptor: an instance attribute of the name (a test's
    monkeypatch) is read first."""

    def __get__(self, device, owner=None):
        return self if device is None else profiles.info_of(device)


class Buffer(abc.ABC):
    """A device storage buffer of `nbytes` bytes."""

    nbytes: int


class Program(abc.ABC):
    """A compiled compute program; `push_names` are its uint32 push constants, in order."""

    push_names: tuple[str, ...]


class Image(abc.ABC):
    """A 2D image a kernel reads or writes texel by texel (GL: a texture bound to an image unit).

    `format` is its GLSL image format (r32f, rg32f, rgba32f), `components` its channels."""

    width: int
    height: int
    format: str
    components: int


@dataclass(frozen=True, eq=False)
class Dispatch:
    """One dispatch: `program` over a grid of `groups`, `push` (uint32, one value per
    program.push_names), storage buffer binding i = buffers[i] (None: unused); images[:image_reads]
    are read (sampler bindings 0.., which GL moves to units of its own) and the rest written
    (image units 0..).
    Binding 1 is the buffer a dispatch writes, every other it only reads (every pyfftgl kernel's
    convention, by which a backend may order calls: `access`)."""

    program: Program
    groups: tuple[int, int, int]
    push: np.ndarray
    buffers: tuple = ()
    images: tuple = ()
    image_reads: int = 0

    def access(self) -> tuple[frozenset, frozenset]:
        """(the ids of the buffers it reads, of those it writes): ids, so that what a backend
        keeps of a recorded call does not keep the caller's buffers alive (an id reused by a
        new buffer only costs a barrier)."""
        bound = [(i, id(b)) for i, b in enumerate(self.buffers) if b is not None]
        return (frozenset(b for i, b in bound if i != 1), frozenset(b for i, b in bound if i == 1))


class Submission(abc.ABC):
    """A recorded list of dispatches (plus uploads/downloads) that can be replayed many times.

    Dispatches run as if in order: a backend may let consecutive dispatches run together where
    neither writes a buffer the other reads or writes (Dispatch.access), and orders the others
    with a barrier (Vulkan: hazard_groups; GL: submission_barriers; WebGPU: its own usage
    tracking). Replays queue behind each other without the host waiting for the earlier ones
    (several in flight); the host waits only when it reads (Device.read, Submission.result) or
    calls Device.finish. A queued replay may be held until the next replay or wait
    (Device.flush starts it).
    """

    device: "Device"
    uploads: Sequence[Buffer] = ()
    downloads: Sequence[Buffer] = ()

    def run(self, inputs: Sequence[np.ndarray] = (), *, timed: bool = False,
            wait: bool = True) -> float | None:
        """Upload `inputs` to the recorded upload buffers, run, download. Returns GPU ns if timed.
        wait=False: return once queued; the device waits for it before the host next reads or
        writes device memory (Device.read/write). GL never waits here."""
        dev = self.device
        with dev.lock:
            dev.check_usable()
            if inputs or self.downloads:
                dev.count_transfers(to_device=len(inputs), to_host=len(self.downloads))
            try:
                return self._run(inputs, timed, wait)
            except RuntimeError as e:  # the driver's failure (kp's carry the VkResult)
                raise dev.failure("running a submission", e) from e

    def replayer(self) -> Callable[[], None]:
        """A function that queues this submission once more without waiting, as
        run(wait=False) does: for a submission with no uploads or downloads, run()'s checks and
        the backend's `_again` with nothing else, cheap to call in a loop."""
        if self.uploads or self.downloads:
            return functools.partial(self.run, wait=False)
        dev, again = self.device, self._again

        def replay():
            with dev.lock:
                if dev.lost is not None:
                    dev.check_usable()
                try:
                    again()
                except RuntimeError as e:  # the driver's failure, as run() reports it
                    raise dev.failure("running a submission", e) from e
        return replay

    def _again(self) -> None:
        """Queue the recorded dispatches once more (no transfers), the device's lock held."""
        self._run((), False, False)

    def result(self, i: int = 0, out: np.ndarray | None = None) -> np.ndarray:
        """The i-th download buffer's contents after the last run, as float32 (a copy); with
        `out` (a C-contiguous float32 array of at most the buffer's size), its first out.size
        values copied straight into `out`, which is returned (no second host copy)."""
        if out is not None and (out.dtype != np.float32 or not out.flags.c_contiguous
                                or out.size > self.downloads[i].nbytes // 4):
            raise ValueError("out must be a C-contiguous float32 array within the download")
        if out is None:
            out = np.empty(self.downloads[i].nbytes // 4, np.float32)
        with self.device.lock:
            return self._result(i, out)

    @abc.abstractmethod
    def _run(self, inputs: Sequence[np.ndarray], timed: bool, wait: bool) -> float | None:
        """run()'s work, the device's lock held and its usability checked."""

    @abc.abstractmethod
    def _result(self, i: int, out: np.ndarray) -> np.ndarray:
        """result()'s work: the download's first out.size values copied into `out`."""


class Device(abc.ABC):
    """A GPU through one API. The public methods are the protocol every layer above uses; a
    backend implements the underscored primitives they call, and sets `driver_info` (its
    driver's own DeviceInfo, which `info` reports under no device profile) and `lock`."""

    driver_info: DeviceInfo
    info = _InfoUnderProfile()
    # Held by every call that submits, waits, allocates or moves data (reentrant): a Vulkan
    # queue, kp's sequences and a GL context are not safe to use from two threads at once.
    lock: threading.RLock
    lost: str | None = None  # the driver's message where the device was lost
    # A call of dispatches only may start while the call before it still runs, where its first
    # dispatch touches nothing that call's last dispatch writes, nor writes what it reads (the
    # Vulkan backend); plans then alternate their work buffers between calls.
    overlaps_calls = False

    # -- the shared logic -----------------------------------------------------------------

    def failure(self, what: str, error: BaseException | str, lost: bool = False) -> DeviceError:
        """The DeviceError for a driver failure while doing `what`; a loss (the driver says so,
        or `lost`) retires this device: its work is refused and the backend opens a new one."""
        if isinstance(error, DeviceError):  # already reported, by a call inside this one
            return error
        message = str(error)
        lost = lost or "lost" in message.lower()
        if lost and self.lost is None:
            self.lost = message
            for listener in list(_lost_listeners):
                listener(self)
        note = (": the device is lost; its plans and arrays cannot run, and the next call "
                "opens a new device" if lost else "")
        return DeviceError(f"the {self.info.api} device ({self.info.name}) failed {what}: "
                           f"{message}{note}", backend=self.info.api, driver_message=message,
                           lost=lost)

    def check_usable(self) -> None:
        """Raise the DeviceError of a lost device before any work is given to it."""
        if self.lost is not None:
            raise DeviceError(f"the {self.info.api} device ({self.info.name}) was lost "
                              f"({self.lost}): make new plans and arrays", backend=self.info.api,
                              driver_message=self.lost, lost=True)

    def check_precision(self, precision: int) -> None:
        """Raise PrecisionUnavailable where this device cannot compute in `precision` (32, 64)."""
        if precision == 64 and not self.info.float64:
            i = self.info
            feature = {"vulkan": "shaderFloat64", "webgpu": "the shader-f64 feature"}.get(
                i.api, "GL_ARB_gpu_shader_fp64")
            lacks = (f"under device profile {i.profile!r} has no fp64" if i.profile
                     else f"lacks {feature}")
            raise PrecisionUnavailable(
                f"{i.api}:{i.name} {lacks}, which double-precision (float64/complex128) transforms "
                "need; pass float32/complex64 data")

    @property
    def live(self) -> dict:
        """Objects made here and not yet released: buffers, their bytes, images."""
        return self._counter("_live", ("buffers", "bytes", "images"))

    @property
    def host_transfers(self) -> dict:
        """Host <-> device copies so far: "to_device" (writes, uploads of a submission's run)
        and "to_host" (reads, downloads of a submission's run), one per buffer moved."""
        return self._counter("_host_transfers", ("to_device", "to_host"))

    def _counter(self, name: str, keys: tuple) -> dict:
        counts = self.__dict__.get(name)
        if counts is None:
            counts = self.__dict__[name] = dict.fromkeys(keys, 0)
        return counts

    def count_live(self, kind: str, nbytes: int = 0) -> Callable[[], None]:
        """Count an object (`kind`: "buffers" or "images") of `nbytes` made here as live; the
        function returned counts it released."""
        live = self.live
        live[kind] += 1
        live["bytes"] += nbytes

        def released():
            live[kind] -= 1
            live["bytes"] -= nbytes
        return released

    def count_transfers(self, to_device: int = 0, to_host: int = 0) -> None:
        counts = self.host_transfers
        counts["to_device"] += to_device
        counts["to_host"] += to_host

    def current(self):
        """A context for a run of calls from one thread that holds the device throughout (GL:
        its lock, its context current once for all of them); nothing where the API needs it."""
        return contextlib.nullcontext()

    def program(self, source: str, push_names: Sequence[str] = ()) -> Program:
        """Compile GLSL compute source (with its `#version` line) for this API."""
        with self.lock:
            return self._program(source, tuple(push_names))

    def buffer(self, nbytes: int, data: np.ndarray | None = None,
               device_only: bool = False) -> Buffer:
        """Allocate a storage buffer; `data` (float32/uint32) fills its start if given.
        `device_only`: the host never maps it (device arrays), so an API with host-side
        shadows of its buffers (Kompute's staging tensors) keeps none. MemoryError where the
        driver cannot allocate it."""
        with self.lock:
            try:
                return self._buffer(int(nbytes), data, device_only)
            except MemoryError as e:  # the backend's reason, in the one message
                raise MemoryError(f"the {self.info.api} device could not allocate a buffer of "
                                  f"{nbytes} bytes ({e})") from e

    def memory_stats(self) -> dict:
        """The device memory held here (pyfftgl.memory_pool): "used_bytes" (by live buffers),
        "held_bytes" (allocated from the driver: used, or free and kept for reuse), "blocks"
        (the pool's shared allocations), "allocations" (driver allocations in all) and "limit"
        (the most the pool makes; None without one)."""
        with self.lock:
            return self._memory_stats()

    def trim_memory(self) -> int:
        """Give the driver back what the pool holds and no live buffer uses; the bytes freed."""
        with self.lock, self.current():
            return self._trim_memory()

    def image(self, width: int, height: int, fmt: str) -> Image:
        """A width x height image of GLSL format `fmt` (planner.IMAGE_FORMATS) for a plan."""
        with self.lock:
            return self._image(width, height, fmt)

    def write(self, buf: Buffer, data: np.ndarray) -> None:
        """Copy `data` into the start of `buf` now."""
        with self.lock, self.current():
            self.check_usable()
            self.count_transfers(to_device=1)
            try:
                self._write(buf, data)
            except RuntimeError as e:
                raise self.failure("writing a buffer", e) from e

    def read(self, buf: Buffer, count: int) -> np.ndarray:
        """The first `count` float32 values of `buf`, as a new array."""
        with self.lock, self.current():
            self.check_usable()
            self.count_transfers(to_host=1)
            try:
                return self._read(buf, count)
            except RuntimeError as e:
                raise self.failure("reading a buffer", e) from e

    def record(self, dispatches: Sequence[Dispatch], *, uploads: Sequence[Buffer] = (),
               downloads: Sequence[Buffer] = ()) -> Submission:
        """Record uploads, the dispatches (binding the resources each names) and downloads as
        one replayable submission."""
        with self.lock, self.current():
            self.check_usable()
            return self._record(list(dispatches), list(uploads), list(downloads))

    def finish(self) -> None:
        """Wait until the device has done all work submitted so far."""
        with self.lock, self.current():
            self._finish()

    def flush(self) -> None:
        """Start all work queued so far without waiting for it: Vulkan submits the calls it
        holds back while the GPU is busy, GL flushes its command buffer. Work starts by itself
        at the next call or host wait; a program that computes on the CPU in between flushes
        to overlap the two."""
        with self.lock, self.current():
            self._flush()

    # -- what each backend implements -----------------------------------------------------

    @abc.abstractmethod
    def _program(self, source: str, push_names: tuple[str, ...]) -> Program:
        """Compile a program."""

    @abc.abstractmethod
    def _buffer(self, nbytes: int, data: np.ndarray | None, device_only: bool) -> Buffer:
        """Allocate a buffer (counted with count_live); MemoryError(the reason) if it cannot."""

    def _memory_stats(self) -> dict:
        """A backend without a pool holds what its live buffers use, one allocation each."""
        live = self.live
        return {"used_bytes": live["bytes"], "held_bytes": live["bytes"], "blocks": 0,
                "allocations": live["buffers"], "limit": None}

    def _trim_memory(self) -> int:
        return 0

    def _image(self, width: int, height: int, fmt: str) -> Image:
        raise NotImplementedError(f"the {self.info.api} backend binds buffers only (images are "
                                  "GL's)")

    @abc.abstractmethod
    def _write(self, buf: Buffer, data: np.ndarray) -> None:
        """Copy data to the device."""

    @abc.abstractmethod
    def _read(self, buf: Buffer, count: int) -> np.ndarray:
        """Copy data to the host."""

    @abc.abstractmethod
    def _record(self, dispatches: list[Dispatch], uploads: list[Buffer],
                downloads: list[Buffer]) -> Submission:
        """Make a Submission."""

    @abc.abstractmethod
    def _finish(self) -> None:
        """Wait for the device."""

    @abc.abstractmethod
    def _flush(self) -> None:
        """Start the queued work."""
