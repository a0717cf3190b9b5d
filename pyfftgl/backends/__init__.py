"""Backend selection: one Device per API per process, opened on first use.

`vkinfo` is the Vulkan driver query (plain ctypes, no kp) that `python -m pyfftgl info` and the
benchmarks read device properties with: a documented internal, not part of the public API."""
from __future__ import annotations

import atexit
import ctypes
import os
import threading

from . import _vkinfo as vkinfo  # noqa: F401 (the documented internal above)
from . import profiles
from .base import BackendUnavailable, Device, DeviceError, on_device_lost
from .profiles import on_profile_change  # noqa: F401 (the layers above listen through it)

BACKENDS = ("vulkan", "gl", "webgpu")  # "auto" tries them in this order
_devices: dict[str, Device] = {}
_errors: dict[str, BackendUnavailable] = {}
_lock = threading.Lock()
_default: str | None = None


def _open(name: str) -> Device:
    if name == "vulkan":
        from .vulkan import VulkanDevice
        return VulkanDevice()
    if name == "webgpu":
        from .webgpu import WebGPUDevice
        return WebGPUDevice()
    from .gl import GLDevice
    return GLDevice()


def get_device(backend: str | Device | None = None) -> Device:
    """The Device for `backend`: 'vulkan', 'gl', 'webgpu', 'auto' (Vulkan, GL, then WebGPU), None
    (the default, see set_backend), or a Device instance (returned as is).

    An unavailable backend raises BackendUnavailable saying why and how to fix it; the failure is
    remembered so that later calls fail fast.
    """
    if isinstance(backend, Device):
        return profiles.fit(backend)
    if backend is None:
        backend = default_backend()
    if not isinstance(backend, str) or backend not in BACKENDS + ("auto",):
        raise ValueError(f"backend must be one of {BACKENDS + ('auto',)} or a Device, "
                         f"got {backend!r}")
    with _lock:
        names = BACKENDS if backend == "auto" else (backend,)
        reasons = []
        for name in names:
            try:  # the device profile in force (profiles.py) may refuse the API or driver
                profiles.check_api(name)
                if name not in _devices and name not in _errors:
                    try:
                        _devices[name] = _open(name)
                    except BackendUnavailable as e:
                        _errors[name] = e
                if name in _devices:
                    return profiles.fit(_devices[name])
                reasons.append(f"{name}: {_errors[name]}")
            except BackendUnavailable as e:
                reasons.append(f"{name}: {e}")
        raise BackendUnavailable("no usable pyfftgl backend. " + "; ".join(reasons))


def opened() -> list[str]:
    """The names of the backends whose device this process has opened (and not lost)."""
    with _lock:
        return sorted(_devices)


def forget(device: Device) -> None:
    """Retire a lost device: the next call that names its backend opens a new one."""
    with _lock:
        for name, dev in list(_devices.items()):
            if dev is device:
                del _devices[name]


on_device_lost(forget)  # first: a listener may already ask for the backend's new device


@atexit.register
def _finish_all() -> None:
    """At exit, wait for the work queued on every open device: the driver would otherwise run
    it while the interpreter frees its buffers (lavapipe crashed in its queue thread)."""
    for dev in list(_devices.values()):
        try:
            dev.finish()
        except Exception:  # best effort: a lost, forked-away or closed context runs nothing more
            pass


def _after_fork_in_child() -> None:
    """A forked child cannot use the parent's GPU contexts (calls on them hang or fail, as CUDA's
    do): its devices are unusable, and say why. Nor may it destroy them: the parent's devices
    are kept alive for good (a deliberate leak), since lavapipe's vkDestroyDevice waits for the
    parent's queue thread, which the child does not have, and the child's exit hung."""
    for name in list(_devices):
        ctypes.pythonapi.Py_IncRef(ctypes.py_object(_devices[name]))
        del _devices[name]
        _errors[name] = BackendUnavailable(
            f"the {name} device was opened before this process was forked, and GPU contexts do "
            "not survive a fork: use multiprocessing's 'spawn' or 'forkserver' start method")


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


def default_backend() -> str:
    """The backend a call with backend=None uses: set_backend's, else "auto"."""
    return _default or "auto"


def set_backend(backend: str | None) -> None:
    """Set the backend of the calls that name none (backend=None), for the whole process.

    Parameters
    ----------
    backend : {"vulkan", "gl", "webgpu", "auto"} or None
        The API; "auto" and None: Vulkan, then OpenGL, then WebGPU. The device opens on first use.

    Raises
    ------
    ValueError
        Any other value.

    Examples
    --------
    >>> import pyfftgl
    >>> pyfftgl.set_backend("gl")
    >>> pyfftgl.get_device().info.api
    'gl'
    >>> pyfftgl.set_backend(None)
    """
    global _default
    if backend is not None and backend not in BACKENDS + ("auto",):
        raise ValueError(f"backend must be one of {BACKENDS + ('auto',)}, got {backend!r}")
    _default = backend


def probe(name: str) -> tuple[Device | None, str | None]:
    """(device, None) if backend `name` works here, else (None, why)."""
    try:
        return get_device(name), None
    except BackendUnavailable as e:
        return None, str(e)


def available(names=BACKENDS, echo=print):
    """(name, device) for each usable backend among `names`; the others are reported via echo."""
    for name in names:
        dev, why = probe(name)
        if dev is None:
            echo(f"{name}: unavailable: {why}")
            continue
        yield name, dev
