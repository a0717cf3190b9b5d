"""Device profiles (pyfftgl/backends/profiles.py): the limits of real GPUs, proven on the software
drivers.

Profiles at or under the software drivers' 32 KB run their tier here, on each API the profile has
(split between the two drivers where it has both, as conftest.share splits the size sweeps): every
transform kind once and lengths to 2^16 that plan as one pass, four-step and Bluestein under each,
against numpy in float64. Profiles above 32 KB cannot run here: their plans for the same sample are
compiled to SPIR-V and checked by spirv-val, and every profile's plans are checked against its
limits without a GPU.
"""
import re
import shutil
import subprocess
from collections import defaultdict
from pathlib import Path

import numpy as np
import pytest

import pyfftgl
from pyfftgl import planner, profiles, kernels
from pyfftgl.backends import get_device
from pyfftgl.backends.base import BackendUnavailable, PrecisionUnavailable
from pyfftgl.planner import RealPass, Step
from pyfftgl.planner import build_table, element_limits
from conftest import BACKENDS, assert_accurate, share

SOFTWARE_SHARED = 32768  # lavapipe's and llvmpipe's shared memory: the profiles that run here
RUN_HERE = [p for p in profiles.PROFILES.values() if p.max_shared_bytes <= SOFTWARE_SHARED]
PLANNED_ONLY = [p for p in profiles.PROFILES.values() if p.max_shared_bytes > SOFTWARE_SHARED]

# case -> (numpy.fft function, input shape, real input, transformed axes). The lengths plan as
# one pass (1000, and 8192 with 32 KB), four-step (8192 with 16 KB, 15015, 2^16) and Bluestein
# (4099) under every profile run here (test_sample_covers_every_plan_shape checks it).
LENGTHS = {n: ("fft", (1 if n > 16384 else 2, n), False, (1,))
           for n in (1000, 4099, 8192, 15015, 65536)}
KINDS = {
    "ifft": ("ifft", (4, 96), False, (1,)),
    "rfft": ("rfft", (4, 250), True, (1,)),
    "rfft-16384": ("rfft", (2, 16384), True, (1,)),  # a four-step half with realfft.comp after it
    "irfft": ("irfft", (4, 129), False, (1,)),
    "fft2": ("fft2", (24, 40), False, (0, 1)),
    "ifft2": ("ifft2", (20, 36), False, (0, 1)),
    "rfft2": ("rfft2", (30, 48), True, (0, 1)),
    "irfft2": ("irfft2", (30, 25), False, (0, 1)),
    "fftn": ("fftn", (6, 10, 12), False, (0, 1, 2)),
    "hfft": ("hfft", (4, 65), False, (1,)),
    "ihfft": ("ihfft", (4, 128), True, (1,)),
}
CASES = {**{f"n={n}": c for n, c in LENGTHS.items()}, **KINDS}
# Planned (and compiled) only: one pass in 40, 48 and 64 KB, and columns of 2048 in 32-48 KB tiles.
LARGE = {**{f"n={n}": ("fft", (2, n), False, (1,)) for n in (10240, 12288, 16384)},
         "fft2-2048": ("fft2", (2048, 2048), False, (0, 1))}
BLUESTEIN = {"n=4099"}
ANY_OFFSETS = defaultdict(int, {None: 0})  # table offsets where only the shapes matter (non-empty)


def _tier():
    """(profile, backend, case): each case of each profile once, on a backend the profile has."""
    out = []
    for p in RUN_HERE:
        apis = [b for b in BACKENDS if b in p.apis]
        for b in apis:
            cases = share(CASES, b) if len(apis) == len(BACKENDS) else list(CASES)
            out += [pytest.param(p.name, b, c, id=f"{p.name}-{b}-{c}") for c in cases]
    return out


def _data(shape, real, seed):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(shape)
    return (x if real else x + 1j * rng.standard_normal(shape)).astype(
        np.float32 if real else np.complex64)


@pytest.mark.parametrize("name,backend,case", _tier())
def test_profile_tier(name, backend, case):
    fn, shape, real, axes = CASES[case]
    x = _data(shape, real, sum(shape))
    with pyfftgl.device_profile(name):
        info = get_device(backend).info
        assert (info.profile, info.limits.max_shared_bytes, info.limits.max_invocations) == (
            name, profiles.PROFILES[name].max_shared_bytes, profiles.PROFILES[name].max_invocations)
        got = getattr(pyfftgl, fn)(x, backend=backend)
    ref = getattr(np.fft, fn)(x.astype(np.float64 if real else np.complex128))
    assert got.shape == ref.shape and got.dtype in (np.complex64, np.float32)
    n = int(np.prod([max(shape[a], ref.shape[a]) for a in axes]))
    assert_accurate(got, ref, n, 2.0 if case in BLUESTEIN else 1.0)


# -- plans without a GPU: every profile ------------------------------------------------------

def _planned(shape, real, axes, fn):
    """(upload shape, steps) of a sample case, as the numpy API plans it (even innermost real
    lengths go up as half as many complex values)."""
    inverse = fn.startswith("i") or fn == "hfft"
    c2c = [Step("c2c", a, inverse=inverse, norm="backward") for a in axes[::-1]]
    if fn in ("rfft", "rfft2", "ihfft"):
        last = axes[-1]
        return (shape[:-1] + (shape[-1] // 2,),
                [Step("r2c", last, n=shape[-1], norm="backward")] + c2c[1:])
    if fn in ("irfft", "irfft2", "hfft"):
        return shape, ([Step("c2c", a, inverse=True, norm="backward") for a in axes[:-1]]
                       + [Step("c2r", axes[-1], n=2 * (shape[-1] - 1), norm="backward")])
    return shape, c2c


def _specs(profile, element_bytes=8, cases=CASES):
    limits = element_limits(profile.limits, element_bytes)
    for case, (fn, shape, real, axes) in cases.items():
        up, steps = _planned(shape, real, axes, fn)
        yield case, planner.plan_steps(up, steps, limits), limits


@pytest.mark.quick
@pytest.mark.parametrize("name", list(profiles.PROFILES))
def test_plans_fit_the_profile(name):
    """Every pass of the sample, in single and (where the device has it) double precision,
    within the device's workgroup shape, shared memory and dispatch grid."""
    p = profiles.PROFILES[name]
    for element_bytes in (8, 16) if p.float64 else (8,):
        for case, spec, limits in _specs(p, element_bytes, {**CASES, **LARGE}):
            for q in spec.passes:
                size = (q.group, 1, 1) if isinstance(q, RealPass) else (q.threads, q.lines, 1)
                assert np.prod(size) <= p.max_invocations, (case, q)
                assert all(s <= m for s, m in zip(size, p.max_group_size)), (case, q)
                if not isinstance(q, RealPass):
                    assert q.shared_bytes <= limits.max_shared_bytes, (case, q)
                for _, gx, gy in planner.dispatch_grids(q, spec.units, limits, element_bytes):
                    assert gx <= p.max_group_count[0] and gy <= p.max_group_count[1], (case, q)


@pytest.mark.quick
@pytest.mark.parametrize("name", list(profiles.PROFILES))
def test_sample_covers_every_plan_shape(name):
    algorithms = {}
    for case, spec, _ in _specs(profiles.PROFILES[name]):
        for a in spec.algorithms:
            algorithms.setdefault(a, case)
    assert {"stockham", "four-step", "bluestein"} <= set(algorithms), algorithms


@pytest.mark.quick
def test_small_devices_get_plan_shapes_of_their_own():
    """16 KB and 128 invocations change the plans (what makes running them here worth it)."""
    def shapes(p):
        return [(q.kernel, q.defines(ANY_OFFSETS)) for _, s, _ in _specs(p) for q in s.passes]
    pi, android, m1 = (profiles.PROFILES[n] for n in ("raspberry-pi-5", "android-baseline",
                                                        "apple-m1"))
    assert shapes(pi) != shapes(m1) and shapes(android) != shapes(pi)
    real = [q for _, s, _ in _specs(android) for q in s.passes if isinstance(q, RealPass)]
    assert real and all(q.group == 128 and q.defines(ANY_OFFSETS)["GROUP"] == 128
                        for q in real)


@pytest.mark.skipif(shutil.which("spirv-val") is None,
                    reason="spirv-val missing: Debian's spirv-tools (tools/setup.sh installs it)")
def test_large_profiles_compile_to_valid_spirv(tmp_path):
    """Profiles above 32 KB cannot run here: their kernels for the sample, as planned for them,
    are compiled to SPIR-V (as the Vulkan backend compiles them) and validated."""
    sources, most_shared = {}, {}
    for p in PLANNED_ONLY:
        for case, spec, _ in _specs(p, cases={**CASES, **LARGE}):
            offsets, at = {}, 0
            for key in spec.tables():
                offsets[key], at = at, at + build_table(key, np.complex64).size
            for q in spec.passes:
                sources.setdefault(kernels.assemble(q.kernel, q.defines(offsets), "vulkan"),
                                   (p.name, case))
                most_shared[p.name] = max(most_shared.get(p.name, 0),
                                          getattr(q, "shared_bytes", 0))
    # each profile's sample has kernels that need more than the software drivers' 32 KB (the
    # 64 KB ones more than NVIDIA's 48 KB): the ones that never ran here
    assert all(most_shared[p.name] > SOFTWARE_SHARED for p in PLANNED_ONLY), most_shared
    assert most_shared["amd-rdna3-radv"] > 49152, most_shared
    assert len(sources) >= 20
    for i, (source, where) in enumerate(sources.items()):
        path = tmp_path / f"{i}.spv"
        path.write_bytes(kernels.compile_spirv(source))
        out = subprocess.run(["spirv-val", "--target-env", "vulkan1.1", str(path)],
                             capture_output=True, text=True)
        assert out.returncode == 0, (where, out.stdout + out.stderr)


# -- selection, refusals, fp64 ---------------------------------------------------------------

@pytest.mark.quick
def test_names_environment_and_context(monkeypatch):
    assert list(profiles.PROFILES) == ["raspberry-pi-5", "android-baseline", "mali-g78",
                                       "apple-m1", "amd-rdna3-windows", "amd-rdna3-radv",
                                       "intel-arc-a770", "nvidia", "webgpu-default"]
    with pytest.raises(ValueError, match="unknown device profile 'pi'.*raspberry-pi-5"):
        pyfftgl.set_device_profile("pi")
    monkeypatch.setenv(profiles.ENV, "mali-g78")
    assert profiles.active().name == "mali-g78"
    with pyfftgl.device_profile("apple-m1") as p:
        assert profiles.active() is p is profiles.PROFILES["apple-m1"]
        with pyfftgl.device_profile(None):  # Python's choice wins over the environment
            assert profiles.active() is None
        assert profiles.active() is p
    assert profiles.active().name == "mali-g78"  # the environment again
    monkeypatch.setenv(profiles.ENV, "mali")
    with pytest.raises(ValueError, match=f"unknown device profile 'mali'.*{profiles.ENV}"):
        profiles.active()
    monkeypatch.delenv(profiles.ENV)
    assert profiles.active() is None


def test_profiles_above_the_driver_are_refused(backend):
    """Each profile either holds this driver to its limits or is refused naming the limit it
    exceeds (here: every profile above 32 KB, by its shared memory)."""
    own = get_device(backend).info
    ol = own.limits
    for p in profiles.PROFILES.values():
        with pyfftgl.device_profile(p.name):
            if backend not in p.apis:
                with pytest.raises(BackendUnavailable, match=f"'{p.name}'.*has no"):
                    get_device(backend)
                continue
            shared = p.max_shared_bytes > ol.max_shared_bytes
            if shared or p.max_invocations > ol.max_invocations or (p.float64 and not own.float64) \
                    or any(a > b for a, b in zip(p.max_group_size[:2], ol.max_group_size)):
                with pytest.raises(BackendUnavailable, match=(
                        f"'{p.name}'.*above this {backend} driver's limits" + (
                            f".*shared memory per workgroup {p.max_shared_bytes}, the "
                            f"driver's {ol.max_shared_bytes}" if shared else ""))):
                    get_device(backend)
                continue
            lim = get_device(backend).info.limits
            assert (lim.max_shared_bytes, lim.max_invocations, lim.max_group_size) == (
                p.max_shared_bytes, p.max_invocations,  # z: no kernel uses it, the driver's caps
                p.max_group_size[:2] + (min(p.max_group_size[2], ol.max_group_size[2]),))
            assert lim.max_buffer_bytes == min(p.max_buffer_bytes, own.limits.max_buffer_bytes)
            assert lim.max_group_count == tuple(map(min, p.max_group_count,
                                                    own.limits.max_group_count))
            assert lim.tuned == () and get_device(backend).info.float64 == p.float64
    assert get_device(backend).info == own  # the driver's own limits again


def test_apis_the_device_lacks():
    from pyfftgl.gl import TextureFFT
    gl = get_device("gl")
    with pyfftgl.device_profile("apple-m1"):
        with pytest.raises(BackendUnavailable, match="'apple-m1'.*no desktop OpenGL"):
            pyfftgl.fft(np.ones(8, np.complex64), backend="gl")
        with pytest.raises(BackendUnavailable, match="'apple-m1'"):  # the caller's context too
            TextureFFT(gl.ctx, (8, 8))
        assert get_device("auto").info.api == "vulkan"


def test_no_fp64_refuses_double_before_any_gpu_work(monkeypatch):
    dev = get_device("vulkan")
    work = []
    for method in ("buffer", "write", "program", "record"):
        real = getattr(dev, method)
        monkeypatch.setattr(dev, method, lambda *a, _m=method, _f=real, **k: (
            work.append(_m), _f(*a, **k))[1])
    x = np.arange(64, dtype=np.float64)
    with pyfftgl.device_profile("raspberry-pi-5"):
        misses = pyfftgl.plan_cache.stats()["misses"]
        for call in (lambda: pyfftgl.fft(x, backend="vulkan"),
                     lambda: pyfftgl.rfft(x, backend="vulkan"),
                     lambda: pyfftgl.ifft2(x.reshape(8, 8).astype(np.complex128), backend="vulkan"),
                     lambda: pyfftgl.fft(np.arange(64), backend="vulkan"),  # integers: double
                     lambda: pyfftgl.asarray(x, backend="vulkan")):
            with pytest.raises(PrecisionUnavailable, match=(
                    "under device profile 'raspberry-pi-5' has no fp64.*pass float32/complex64")
                               ) as err:
                call()
            assert isinstance(err.value, TypeError)
        assert work == [] and pyfftgl.plan_cache.stats()["misses"] == misses
    assert pyfftgl.fft(x[:8], backend="vulkan").dtype == np.complex128  # the driver has fp64


def test_info_shows_the_profile(capsys):
    from pyfftgl.__main__ import main
    with pyfftgl.device_profile("android-baseline"):
        assert main(["info"]) == 0
    out = capsys.readouterr().out
    assert "device profile: android-baseline" in out
    assert re.search(r"vulkan: works\n(.*\n)*  profile: +android-baseline", out)
    assert "shared memory: 16384 bytes" in out and "128 invocations, size (128, 128, 64)" in out
    assert "precision:     single (no fp64" in out
    assert re.search(r"gl: unavailable: .*'android-baseline'.*no desktop OpenGL", out)


@pytest.mark.quick
def test_docs_table_matches_the_profiles():
    """docs/devices.md's table is the profiles' figures (so the cited sources are theirs)."""
    text = (Path(__file__).parent.parent / "docs" / "devices.md").read_text()
    rows = {m.group(1): [c.strip() for c in m.group(2).split("|")]
            for m in re.finditer(r"^\| `([a-z0-9-]+)` \|(.*)\|$", text, re.M)}
    assert set(rows) == set(profiles.PROFILES)
    def size(b):
        return ("4 GiB - 1" if b == 2**32 - 1 else f"{b >> 30} GiB" if b % 2**30 == 0
                else f"{b >> 20} MiB")
    for name, p in profiles.PROFILES.items():
        cells = rows[name]
        assert cells[1:8] == [
            f"{p.max_shared_bytes // 1024} KB", str(p.max_invocations),
            " x ".join(map(str, p.max_group_size)), " x ".join(map(str, p.max_group_count)),
            size(p.max_buffer_bytes), "yes" if p.float64 else "no",
            ", ".join({"vulkan": "Vulkan", "gl": "GL", "webgpu": "WebGPU"}[a]
                      for a in p.apis)], name


@pytest.mark.quick
def test_blocks_of_two_threads_leave_no_profile_in_force():
    """device_profile blocks entered and left by two threads at once (their ends interleaved
    with the other's starts) leave the profile in force before them once all have ended, and
    every block sees a profile in force (the process-wide semantics: device_profile's docstring)."""
    import sys
    import threading
    import time
    assert profiles.active() is None
    seen, errors = [], []
    start = threading.Barrier(2)

    def blocks(name):
        try:
            start.wait()
            for _ in range(1000):
                with pyfftgl.device_profile(name):
                    time.sleep(0)  # the other thread's block starts or ends here
                    seen.append(profiles.active() is not None)
                time.sleep(0)
        except BaseException as e:  # reported below: an assert in a thread would pass silently
            errors.append(e)

    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # switch threads often, inside the blocks' starts and ends
    try:
        threads = [threading.Thread(target=blocks, args=(n,))
                   for n in ("raspberry-pi-5", "android-baseline")]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    finally:
        sys.setswitchinterval(interval)
    assert not errors and len(seen) == 2000 and all(seen)
    assert profiles.active() is None


def test_a_profile_change_tells_the_listeners():
    """The plan cache listens (plans.py registers it), and drops the plans made under the limits
    before; a device keeps its driver's own info throughout (its `info` is a view)."""
    calls, listening = [], [True]  # the listener stays registered: quiet after this test
    profiles.on_profile_change(lambda: listening[0] and calls.append(profiles.active()))
    x = np.arange(16, dtype=np.complex64)
    np.testing.assert_allclose(pyfftgl.fft(x, backend="vulkan"), np.fft.fft(x), atol=1e-3)
    dev = get_device("vulkan")
    own = dev.driver_info
    assert pyfftgl.plan_cache.stats()["plans"] > 0 and dev.info is own and not own.profile
    with pyfftgl.device_profile("android-baseline") as p:
        assert pyfftgl.plan_cache.stats()["plans"] == 0
        assert dev.info.profile == p.name and dev.driver_info is own and "info" not in vars(dev)
        assert get_device("vulkan").info is dev.info  # the view is made once per profile
    listening[0] = False
    assert calls == [p, None] and dev.info is own


@pytest.mark.quick
def test_set_device_profile_outlasts_open_blocks(monkeypatch):
    from pyfftgl.backends import profiles as selection
    for name in ("_chosen", "_in_force"):  # the environment decides again after this test
        monkeypatch.setattr(selection, name, getattr(selection, name))
    with pyfftgl.device_profile("apple-m1"):
        pyfftgl.set_device_profile("mali-g78")
        assert profiles.active().name == "mali-g78"
    assert profiles.active().name == "mali-g78"
    pyfftgl.set_device_profile(None)
    assert profiles.active() is None
