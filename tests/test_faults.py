"""Device faults: work the driver refuses raises pyfftgl.DeviceError with the driver's message at
the next host wait and leaves the device usable; a lost device refuses its plans' and arrays'
work before any of it reaches the driver, and the next call opens a new device.

A real lost device cannot be provoked on the software drivers (lavapipe and llvmpipe never
lose one), so the loss is declared through Device.failure, the path the backends take when the
driver reports one; the refused submission below is a real driver error."""
import json
import subprocess
import sys

import numpy as np
import pytest

import pyfftgl
from pyfftgl import planner, kernels
from pyfftgl.backends import get_device
from pyfftgl.backends.base import Dispatch
from pyfftgl.backends.gldebug import expected_errors

from conftest import assert_accurate


def test_gl_refused_dispatch_raises_device_error_and_device_stays_usable():
    dev = get_device("gl")
    buf = dev.buffer(64)
    program = kernels.get_program(dev, "copy.comp", {}, planner.PUSH_NAMES)
    too_many = dev.info.limits.max_group_count[0] + 1  # glDispatchCompute: GL_INVALID_VALUE
    sub = dev.record([Dispatch(program, (too_many, 1, 1), np.zeros(6, np.uint32), (buf, buf))])
    with expected_errors():  # the driver's refusal, which GL's debug output also reports
        sub.run(wait=False)
    with pytest.raises(pyfftgl.DeviceError, match="GL_INVALID_VALUE") as info:
        dev.finish()
    assert info.value.driver_message == "GL_INVALID_VALUE" and not info.value.lost
    assert info.value.backend == "gl" and get_device("gl") is dev
    dev.finish()  # reported once
    x = np.arange(64, dtype=np.float32).astype(np.complex64)
    assert_accurate(pyfftgl.fft(x, backend="gl"), np.fft.fft(x.astype(np.complex128)), 64)


LOSS_SCRIPT = """
import json, sys, numpy as np, pyfftgl
from pyfftgl.backends import get_device
backend = sys.argv[1]
old = get_device(backend)
x = np.arange(256, dtype=np.float32).astype(np.complex64)
p = pyfftgl.plan((256,), np.complex64, kind="fft", backend=backend)
d = pyfftgl.asarray(x, backend=backend)
o = pyfftgl.asarray(x, backend=backend)
p(d, out=o)
err = old.failure("running a submission", "VK_ERROR_DEVICE_LOST (the driver's words)")
seen = {"lost": err.lost, "message": str(err)}
ref = np.fft.fft(x.astype(np.complex128))
# A Plan's host call takes the backend's device of the moment: it runs on the new one.
y = p(x)
seen["plan_rel_err"] = float(np.linalg.norm(y - ref) / np.linalg.norm(ref))
refused = []
for name, call in (("device plan", lambda: p(d, out=o)),
                   ("array", o.get), ("function", lambda: pyfftgl.fft(d))):
    try:
        call()
        refused.append((name, None))
    except pyfftgl.DeviceError as e:
        refused.append((name, e.lost))
seen["refused"] = refused
new = get_device(backend)
seen["new_device"] = new is not old
y = pyfftgl.fft(x, backend=backend)
seen["rel_err"] = float(np.linalg.norm(y - ref) / np.linalg.norm(ref))
print(json.dumps(seen))
"""


def test_lost_device_refuses_its_work_and_a_new_one_opens(backend):
    """In a process of its own: the loss retires the process's device. Device arrays and device
    calls of the lost device are refused; host calls, functions and Plans alike, run on the
    new device."""
    out = subprocess.run([sys.executable, "-c", LOSS_SCRIPT, backend], capture_output=True,
                         text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    seen = json.loads(out.stdout.strip().splitlines()[-1])
    assert seen["lost"] and "VK_ERROR_DEVICE_LOST" in seen["message"]
    assert seen["refused"] == [["device plan", True], ["array", True], ["function", True]]
    assert seen["new_device"] and seen["rel_err"] < 1e-6 and seen["plan_rel_err"] < 1e-6
