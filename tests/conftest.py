"""Both backends, on whatever real driver this machine has (lavapipe/llvmpipe in CI).

A missing backend is a failure, not a skip: CI must prove the kernels on both APIs.
"""
import os
import re
import threading
import time

import numpy as np
import pytest

# llvmpipe and lavapipe compile a kernel for 4-wide rather than 8-wide vectors about a quarter
# faster, and compiling is most of what the suite does on them; GPU drivers ignore the variable.
os.environ.setdefault("LP_NATIVE_VECTOR_WIDTH", "128")
# KHR_debug output on every GL context the library makes (backends/gl.py), read before import.
os.environ.setdefault("PYFFTGL_GL_DEBUG", "1")

# The suite's own cache folder, set before any device opens (and inherited by the subprocesses
# and pytest-xdist workers): a user's tuned wisdom must not change which kernels the tests run,
# and the git-ignored folder keeps its SPIR-V between runs.
SUITE_CACHE = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                           ".test-cache")
os.environ["PYFFTGL_CACHE_DIR"] = SUITE_CACHE

from pyfftgl.backends import get_device  # noqa: E402 (after the environment above)
from pyfftgl.backends import gldebug  # noqa: E402
from pyfftgl.backends.base import PrecisionUnavailable  # noqa: E402

# The backends every GPU test runs on; test_webgpu.py's tier runs modules on "webgpu" alone
# (PYFFTGL_TEST_BACKENDS=webgpu in its subprocesses), once per wgpu adapter.
BACKENDS = tuple(os.environ.get("PYFFTGL_TEST_BACKENDS", "vulkan,gl").split(","))
EPS32 = float(np.finfo(np.float32).eps)
# Modules that plan and check without a GPU join the quick tier (`make check`, `-m quick`) whole;
# the others mark their quick tests themselves.
QUICK_MODULES = ("test_planner.py", "test_tables.py", "test_arguments.py", "test_house.py")


# Modules of long tests (hundreds of kernels, or arrays of 2^20 elements) run first, so that the
# two pytest workers do not end on one of them while the other sits idle.
HEAVY_MODULES = ("test_sizes.py", "test_tuning.py", "test_selftest.py")


def pytest_collection_modifyitems(items):
    for item in items:
        if item.path.name in QUICK_MODULES:
            item.add_marker(pytest.mark.quick)
    items.sort(key=lambda item: item.path.name not in HEAVY_MODULES)  # stable: order kept within


class _LayerLog:
    """The messages of Khronos' validation layer, read from the FIFO its settings name as the
    log (khronos_validation.log_filename): the layer reopens that file, truncating it, for each
    VkInstance, so a FIFO read by a thread keeps every message. tests/test_validation.py sets
    PYFFTGL_VK_LAYER_LOG in the subprocess that runs its tier."""

    ERROR = re.compile(r"^(\S+)\(ERROR\b")
    MARK = "pyfftgl-layer-log-mark"

    def __init__(self, path: str):
        self.path = path
        if not os.path.exists(path):
            os.mkfifo(path)
        self.lines: list[str] = []
        self._marks = 0
        self._seen = {}  # marker number -> lines read before it
        threading.Thread(target=self._read, daemon=True, name="vk-layer-log").start()

    def _read(self):
        while True:  # each writer (an instance of the layer, or sync()) ends with EOF
            with open(self.path, errors="replace") as f:
                for line in f:
                    if line.startswith(self.MARK):
                        self._seen[int(line.split()[1])] = len(self.lines)
                    else:
                        self.lines.append(line)

    def sync(self) -> int:
        """The number of lines read once everything the layer has written so far is read: the
        layer flushes each message as it reports it, so a marker written after it follows it."""
        self._marks += 1
        n = self._marks
        with open(self.path, "w") as f:
            f.write(f"{self.MARK} {n}\n")
        deadline = time.monotonic() + 30
        while n not in self._seen:
            assert time.monotonic() < deadline, "the validation layer's log stopped being read"
            time.sleep(0.001)
        return self._seen.pop(n)

    def errors(self, start: int, stop: int) -> list[str]:
        return [line for line in self.lines[start:stop] if self.ERROR.match(line)]


_LAYER_LOG = _LayerLog(os.environ["PYFFTGL_VK_LAYER_LOG"]) \
    if os.environ.get("PYFFTGL_VK_LAYER_LOG") else None


@pytest.fixture(autouse=_LAYER_LOG is not None)
def vulkan_layer_clean():
    """Under the validation layer (tests/test_validation.py): the test fails on any error the
    layer reports while it runs."""
    start = _LAYER_LOG.sync()
    yield
    stop = _LAYER_LOG.sync()
    errors = _LAYER_LOG.errors(start, stop)
    ids = {}
    for line in errors:
        ids[line.split("(")[0]] = ids.get(line.split("(")[0], 0) + 1
    assert not errors, f"validation-layer errors {ids}; the first: {errors[0][:600]}"


@pytest.fixture(autouse=True)
def gl_debug_clean():
    """The test fails on any message of type ERROR that GL's debug output (KHR_debug, on every
    context the library makes) reported while it ran."""
    start = len(gldebug.debug_errors)
    yield
    errors = gldebug.debug_errors[start:]
    assert not errors, f"{len(errors)} GL debug error(s): {errors[:5]}"


def pytest_sessionfinish(session):
    """Under the validation layer: every error of the session, one line each, for the parent."""
    out = os.environ.get("PYFFTGL_VK_LAYER_SUMMARY")
    if _LAYER_LOG is not None and out:
        with open(out, "w") as f:
            f.writelines(_LAYER_LOG.errors(0, _LAYER_LOG.sync()))


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """A device without float64 (WebGPU without shader-f64) must refuse double data with
    PrecisionUnavailable's message: such a test is reported xfailed, with the message checked."""
    outcome = yield
    report, exc = outcome.get_result(), call.excinfo
    if (call.when == "call" and exc is not None and exc.errisinstance(PrecisionUnavailable)
            and "[webgpu" in item.nodeid and not get_device("webgpu").info.float64
            and "lacks the shader-f64 feature" in str(exc.value)):
        report.outcome, report.wasxfail = "skipped", "no shader-f64: float64 refused as it must"


@pytest.fixture(params=BACKENDS)
def backend(request):
    device = get_device(request.param)  # raises BackendUnavailable (fails the test) if missing
    if request.param == "gl":
        with device.current():  # current only inside calls (backends/gl.py)
            assert device.ctx.error == "GL_NO_ERROR"
    yield request.param
    if request.param == "gl":
        with device.current():
            assert device.ctx.error == "GL_NO_ERROR"


def share(items, backend):
    """This backend's share of `items` when two backends split a sweep: every other item, so the
    sweep covers each item once, on one real driver, and each driver sees the whole range. The
    kernels are one GLSL source for both APIs; compiling each of hundreds of lengths twice on
    the software drivers doubled the suite's time for no path the other tests leave untried."""
    return list(items)[BACKENDS.index(backend)::len(BACKENDS)]


def random_complex(shape, seed=0):
    rng = np.random.default_rng(seed)
    return (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(np.complex64)


def l2_bound(n, factor=1.0):
    """The accuracy contract: rel L2 <= factor * eps * sqrt(log2 n) (log2 n at least 1)."""
    return factor * EPS32 * np.sqrt(max(1.0, np.log2(n)))


def linf_bound(n, factor=1.0):
    return factor * (2e-6 + 5e-7 * np.log10(max(n, 1)))


def snr_db(got, ref):
    """Signal to noise ratio of got against ref in dB: the fp16 storage contract is >= 50."""
    return 20 * np.log10(np.linalg.norm(ref) / np.linalg.norm(got - ref))


def assert_accurate(got, ref, n, factor=1.0):
    """got (float32 result) against ref (float64 FFT of the same float32 input)."""
    got = np.asarray(got, np.complex128)
    scale = np.linalg.norm(ref)
    if scale == 0:
        assert np.array_equal(got, ref)
        return
    rel_l2 = np.linalg.norm(got - ref) / scale
    rel_linf = np.max(np.abs(got - ref)) / np.max(np.abs(ref))
    assert rel_l2 <= l2_bound(n, factor), f"n={n}: rel L2 {rel_l2:.3e} > {l2_bound(n, factor):.3e}"
    assert rel_linf <= linf_bound(n, factor), (
        f"n={n}: rel Linf {rel_linf:.3e} > {linf_bound(n, factor):.3e}")


def run_installed_tests(module_file, plugin, excluded, cwd, *extra) -> str:
    """Run an installed package's test module (numpy's, scipy's) in a subprocess with `plugin`
    putting pyfftgl in place, the `excluded` tests deselected; its output once it passed."""
    import os
    import re
    import subprocess
    import sys
    site = os.path.dirname(os.path.dirname(os.path.dirname(module_file)))
    env = dict(os.environ, PYTHONPATH=os.path.dirname(__file__) + os.pathsep
               + os.environ.get("PYTHONPATH", ""))
    keep = " and ".join(f"not ({e})" for e in excluded)
    out = subprocess.run([sys.executable, "-m", "pytest", "-q", *extra, "-p", plugin, "-p",
                          "no:cacheprovider", f"--rootdir={site}", "-k", keep, module_file],
                         capture_output=True, text=True, cwd=cwd, env=env, timeout=3600)
    text = out.stdout + out.stderr
    assert out.returncode == 0, text[-3000:]
    assert "failed" not in text and re.search(r"\d+ passed", text)
    return text
