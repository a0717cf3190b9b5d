"""pytest plugin: run scipy.fft's own tests with pyfftgl as scipy.fft's global backend and scipy's
as the fallback for what pyfftgl declines. Prints how many calls pyfftgl computed."""
import scipy.fft

import pyfftgl.scipy_fft


def pytest_configure(config):
    scipy.fft.set_global_backend(pyfftgl.scipy_fft)
    scipy.fft.register_backend("scipy")


def pytest_terminal_summary(terminalreporter):
    terminalreporter.write_line(f"pyfftgl computed {pyfftgl.scipy_fft.handled} scipy.fft calls")
