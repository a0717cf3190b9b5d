"""pytest plugin: run numpy.fft's own tests with pyfftgl's functions in place of numpy's (the
module attributes the tests call through `np.fft.<name>`), restored at the end. Prints how many
of the transforms pyfftgl computed."""
import numpy as np

import pyfftgl

NAMES = ("fft", "ifft", "fft2", "ifft2", "fftn", "ifftn", "rfft", "irfft", "rfft2", "irfft2",
         "rfftn", "irfftn", "hfft", "ihfft")
_saved = {}
calls = 0


def _counted(func):
    def wrapper(*args, **kwargs):
        global calls
        calls += 1
        return func(*args, **kwargs)
    wrapper.__name__ = wrapper.__qualname__ = func.__name__
    wrapper.__doc__ = func.__doc__
    return wrapper


def pytest_configure(config):
    for name in NAMES:
        _saved[name] = getattr(np.fft, name)
        setattr(np.fft, name, _counted(getattr(pyfftgl, name)))


def pytest_unconfigure(config):
    for name, func in _saved.items():
        setattr(np.fft, name, func)


def pytest_terminal_summary(terminalreporter):
    terminalreporter.write_line(f"pyfftgl computed {calls} numpy.fft calls")
