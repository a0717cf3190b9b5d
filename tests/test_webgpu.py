"""The WebGPU backend (issue 52): a quick check in the suite, and a tier per wgpu adapter.

The suite's GPU tests run on conftest.BACKENDS (Vulkan and GL); a third backend in every test
would blow the cold suite's budget, so the WebGPU tier runs in subprocesses, one per wgpu adapter
here (wgpu's Vulkan backend over lavapipe, its GL backend over llvmpipe), each with
PYFFTGL_TEST_BACKENDS=webgpu: the numpy surface (the quick tier's backend tests), the transform,
DCT/DST, signal and device-array modules, the device profiles that have WebGPU (apple-m1,
android-baseline, webgpu-default), webgpu_tier.py and the wgpu TextureFFT's tests. Marked
`webgpu`: `make test-webgpu` runs it (after `make test` in CI), the two adapters in parallel (one
pytest worker each).
"""
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import scipy.fft
import scipy.signal

import pyfftgl
import pyfftgl.signal
from conftest import assert_accurate, random_complex

TESTS = Path(__file__).resolve().parent
MODULES = ["test_fft.py", "test_realtransforms.py", "test_signal.py", "test_device_arrays.py"]


@pytest.mark.quick
def test_webgpu_runs_fft2_dctn_fftconvolve():
    x = random_complex((24, 40))
    assert_accurate(pyfftgl.fft2(x, backend="webgpu"), np.fft.fft2(x.astype(np.complex128)),
                    24 * 40)
    r = x.real.copy()
    ref = scipy.fft.dctn(r.astype(np.float64))
    assert np.abs(pyfftgl.dctn(r, backend="webgpu") - ref).max() <= 1e-5 * np.abs(ref).max()
    a, b = r[0], r[1, :9]
    ref = scipy.signal.fftconvolve(a.astype(np.float64), b.astype(np.float64))
    got = pyfftgl.signal.fftconvolve(a, b, backend="webgpu")
    assert np.abs(got - ref).max() <= 1e-5 * np.abs(ref).max()


@pytest.mark.webgpu
@pytest.mark.parametrize("adapter", ["vulkan", "gl"])
def test_webgpu_tier(adapter):
    # wgpu's Vulkan adapter runs naga's GLSL route (what a machine with no glslang runs: macOS,
    # Windows), barrier() included, which lavapipe runs for the whole workgroup; its GL adapter
    # glslang's SPIR-V (the default where glslang is installed)
    env = dict(os.environ, PYFFTGL_TEST_BACKENDS="webgpu", PYFFTGL_WEBGPU_ADAPTER=adapter,
               PYFFTGL_WEBGPU_SPIRV="0" if adapter == "vulkan" else "1",
               PYFFTGL_WEBGPU_NAGA_BARRIERS="1" if adapter == "vulkan" else "0")
    # One pytest run: the tests that take the backend fixture (now webgpu) or are WebGPU's own;
    # the rest of these modules is backend-free and runs in the main suite already.
    args = ["-m", "not slow and not webgpu", "-k", "webgpu or test_profile_tier", *MODULES,
            "test_numpy_api.py", "test_profiles.py", "test_memory_pool.py", "webgpu_tier.py",
            "test_webgpu.py",
            "test_webgpu_textures.py"]
    out = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *args],
                         capture_output=True, text=True, cwd=TESTS, env=env, timeout=3000)
    assert out.returncode == 0, f"{adapter}: {args}\n{out.stdout[-6000:]}{out.stderr[-2000:]}"


@pytest.mark.quick
@pytest.mark.parametrize("kernel", ["stockham.comp", "realfft.comp", "dct.comp", "signal.comp"])
def test_naga_spelling_keeps_doubles_exact_and_lexes(kernel):
    from pyfftgl import kernels
    src = kernels.webgpu_source(kernels.assemble(kernel, {"PRECISION": 64}, "webgpu"), naga=True)
    assert not re.search(r"\dlf\b", src) and "[[unroll]]" not in src
    assert not re.search(r'^\s*#error\s+"', src, re.M)
    for text in ("0.70710678118654752440", "0.92387953251128675613", "1.2345678901234567e-07"):
        parts = [float(np.float32(p)) for p in re.findall(r"double\(([^)]+)\)",
                                                           kernels.webgpu_source(
                                                               f"x = {text}lf;", naga=True))]
        assert len(parts) == 3 and (parts[0] + parts[1]) + parts[2] == float(text)


NAGA_BARRIERS = """
import pyfftgl
from pyfftgl.backends.webgpu import naga_refuses
dev = pyfftgl.get_device("webgpu")
print(dev.adapter.info["backend_type"], "subgroup-barrier" in dev.features,
      naga_refuses("void main() { barrier(); }", dev.glsl_barriers))
"""


@pytest.mark.parametrize("override", ["", "1"])
def test_naga_never_takes_barrier_on_vulkan_unless_told(override):
    """naga writes GLSL's barrier() into SPIR-V with subgroup execution scope, a race on GPUs
    (wrong fft2 on an H200's Vulkan driver): on wgpu's Vulkan adapter a kernel with barrier()
    goes to glslang even where the adapter offers subgroup barriers, unless
    PYFFTGL_WEBGPU_NAGA_BARRIERS=1 vouches for the driver."""
    env = dict(os.environ, PYFFTGL_WEBGPU_ADAPTER="vulkan", PYFFTGL_WEBGPU_NAGA_BARRIERS=override)
    out = subprocess.run([sys.executable, "-c", NAGA_BARRIERS], capture_output=True, text=True,
                         env=env, timeout=300)
    assert out.returncode == 0, out.stdout + out.stderr
    api, offered, refused = out.stdout.split()[-3:]
    assert api == "Vulkan" and offered == "True", out.stdout  # lavapipe offers the feature
    assert refused == ("False" if override else "True"), out.stdout
