"""Khronos' validation layer, synchronization validation on, over the Vulkan half of the tests
that drive the device loop (render loop, device arrays, threads); prints the errors per VUID.

For a GPU machine (the layer found through $VK_LAYER_PATH or installed) as for lavapipe. It
works with any kp: under patch level 11 it counts the errors that level 12 and pyfftgl's copy
barriers fix (docs/drivers.md). The layer logs to a FIFO read here, since it reopens, and so
truncates, its log file for every VkInstance.

    python tools/validate_gpu.py [more pytest arguments]    (from a checkout's root)

Exit status: 0 when the layer ran and reported no error, 1 when it reported errors, 2 when it
never ran (not found).
"""
import collections
import os
import re
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

LAYER = "VK_LAYER_KHRONOS_validation"
TESTS = ["tests/test_render_loop.py", "tests/test_device_arrays.py", "tests/test_threads.py"]
ERROR = re.compile(r"^(\S+)\(ERROR\b")
END = "pyfftgl-validate-gpu-end\n"


def layer_settings(log) -> str:
    """vk_layer_settings.txt: synchronization validation, every error (no duplicate limit)
    logged to `log`."""
    return ("khronos_validation.enables = "
            "VK_VALIDATION_FEATURE_ENABLE_SYNCHRONIZATION_VALIDATION_EXT\n"
            "khronos_validation.debug_action = VK_DBG_LAYER_ACTION_LOG_MSG\n"
            f"khronos_validation.log_filename = {log}\n"
            "khronos_validation.report_flags = error\n"
            "khronos_validation.enable_message_limit = false\n")


def main(argv) -> int:
    lines, opened, done = [], [0], threading.Event()
    with tempfile.TemporaryDirectory() as d:
        log, settings = Path(d) / "layer.log", Path(d) / "vk_layer_settings.txt"
        os.mkfifo(log)
        settings.write_text(layer_settings(log))

        def read():
            while True:  # one writer after another: each VkInstance, then END from here
                with open(log, errors="replace") as f:
                    opened[0] += 1
                    for line in f:
                        if line == END:
                            done.set()
                            return
                        lines.append(line)
        threading.Thread(target=read, daemon=True).start()
        env = dict(os.environ, VK_INSTANCE_LAYERS=LAYER, VK_LAYER_SETTINGS_PATH=str(settings))
        env.pop("PYFFTGL_VK_LAYER_LOG", None)  # tests/conftest.py's own reader stays off
        cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-k", "vulkan",
               *TESTS, *argv]
        run = subprocess.run(cmd, env=env, text=True, capture_output=True)
        with open(log, "w") as f:
            f.write(END)
        done.wait(60)
    try:
        from pyfftgl import _kp as kp
    except ImportError:  # a tree from before pyfftgl built its own Kompute (level 11: top-level kp)
        import kp
    level = getattr(kp, "PATCH_LEVEL", 11 if hasattr(kp.Sequence, "eval_async_after") else "?")
    tail = (run.stdout + run.stderr).strip().splitlines()
    print(f"pytest: {tail[-1] if tail else '(no output)'} (exit {run.returncode})")
    print(f"kp patch level: {level}")
    if opened[0] <= 1:
        print(f"the layer never opened its log: {LAYER} was not loaded "
              "(install vulkan-validationlayers or set VK_LAYER_PATH)")
        return 2
    counts = collections.Counter(m.group(1) for m in map(ERROR.match, lines) if m)
    for vuid, n in counts.most_common():
        print(f"{n:8d}  {vuid}")
    print(f"{sum(counts.values())} validation errors")
    return 1 if counts else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
