"""`python -m pyfftgl selftest`: Ergun's randomized checks, which need no reference FFT.

The checks themselves are proved on host transforms (numpy's FFT passes them, a transform wrong
in one bin, in its sign or in its scale fails them); the command runs them on both backends."""
import subprocess
import sys

import numpy as np
import pytest

from pyfftgl import selftest
from pyfftgl.__main__ import main

from conftest import share


def _numpy_fftn(a, axes):
    return np.fft.fftn(a.astype(np.complex128), axes=axes)


@pytest.mark.parametrize("shape, axes", [((64,), (0,)), ((8, 12), (0, 1)), ((5, 31), (1,)),
                                         ((4, 6, 10), (0, 1, 2))])
def test_numpy_passes_the_checks(shape, axes):
    rng = np.random.default_rng(0)
    for inverse, f in ((False, np.fft.fftn), (True, np.fft.ifftn)):
        checks = selftest.complex_checks(lambda a: f(a.astype(np.complex128), axes=axes), shape,
                                         axes, inverse, rng, "numpy")
        assert len(checks) == 3 + 2 * len(axes)
        # (the checks round their inputs to float32: that rounding is the floor)
        assert all(c.ok(1e-6) for c in checks), [(c.name, c.error) for c in checks]
    if len(axes) == len(shape):
        checks = selftest.real_checks(
            lambda a: np.fft.rfftn(a.astype(np.float64)),
            lambda a, s: np.fft.irfftn(a, s=s, axes=axes), shape, rng, "numpy")
        # (the checks round their inputs to float32: that rounding is the floor)
        assert all(c.ok(1e-6) for c in checks), [(c.name, c.error) for c in checks]


def _wrong_bin(a, axes):
    y = _numpy_fftn(a, axes)
    y[(0,) * (y.ndim - 1) + (3,)] *= 1 + 1e-4  # one output value 1e-4 off
    return y


@pytest.mark.parametrize("wrong, failing", [
    (_wrong_bin, {"impulse", "frequency shift axis 1"}),  # linear, so linearity holds
    (lambda a, axes: np.fft.ifftn(a, axes=axes) * 128,  # the exponent's sign flipped
     {"time shift axis 0", "frequency shift axis 1"}),
    (lambda a, axes: 2 * _numpy_fftn(a, axes), {"impulse", "constant"}),  # the scale
    (lambda a, axes: np.roll(_numpy_fftn(a, axes), 1, axis=0), {"constant", "time shift axis 0"}),
])
def test_wrong_transforms_fail_the_checks(wrong, failing):
    rng = np.random.default_rng(1)
    checks = selftest.complex_checks(lambda a: wrong(a, (0, 1)), (8, 16), (0, 1), False, rng,
                                     "wrong")
    failed = {c.name for c in checks if not c.ok()}
    assert failing <= failed, f"expected {failing} among the failures, got {failed}"


def test_cases_cover_every_kind_of_transform():
    cases = selftest.cases_for(1 << 20)
    assert ((1 << 20,), (0,)) in cases and ((1024, 1024), (0, 1)) in cases
    assert ((256, 64, 64), (0, 1, 2)) in cases
    assert any(s[-1] == 1009 for s, _ in cases)  # Bluestein
    assert all(np.prod(s) <= 1 << 20 for s, _ in cases)
    assert selftest.cases_for(1000)[0] == ((1000,), (0,))


def test_command_passes_on_both_backends(capsys):
    assert main(["selftest", "--size", "256", "--backend", "vulkan", "gl"]) == 0
    text = capsys.readouterr().out
    for api in ("vulkan", "gl"):
        assert f"{api}:" in text and f"{api}: 83/83 checks pass" in text
    assert "device" in text and "rel Linf" in text and "FAIL" not in text


def test_quick_command_checks_every_case_at_2_10_elements(capsys):
    # make test's installed tier runs `selftest --quick`: the same five kinds of case, small.
    assert main(["selftest", "--quick", "--backend", "gl"]) == 0
    text = capsys.readouterr().out
    for shape in ("(1024,)", "(32, 32)", "(16, 8, 8)", "(1, 1009)", "(2, 360)"):
        assert f"fftn {shape}" in text, shape
    assert "(65536,)" not in text and "gl: 83/83 checks pass" in text


def test_checks_pass_on_the_drivers_at_2_20_elements(backend):
    """The checks at 2^20 elements per array on the software drivers, each case on one of them
    (conftest.share): both drivers run arrays of 2^20 elements."""
    cases = share(selftest.cases_for(1 << 20), backend)
    assert any(np.prod(shape) >= 1 << 20 for shape, _ in cases)
    checks = selftest.run(backend, cases=cases, echo=lambda line: None)
    assert len(checks) >= 10 * len(cases)
    worst = max(checks, key=lambda c: c.error)
    assert all(c.ok() for c in checks), (
        f"{worst.transform} {worst.name}: rel Linf {worst.error:.2e}")


def test_command_fails_when_a_check_fails():
    """A tolerance no float32 transform meets makes checks fail: exit status 1, FAIL lines
    (in a subprocess, as a user runs it)."""
    run = subprocess.run([sys.executable, "-m", "pyfftgl", "selftest", "--size", "64",
                          "--backend", "vulkan", "--tolerance", "1e-12"],
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 1, run.stdout + run.stderr
    assert "FAIL" in run.stdout and "device" in run.stdout
