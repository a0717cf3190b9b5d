"""pytest plugin: scipy.signal's fftconvolve and oaconvolve replaced by pyfftgl.signal's before
scipy's own test module imports them, to run its TestFFTConvolve and TestOAConvolve classes."""
import scipy.signal

import pyfftgl.signal

calls = {"n": 0}


def _counted(fn):
    def wrapper(*args, **kwargs):
        calls["n"] += 1
        return fn(*args, **kwargs)
    wrapper.__name__, wrapper.__doc__ = fn.__name__, fn.__doc__
    return wrapper


def pytest_configure(config):
    from scipy._lib._array_api import xp_capabilities_table  # the test module's decorators read it
    for name in ("fftconvolve", "oaconvolve"):
        ours = _counted(getattr(pyfftgl.signal, name))
        xp_capabilities_table[ours] = xp_capabilities_table[getattr(scipy.signal, name)]
        setattr(scipy.signal, name, ours)


def pytest_terminal_summary(terminalreporter):
    terminalreporter.write_line(f"pyfftgl computed {calls['n']} scipy.signal calls")
