"""The exceptions of the backends: their own module, so that the device profiles (profiles.py),
which the Device protocol (base.py) reads its `info` through, raise them without importing base."""
from __future__ import annotations


class BackendUnavailable(RuntimeError):
    """A requested backend cannot run here; the message says why and how to fix it."""


class PrecisionUnavailable(BackendUnavailable, TypeError):
    """The device lacks what a precision needs (double: Vulkan's shaderFloat64, GL 4.0's
    GL_ARB_gpu_shader_fp64); a TypeError too, as for any dtype pyfftgl cannot compute."""


class DeviceError(RuntimeError):
    """The driver failed work pyfftgl gave it: a failed submission or a lost device.

    `driver_message` is the driver's own report; `lost` says the device is gone, in which case
    its plans and arrays refuse further work and the next call that names the backend opens a
    new device."""

    def __init__(self, message: str, *, backend: str, driver_message: str, lost: bool = False):
        super().__init__(message)
        self.backend, self.driver_message, self.lost = backend, driver_message, lost
