"""Device profiles: plan and run as a real GPU would, on whatever driver is here.

A profile holds the limits of one real device (docs/devices.md gives each figure's source): shared
memory, invocations, workgroup size and count, storage buffer range, fp64, and the APIs the device
has. Under a profile, every device pyfftgl opens reports the profile's limits instead of its own,
so the planner makes the plans that device would get and the software drivers run them.

    PYFFTGL_DEVICE_PROFILE=raspberry-pi-5 python -m pyfftgl info
    pyfftgl.set_device_profile("raspberry-pi-5")       # the process from now on (None: off)
    with pyfftgl.device_profile("android-baseline"):   # a block, then back to what it was
        ...

A profile is process-wide, as the variable is: the limits a device reports change for every thread,
and plans made under another profile leave the plan cache when the profile changes (plans already
held by the caller keep the limits they were made for). Profiles belong to device selection: a
device keeps its driver's own `driver_info`, and its `info` (Device.info) is the view of it under
the profile in force, computed here once per device and profile (`info_of`); the layers above
hear of a change through `on_profile_change` listeners (plans.py registers the plan cache).
"""
from __future__ import annotations

import contextlib
import os
import threading
import weakref
from dataclasses import dataclass, replace

from ..limits import Limits
from .errors import BackendUnavailable

ENV = "PYFFTGL_DEVICE_PROFILE"
_U32 = 0xFFFFFFFF


@dataclass(frozen=True)
class DeviceProfile:
    """The limits of one real device and driver, as its driver reports them."""

    name: str
    device: str  # the device and driver the figures are from
    max_shared_bytes: int
    max_invocations: int
    max_group_size: tuple[int, int, int]
    max_group_count: tuple[int, int, int]
    max_buffer_bytes: int
    float64: bool
    apis: tuple[str, ...]  # of pyfftgl's: "vulkan", "gl" (desktop GL 4.3 with compute), "webgpu"
    source: str  # where the figures come from

    @property
    def limits(self) -> Limits:
        """The limits the planner sees on this device (no tuned shapes: none were measured)."""
        return Limits(self.max_shared_bytes, self.max_invocations, self.max_group_size,
                      self.max_group_count, self.max_buffer_bytes)


_VP = "KhronosGroup/Vulkan-Profiles profiles/LunarG/"
PROFILES: dict[str, DeviceProfile] = {p.name: p for p in (
    DeviceProfile("raspberry-pi-5", "Raspberry Pi 5, VideoCore VII (Mesa v3dv)", 16384, 256,
                  (256, 256, 256), (65535, 65535, 65535), 1 << 30, False, ("vulkan",),
                  "Mesa src/broadcom/vulkan/v3dv_device.c, src/broadcom/common/v3d_limits.h"),
    DeviceProfile("android-baseline", "Android Baseline 2022 Vulkan profile", 16384, 128,
                  (128, 128, 64), (65535, 65535, 65535), 1 << 27, False,
                  ("vulkan", "webgpu"),
                  "KhronosGroup/Vulkan-Profiles profiles/VP_ANDROID_baseline_2022.json"),
    DeviceProfile("mali-g78", "Arm Mali-G78, Valhall (Mesa panvk)", 32768, 512,
                  (512, 512, 512), (65535, 65535, 65535), _U32, False, ("vulkan",),
                  "Mesa src/panfrost/vulkan/panvk_physical_device.c, "
                  "src/panfrost/lib/kmod/panfrost_kmod.c (Valhall v9: 512 threads)"),
    DeviceProfile("apple-m1", "Apple M1 (MoltenVK 1.2, macOS 14.3)", 32768, 1024,
                  (1024, 1024, 1024), (1 << 30, 1 << 30, 1 << 30), _U32, False,
                  ("vulkan", "webgpu"),
                  _VP + "VP_LUNARG_desktop_baseline_2024/"
                  "vp_gpuinfo_apple_m1_0_2_2015_osx_14_3.json"),
    DeviceProfile("amd-rdna3-windows", "AMD Radeon RX 7800 XT (AMD driver 2.0.294, Windows 11)",
                  32768, 1024, (1024, 1024, 1024), (_U32, 65535, 65535), _U32, True,
                  ("vulkan", "gl"), _VP + "VP_LUNARG_desktop_baseline_2024/"
                  "vp_gpuinfo_amd_radeon_rx_7800_xt_2_0_294_windows_11.json"),
    DeviceProfile("amd-rdna3-radv", "AMD Radeon RX 7800 XT (Mesa RADV, navi32)", 65536, 1024,
                  (1024, 1024, 1024), (65535, 65535, 65535), _U32, True, ("vulkan", "gl"),
                  _VP + "VP_LUNARG_desktop_baseline_2024/"
                  "vp_gpuinfo_amd_radeon_rx_7800_xt__radv_navi32__24_0_99_arch_unknown.json"),
    DeviceProfile("intel-arc-a770", "Intel Arc A770 (Mesa ANV 26.1, DG2)", 49152, 1024,
                  (1024, 1024, 1024), (2147483647, 65535, 65535), _U32, False, ("vulkan", "gl"),
                  _VP + "VP_LUNARG_desktop_baseline_2026/"
                  "vp_gpuinfo_intel_r__arc_tm__a770_graphics__dg2__26_1_2_arch_unknown.json"),
    DeviceProfile("nvidia", "NVIDIA GeForce RTX 4070 (driver 551.61, Windows 11)", 49152, 1024,
                  (1024, 1024, 64), (2147483647, 65535, 65535), _U32, True, ("vulkan", "gl"),
                  _VP + "VP_LUNARG_desktop_baseline_2024/"
                  "vp_gpuinfo_nvidia_geforce_rtx_4070_551_61_0_0_windows_11.json"),
    DeviceProfile("webgpu-default", "any WebGPU device at the spec's default limits", 16384, 256,
                  (256, 256, 64), (65535, 65535, 65535), 1 << 27, False, ("webgpu",),
                  "W3C WebGPU, 3.6.2 Limits (the default column)"),
)}

_lock = threading.Lock()
_UNSET = object()  # set_device_profile never ran: the environment decides
_chosen: object = _UNSET  # set_device_profile's name (None: no profile)
_blocks: list = []  # (token, name) of the device_profile blocks open, in the order entered
_in_force: object = _UNSET  # the innermost open block's name, else _chosen: what active() reads
_listeners: list = []  # called with no argument after each change (on_profile_change)
# device -> {profile name: its info under the profile, or the BackendUnavailable refusing it}
_views: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


def on_profile_change(listener) -> None:
    """Call `listener()` after each change of the profile in force from Python (set_device_profile,
    a device_profile block's start and end): the plan cache drops the plans made under the old
    limits (as on_device_lost listeners drop a lost device's)."""
    _listeners.append(listener)


def get_profile(name: str) -> DeviceProfile:
    """The profile called `name`; ValueError naming the known ones otherwise."""
    try:
        return PROFILES[name]
    except (KeyError, TypeError):
        raise ValueError(f"unknown device profile {name!r}: choose one of "
                         f"{', '.join(PROFILES)}") from None


def active() -> DeviceProfile | None:
    """The profile in force: the innermost open device_profile block's, else set_device_profile's,
    else PYFFTGL_DEVICE_PROFILE's, else None."""
    name = _in_force
    if name is _UNSET:
        name = os.environ.get(ENV) or None
        try:
            return None if name is None else PROFILES[name]
        except KeyError:
            raise ValueError(f"unknown device profile {name!r}: choose one of "
                             f"{', '.join(PROFILES)} ({ENV})") from None
    return None if name is None else PROFILES[name]


def _changed() -> None:
    """Recompute the profile in force (the lock held), for active() to read without it."""
    global _in_force
    _in_force = _blocks[-1][1] if _blocks else _chosen


def _tell_listeners() -> None:
    for listener in list(_listeners):
        listener()


def set_device_profile(name: str | None) -> None:
    """Make every device report the limits of profile `name` (see PROFILES), or its own (None),
    from now on, whatever PYFFTGL_DEVICE_PROFILE says and past the end of any device_profile
    block open now (in any thread). Plans made under the previous profile leave the plan cache."""
    global _chosen
    if name is not None:
        get_profile(name)
    with _lock:
        _chosen = name
        _blocks.clear()
        _changed()
    _tell_listeners()


@contextlib.contextmanager
def device_profile(name: str | None):
    """Profile `name` (None: the drivers' own limits) in force for a `with` block, then the one
    in force before it.

    Process-wide, as set_device_profile and PYFFTGL_DEVICE_PROFILE are, and not thread-local as
    scipy.fft.set_backend and set_workers are: those choose how this thread's calls compute,
    while a profile stands in for the device itself, and the device, its plan cache and the
    plans in it are shared by every thread (one device reporting two sets of limits at once
    would hand one thread's plans to the other). Blocks of several threads may overlap: the one
    entered last is in force while it is open, each block's end removes its own entry only, and
    once every block has ended the profile in force is the one before the first began.
    """
    if name is not None:
        get_profile(name)
    token = object()
    with _lock:
        _blocks.append((token, name))
        _changed()
    _tell_listeners()
    try:
        yield get_profile(name) if name is not None else None
    finally:
        with _lock:  # gone already where set_device_profile ran inside the block
            _blocks[:] = [b for b in _blocks if b[0] is not token]
            _changed()
        _tell_listeners()


_API_NAMES = {"vulkan": "Vulkan", "gl": "desktop OpenGL 4.3 (compute shaders)",
              "webgpu": "WebGPU"}


def check_api(api: str) -> None:
    """Refuse a backend the profile in force has no API for, before it is opened."""
    p = active()
    if p is not None and api not in p.apis:
        raise BackendUnavailable(f"device profile {p.name!r} ({p.device}) has no "
                                 f"{_API_NAMES[api]}: it runs on {' and '.join(p.apis)} only")


def _view(own, p: DeviceProfile):
    """A driver's DeviceInfo `own` under profile `p`, or the BackendUnavailable refusing it.

    A profile the driver cannot honour is refused, naming the limit: a workgroup shape (shared
    memory, invocations, x and y size) or fp64 above the driver's makes plans this driver cannot
    run. Workgroup counts and buffer ranges above the driver's take the driver's: they only bound
    how a transform is split into dispatches, and the driver's are the ones its dispatches must
    respect; so does a workgroup's z size, which no kernel uses."""
    if own.api not in p.apis:
        return BackendUnavailable(f"device profile {p.name!r} ({p.device}) has no "
                                  f"{_API_NAMES[own.api]}: it runs on {' and '.join(p.apis)} only")
    have = own.limits
    above = [(what, want, got) for what, want, got in (
        ("shared memory per workgroup", p.max_shared_bytes, have.max_shared_bytes),
        ("invocations per workgroup", p.max_invocations, have.max_invocations),
        *((f"workgroup size {'xy'[i]}", p.max_group_size[i], have.max_group_size[i])
          for i in range(2)),
        ("fp64", p.float64, own.float64)) if want > got]
    if above:
        what, want, got = above[0]
        want, got = ("yes", "no") if what == "fp64" else (want, got)
        return BackendUnavailable(
            f"device profile {p.name!r} ({p.device}) is above this {own.api} driver's limits "
            f"({own.name}): {what} {want}, the driver's {got}; choose a profile within them")
    limits = replace(p.limits, max_group_count=tuple(map(min, p.max_group_count,
                                                         have.max_group_count)),
                     max_group_size=p.max_group_size[:2] + (min(p.max_group_size[2],
                                                                have.max_group_size[2]),),
                     max_buffer_bytes=min(p.max_buffer_bytes, have.max_buffer_bytes),
                     max_texture_size=have.max_texture_size)
    return replace(own, limits=limits, float64=p.float64, profile=p.name)


def _view_of(device, p: DeviceProfile):
    """`device`'s view under `p` (or its refusal), made once per device and profile."""
    try:
        return _views[device][p.name]
    except KeyError:
        view = _view(device.driver_info, p)
        with _lock:
            _views.setdefault(device, {})[p.name] = view
        return view


def info_of(device):
    """What `device` reports (Device.info): its driver's own DeviceInfo, or the view of it under
    the profile in force; a profile that refuses the device leaves it its own (the selection
    layer, fit, refuses to hand it out)."""
    p = active()
    if p is None:
        return device.driver_info
    view = _view_of(device, p)
    return device.driver_info if isinstance(view, BackendUnavailable) else view


def fit(device):
    """`device`, where the profile in force lets it run (its limits are then the profile's:
    Device.info); BackendUnavailable naming the API or the limit the profile refuses it for."""
    p = active()
    if p is not None:
        view = _view_of(device, p)
        if isinstance(view, BackendUnavailable):  # a new one: the kept one gathers no traceback
            raise BackendUnavailable(str(view))
    return device


def describe(device) -> list[str]:
    """`info`'s lines on the profile a device runs under (none where it runs as itself)."""
    i = device.info
    if not i.profile:
        return []
    p, own = PROFILES[i.profile], device.driver_info.limits
    clamped = [w for w, a, b in (("groups", i.limits.max_group_count, p.max_group_count),
                                 ("max buffer", i.limits.max_buffer_bytes, p.max_buffer_bytes),
                                 ("workgroup z", i.limits.max_group_size, p.max_group_size))
               if a != b]
    lines = [f"  profile:       {p.name}: {p.device}",
             f"                 (the driver's own: {own.max_shared_bytes} bytes, "
             f"{own.max_invocations} invocations{', fp64' if device.driver_info.float64 else ''})"]
    if clamped:
        lines.append(f"                 {' and '.join(clamped)} held to the driver's")
    return lines
