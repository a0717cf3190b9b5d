"""Vulkan under Khronos' validation layer with synchronization validation (issue 39).

The layer must be enabled before kp makes its instance, so the tier runs in a subprocess whose
environment enables it (VK_INSTANCE_LAYERS) and names a settings file; conftest.py's
vulkan_layer_clean fails each test of the tier on any error the layer logs while it runs. The
tier: validation_tier.py (every kernel family, split and timed dispatches, host transfers,
device arrays, threads) and tests/test_render_loop.py's Vulkan tests (the device loop: held and
merged submissions, barrier skipping, work-buffer alternation, ordering). tools/validate_gpu.py
runs the same on a GPU and counts the errors per VUID.
"""
import ctypes
import os
import runpy
import subprocess
import sys
from pathlib import Path

LAYER = "VK_LAYER_KHRONOS_validation"
TESTS = Path(__file__).resolve().parent
TIER = [str(TESTS / "validation_tier.py"), str(TESTS / "test_render_loop.py")]
# Not the test that times how fast calls are issued: the layer's host cost per call is what it
# would measure (it runs without the layer in the suite itself).
TIER_SELECTION = "(vulkan or validation_tier) and not queue_without_waiting"
layer_settings = runpy.run_path(str(TESTS.parent / "tools" / "validate_gpu.py"))["layer_settings"]


class _LayerProperties(ctypes.Structure):
    _fields_ = [("layerName", ctypes.c_char * 256), ("specVersion", ctypes.c_uint32),
                ("implementationVersion", ctypes.c_uint32), ("description", ctypes.c_char * 256)]


def instance_layers() -> set[str]:
    """The instance layers the Vulkan loader finds (VK_LAYER_PATH and the system's)."""
    enum = ctypes.CDLL("libvulkan.so.1").vkEnumerateInstanceLayerProperties
    enum.restype = ctypes.c_int32
    count = ctypes.c_uint32(0)
    assert enum(ctypes.byref(count), None) == 0
    props = (_LayerProperties * count.value)()
    assert enum(ctypes.byref(count), props) in (0, 5)  # VK_SUCCESS, VK_INCOMPLETE
    return {p.layerName.decode() for p in props[: count.value]}


def layer_env(directory: Path) -> dict:
    """The environment of a process whose Vulkan instances load the validation layer with
    synchronization validation, every error (no duplicate limit) logged to a FIFO in
    `directory` that conftest.py reads; the session's errors end up in summary.txt there."""
    log, summary = directory / "layer.log", directory / "summary.txt"
    settings = directory / "vk_layer_settings.txt"
    settings.write_text(layer_settings(log))
    return dict(os.environ, VK_INSTANCE_LAYERS=LAYER, VK_LAYER_SETTINGS_PATH=str(settings),
                PYFFTGL_VK_LAYER_LOG=str(log), PYFFTGL_VK_LAYER_SUMMARY=str(summary))


def test_vulkan_tier_is_clean_under_the_validation_layer(tmp_path):
    assert LAYER in instance_layers(), (
        f"the Vulkan loader finds no {LAYER}: install Debian's vulkan-validationlayers "
        "(tools/setup.sh does), or point VK_LAYER_PATH at the layer")
    out = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                          "-k", TIER_SELECTION, *TIER], capture_output=True, text=True,
                         cwd=TESTS.parent, env=layer_env(tmp_path), timeout=900)
    text = out.stdout + out.stderr
    assert out.returncode == 0, text[-6000:]
    assert " passed" in text and "error" not in text.splitlines()[-1], text[-2000:]
    errors = (tmp_path / "summary.txt").read_text()
    assert errors == "", errors[:3000]
