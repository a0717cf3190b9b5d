"""The numpy.fft surface against numpy in float64: random shapes (1-D to 4-D), axes subsets and
orders, s crop/pad, every norm, C/F-ordered and negatively strided inputs, on both backends."""
import numpy as np
import pytest

import pyfftgl
from conftest import assert_accurate, run_installed_tests

NORMS = [None, "backward", "ortho", "forward"]


def rand(shape, real, seed, order="C"):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(shape)
    if not real:
        x = x + 1j * rng.standard_normal(shape)
    x = x.astype(np.float32 if real else np.complex64)
    return np.asfortranarray(x) if order == "F" else x


def compare(got, ref, n_total, bluestein=False):
    """Shapes and dtypes as numpy's single-precision results, values within the contract."""
    assert got.shape == ref.shape
    want = np.float32 if ref.dtype.kind == "f" else np.complex64
    assert got.dtype == want, (got.dtype, want)
    assert_accurate(got, ref.astype(np.complex128), max(n_total, 2), 2.0 if bluestein else 1.0)


def cases(seed):
    """Random (shape, axes, s) triples for the N-D functions."""
    rng = np.random.default_rng(seed)
    out = []
    for ndim in (1, 2, 3, 4):
        for _ in range(3):
            shape = tuple(int(x) for x in rng.integers(1, 12 if ndim > 2 else 40, ndim))
            k = int(rng.integers(1, ndim + 1))
            axes = [int(a) for a in rng.permutation(ndim)[:k]]
            if rng.random() < 0.5:
                axes = [a - ndim for a in axes]  # negative axes
            s = None
            if rng.random() < 0.5:
                s = [int(x) for x in rng.integers(1, 24, k)]
            out.append((shape, axes, s))
    return out


@pytest.mark.parametrize("name", ["fftn", "ifftn", "rfftn", "irfftn"])
@pytest.mark.parametrize("seed", [1, 2])
def test_nd_functions(backend, name, seed):
    real_in = name == "rfftn"
    for i, (shape, axes, s) in enumerate(cases(seed)):
        x = rand(shape, real_in, seed * 100 + i)
        norm = NORMS[i % 4]
        got = getattr(pyfftgl, name)(x, s=s, axes=axes, norm=norm, backend=backend)
        ref = getattr(np.fft, name)(x.astype(np.float64 if real_in else np.complex128), s=s,
                                    axes=axes, norm=norm)
        n_total = int(np.prod([ref.shape[a] for a in axes]))
        compare(got, ref, n_total, bluestein=True)


@pytest.mark.parametrize("name", ["fft", "ifft", "rfft", "irfft", "hfft", "ihfft"])
@pytest.mark.parametrize("norm", NORMS)
def test_1d_functions(backend, name, norm):
    real_in = name in ("rfft", "ihfft")
    for i, (shape, axis, n) in enumerate([((30,), -1, None), ((5, 16), 0, None),
                                          ((4, 6, 10), 1, 7), ((3, 64), -1, 100),
                                          ((8, 9), -1, 6), ((2, 3, 33), 2, 33)]):
        x = rand(shape, real_in, i)
        got = getattr(pyfftgl, name)(x, n=n, axis=axis, norm=norm, backend=backend)
        ref = getattr(np.fft, name)(x.astype(np.float64 if real_in else np.complex128), n=n,
                                    axis=axis, norm=norm)
        compare(got, ref, ref.shape[axis], bluestein=True)


@pytest.mark.parametrize("name", ["fft2", "ifft2", "rfft2", "irfft2"])
def test_2d_functions(backend, name):
    real_in = name == "rfft2"
    for i, (shape, axes, s) in enumerate([((16, 32), (-2, -1), None),
                                          ((3, 20, 12), (0, 2), (8, 10)),
                                          ((64, 64), (1, 0), None), ((5, 7), (-2, -1), (9, 4))]):
        x = rand(shape, real_in, i)
        got = getattr(pyfftgl, name)(x, s=s, axes=axes, backend=backend)
        ref = getattr(np.fft, name)(x.astype(np.float64 if real_in else np.complex128), s=s,
                                    axes=axes)
        compare(got, ref, int(np.prod([ref.shape[a] for a in axes])), bluestein=True)


@pytest.mark.parametrize("layout", ["F", "negative", "sliced"])
def test_memory_layouts(backend, layout):
    base = rand((12, 16, 10), False, 7)
    if layout == "F":
        x = np.asfortranarray(base)
    elif layout == "negative":
        x = base[::-1, :, ::-1]
    else:
        x = base[::2, 3:, ::3]
    keep = x.copy()
    ref = np.fft.fftn(x.astype(np.complex128), axes=(0, 2))
    compare(pyfftgl.fftn(x, axes=(0, 2), backend=backend), ref, x.shape[0] * x.shape[2], True)
    r = np.ascontiguousarray(x.real)[..., ::-1]
    compare(pyfftgl.rfftn(r, backend=backend), np.fft.rfftn(r.astype(np.float64)), r.size, True)
    assert np.array_equal(x, keep)


def test_repeated_axes_like_numpy(backend):
    x = rand((8, 6), False, 3)
    got = pyfftgl.fftn(x, axes=(0, 0, 1), backend=backend)
    compare(got, np.fft.fftn(x.astype(np.complex128), axes=(0, 0, 1)), 8 * 8 * 6)


def test_round_trips(backend):
    r = rand((6, 32, 20), True, 4)
    back = pyfftgl.irfftn(pyfftgl.rfftn(r, backend=backend), s=r.shape, axes=(0, 1, 2),
                          backend=backend)
    assert back.dtype == np.float32
    assert_accurate(back, r.astype(np.complex128), r.size, 1.5)
    x = rand((10, 24), False, 5)
    assert_accurate(pyfftgl.ifft2(pyfftgl.fft2(x, backend=backend), backend=backend),
                    x.astype(np.complex128), x.size, 1.5)


def test_out_argument(backend):
    x = rand((4, 16), False, 6)
    out = np.empty((4, 16), np.complex64)
    res = pyfftgl.fft(x, out=out, backend=backend)
    assert res is out
    compare(out, np.fft.fft(x.astype(np.complex128)), 16)
    wide = np.empty((4, 16), np.complex128)
    pyfftgl.fft2(x, out=wide, backend=backend)
    assert_accurate(wide, np.fft.fft2(x.astype(np.complex128)), 64)
    with pytest.raises(ValueError, match="output array has wrong shape"):
        pyfftgl.fft(x, out=np.empty((4, 8), np.complex64), backend=backend)
    with pytest.raises(TypeError):
        pyfftgl.fft(x, out=np.empty((4, 16), np.float32), backend=backend)
    real_out = np.empty((4, 30), np.float32)
    assert pyfftgl.irfft(x, out=real_out, backend=backend) is real_out


def test_empty_batches(backend):
    for name, shape in (("fft", (0, 8)), ("rfft", (0, 8)), ("fftn", (0, 4, 4))):
        dtype = np.float32 if name == "rfft" else np.complex64
        x = np.zeros(shape, dtype)
        kw = dict(axes=(1, 2)) if name == "fftn" else {}
        got = getattr(pyfftgl, name)(x, backend=backend, **kw)
        ref = getattr(np.fft, name)(x, axes=(1, 2)) if name == "fftn" else getattr(np.fft, name)(x)
        assert got.shape == ref.shape and got.dtype == ref.dtype


@pytest.mark.quick
def test_helpers_are_numpys():
    assert np.array_equal(pyfftgl.fftfreq(9, 0.5), np.fft.fftfreq(9, 0.5))
    assert np.array_equal(pyfftgl.rfftfreq(8), np.fft.rfftfreq(8))
    x = np.arange(12).reshape(3, 4)
    assert np.array_equal(pyfftgl.fftshift(x, axes=1), np.fft.fftshift(x, axes=1))
    assert np.array_equal(pyfftgl.ifftshift(x), np.fft.ifftshift(x))


FUNCTIONS = ["fft", "ifft", "fft2", "ifft2", "fftn", "ifftn", "rfft", "irfft", "rfft2", "irfft2",
             "rfftn", "irfftn", "hfft", "ihfft"]
REAL_INPUT = ("rfft", "rfft2", "rfftn", "ihfft")  # numpy refuses complex input (test_validate)


@pytest.mark.quick
@pytest.mark.parametrize("name", FUNCTIONS)
def test_every_function_matches_numpy(backend, name):
    """Each function on each input dtype it takes: numpy's single-precision dtype and shape, and
    values within the contract of numpy's float64 result."""
    for dtype in (np.float16, np.float32) + (() if name in REAL_INPUT else (np.complex64,)):
        x = rand((4, 6, 10), dtype != np.complex64, 8).astype(dtype)
        ours, theirs = getattr(pyfftgl, name)(x, backend=backend), getattr(np.fft, name)(x)
        assert ours.dtype == theirs.dtype and ours.shape == theirs.shape
        wide = np.complex128 if dtype == np.complex64 else np.float64
        ref = getattr(np.fft, name)(x.astype(wide))
        if ours.dtype == np.float16:  # numpy's irfft and hfft of float16: rounded once to float16
            assert np.max(np.abs(ours - ref)) <= np.finfo(np.float16).eps * np.max(np.abs(ref))
        else:
            assert_accurate(ours, ref.astype(np.complex128), x.size)


# numpy's own fft tests that pyfftgl is not meant to pass, and why:
NUMPY_EXCLUDED = (
    # long double: pyfftgl computes in float or double and refuses extended precision
    "longdouble",
    # 1020 distinct lengths, each compiled: tens of minutes on software drivers
    "test_identity and not long_short",
)


@pytest.mark.slow
def test_numpy_own_test_module_passes_under_pyfftgl(tmp_path):
    import os
    import re
    tests = os.path.join(os.path.dirname(np.__file__), "fft", "tests", "test_pocketfft.py")
    # --noconftest: numpy's conftest needs hypothesis, which these tests do not use
    text = run_installed_tests(tests, "numpy_fft_plugin", NUMPY_EXCLUDED, tmp_path,
                               "--noconftest")
    computed = int(re.search(r"pyfftgl computed (\d+) numpy.fft calls", text).group(1))
    assert computed > 500  # the transforms really ran on pyfftgl


def test_docstrings_are_numpys_layout_and_their_examples_run():
    """help(pyfftgl.<kind>) is enough to use it: every parameter of the signature described,
    numpy's sections, and an example that runs (here, on the default backend)."""
    import doctest
    import inspect
    runner = doctest.DocTestRunner(optionflags=doctest.NORMALIZE_WHITESPACE)
    for name in ("fft", "ifft", "fft2", "ifft2", "fftn", "ifftn", "rfft", "irfft", "rfft2",
                 "irfft2", "rfftn", "irfftn", "hfft", "ihfft"):
        func = getattr(pyfftgl, name)
        doc = func.__doc__
        assert f"numpy.fft.{name}" in doc.splitlines()[0], name
        for section in ("Parameters", "Returns", "Raises", "See Also", "Notes", "Examples"):
            assert f"\n{section}\n{'-' * len(section)}\n" in doc, (name, section)
        for param in inspect.signature(func).parameters:
            assert f"\n{param} : " in doc, (name, param)
    for name in ("fft", "ifft", "fft2", "ifft2", "fftn", "ifftn", "rfft", "irfft", "rfft2",
                 "irfft2", "rfftn", "irfftn", "hfft", "ihfft", "plan", "Plan", "asarray",
                 "set_backend"):
        test = doctest.DocTestParser().get_doctest(getattr(pyfftgl, name).__doc__, {}, name,
                                                   None, 0)
        assert len(test.examples) >= 3, name
        assert runner.run(test, out=lambda s: None).failed == 0, (name, runner.summarize())
