"""pyfftgl.dct/idct/dst/idst/dctn/idctn/dstn/idstn against scipy.fft, on both drivers."""
import numpy as np
import pytest
import scipy.fft

import pyfftgl
from pyfftgl.planner import prime_factors
from pyfftgl.planner.r2r import R2RAxis, fft_shape, plan_r2r
from conftest import EPS32, share

EPS64 = float(np.finfo(np.float64).eps)
KINDS = ("dct", "dst")
LENGTHS = (1, 2, 3, 5, 8, 12, 17, 31)  # n = 1, 2, odd, even, primes (17, 31: Bluestein for 2L)


def bound(kind, type_, n, precision, size=None):
    """The accuracy contract (../shared/DESIGN.md) for a transform of `size` elements (default n,
    the line): eps * sqrt(log2 size), twice that where the line's FFT runs Bluestein. Checked on
    enough lines (64) that the relative L2 error is a stable estimate, not one line's luck."""
    m = R2RAxis(kind, type_, n, 0, False).fft_length
    factor = 2.0 if m > 1 and max(prime_factors(m)) > 31 else 1.0
    eps = EPS32 if precision == 32 else EPS64
    return factor * eps * np.sqrt(max(1.0, np.log2(size or n)))


def exact(name, x, type_, norm=None, orthogonalize=None):
    """scipy.fft.<name>(x, type_, norm, orthogonalize) along the last axis from the definitions
    (scipy's documentation), summed in long double: a reference more exact than float64's."""
    kind, inverse = name[-3:], name.startswith("i")
    inorm = {None: 0, "backward": 0, "ortho": 1, "forward": 2}[norm]
    t, inorm = ({2: 3, 3: 2}.get(type_, type_), 2 - inorm) if inverse else (type_, inorm)
    orth = norm == "ortho" if orthogonalize is None else orthogonalize
    n = x.shape[-1]
    j = np.arange(n, dtype=np.int64)
    k, j = j[:, None], j[None, :]
    pi = np.longdouble("3.14159265358979323846264338327950288")
    r2 = np.sqrt(np.longdouble(2))
    half = n - 1 if (kind, t) == ("dct", 1) else n + 1 if t == 1 else n
    # the angle's multiple of pi as an integer fraction, reduced mod 2 exactly before rounding
    num, den = {1: ((k + (kind == "dst")) * (j + (kind == "dst")), half),
                2: (k * (2 * j + 1) if kind == "dct" else (k + 1) * (2 * j + 1), 2 * n),
                3: ((2 * k + 1) * j if kind == "dct" else (2 * k + 1) * (j + 1), 2 * n),
                4: ((2 * k + 1) * (2 * j + 1), 4 * n)}[t]
    arg = (num % (2 * den)).astype(np.longdouble) / den
    mat = 2 * (np.cos(pi * arg) if kind == "dct" else np.sin(pi * arg))
    first = 0 if kind == "dct" else n - 1
    xw = x.astype(np.longdouble)
    if t == 3:
        mat[:, first] /= 2
        if orth:
            xw[..., first] *= r2
    if (kind, t) == ("dct", 1):
        mat[:, 0] /= 2
        mat[:, -1] /= 2
        if orth:
            xw[..., 0] *= r2
            xw[..., -1] *= r2
    y = (xw @ mat.T) * (1, 1 / np.sqrt(np.longdouble(2 * half)), 1 / np.longdouble(2 * half))[inorm]
    if orth and t == 2:
        y[..., first] /= r2  # DCT-II: y[0], DST-II: y[n - 1]
    if orth and (kind, t) == ("dct", 1):
        y[..., 0] /= r2
        y[..., -1] /= r2
    return y.astype(np.float64)


def check(got, ref, limit):
    assert got.dtype == ref.dtype and got.shape == ref.shape, (got.dtype, ref.dtype, got.shape)
    err = np.linalg.norm(got - ref) / np.linalg.norm(ref)
    assert err <= limit, f"rel L2 {err:.3e} > {limit:.3e}"


@pytest.mark.quick
@pytest.mark.parametrize("type_", (1, 2, 3, 4))
@pytest.mark.parametrize("kind", KINDS)
def test_each_type_forward_and_inverse_matches_scipy(backend, kind, type_):
    rng = np.random.default_rng(type_)
    norms = (None, "ortho", "forward")
    for i, n in enumerate(share(LENGTHS, backend)):
        if kind == "dct" and type_ == 1 and n == 1:
            continue  # scipy's RuntimeError: test_bad_input
        norm = norms[i % 3]
        for precision, dtype in ((32, np.float32), (64, np.float64)):
            x = rng.standard_normal((64, n)).astype(dtype)
            for inv in ("", "i"):
                name = inv + kind
                got = getattr(pyfftgl, name)(x, type=type_, norm=norm, backend=backend)
                ref = exact(name, x, type_, norm)  # of the same input, in long double
                theirs = getattr(scipy.fft, name)(x.astype(np.float64), type=type_, norm=norm)
                np.testing.assert_allclose(theirs, ref, rtol=1e-12, atol=1e-12)  # the reference
                check(got.astype(np.float64), ref, bound(kind, type_, n, precision))
                assert got.dtype == dtype
    x = rng.standard_normal((64, 6))  # scipy's orthogonalize, apart from norm
    for norm, orth in (("ortho", False), (None, True)):
        got = getattr(pyfftgl, kind)(x, type=type_, norm=norm, orthogonalize=orth,
                                     backend=backend)
        ref = exact(kind, x, type_, norm, orth)
        np.testing.assert_allclose(
            getattr(scipy.fft, kind)(x, type=type_, norm=norm, orthogonalize=orth), ref,
            rtol=1e-12, atol=1e-12)
        check(got, ref, bound(kind, type_, 6, 64))


@pytest.mark.quick
@pytest.mark.parametrize("kind", KINDS)
def test_nd_complex_and_cropped_axes(backend, kind):
    rng = np.random.default_rng(7)
    x = rng.standard_normal((5, 6, 7)) + 1j * rng.standard_normal((5, 6, 7))
    for name in (kind + "n", "i" + kind + "n"):
        for type_ in (2, 3, 1, 4) if backend == "vulkan" else (3, 2, 4, 1):
            kw = dict(type=type_, s=(9, 4), axes=(0, 2))  # zero-padded and cropped
            got = getattr(pyfftgl, name)(x, backend=backend, **kw)
            check(got, getattr(scipy.fft, name)(x, **kw), 4 * EPS64 * 4)
        y = x.astype(np.complex64)
        got = getattr(pyfftgl, name)(y, backend=backend)  # all axes, real and imaginary parts
        check(got, getattr(scipy.fft, name)(y.astype(np.complex128)).astype(np.complex64),
              3 * EPS32 * 4)


@pytest.mark.quick
def test_device_arrays_stay_on_the_device(backend):
    x = np.random.default_rng(1).standard_normal((12, 10)).astype(np.float32)
    d = pyfftgl.asarray(x, backend=backend)
    y = pyfftgl.dctn(d, norm="ortho")
    assert isinstance(y, pyfftgl.DeviceArray) and y.dtype == np.float32 and y.shape == (12, 10)
    z = pyfftgl.idctn(y, norm="ortho")  # device in, device out, then one read
    np.testing.assert_allclose(z.get(), x, atol=2e-6)
    check(y.get(), scipy.fft.dctn(x.astype(np.float64), norm="ortho").astype(np.float32),
          2 * EPS32 * 4)
    e = pyfftgl.dst(d, type=4, n=7, axis=0)
    check(e.get(), scipy.fft.dst(x.astype(np.float64), type=4, n=7, axis=0).astype(np.float32),
          2 * EPS32 * 4)
    assert np.array_equal(d.get(), x)  # the input is never written


@pytest.mark.quick
def test_input_untouched_and_dtypes():
    x = np.arange(12, dtype=np.int32).reshape(3, 4)
    before = x.copy()
    y = pyfftgl.dct(x, overwrite_x=True, workers=2)
    assert np.array_equal(x, before) and y.dtype == np.float64
    assert pyfftgl.dct(np.ones(4, np.float16)).dtype == np.float32
    assert pyfftgl.dctn(x, axes=[]) is x  # scipy returns its input when there is no axis
    assert pyfftgl.dct(np.zeros((0, 4))).shape == (0, 4)


BAD = [  # (function, args, kwargs): scipy's exception and message, before any GPU work
    ("dct", (np.ones(4),), {"type": 5}),
    ("dst", (np.ones(4),), {"type": 0}),
    ("dct", (np.ones(4),), {"norm": "bad"}),
    ("idct", (np.ones(4),), {"norm": "bad"}),
    ("dct", (np.ones(4),), {"n": 0}),
    ("dct", (np.ones(4),), {"axis": 2}),
    ("dct", (np.ones(()),), {}),
    ("dct", (np.ones(4),), {"workers": 0}),
    ("dct", (np.ones(1),), {"type": 1}),
    ("dctn", (np.ones((4, 4)),), {"axes": (0, 0)}),
    ("dctn", (np.ones((4, 4)),), {"axes": (2,)}),
    ("dctn", (np.ones((4, 4)),), {"s": (4, 4, 4)}),
    ("dctn", (np.ones((4, 4)),), {"s": (4,), "axes": (0, 1)}),
    ("dstn", (np.ones((4, 4)),), {"s": (0, 4)}),
    ("dstn", (np.ones((4, 4)),), {"axes": 1.5}),
    ("dct", (np.float64(3.0),), {"n": 0}),  # scipy checks the length before the axis
    ("idst", (np.float32(1.0),), {"norm": "bad"}),  # and the norm and workers before both
    ("dst", (np.ones(()),), {"workers": -1000}),
]


@pytest.mark.quick
def test_float_workers_raise_a_type_error_as_scipy():
    with pytest.raises(TypeError):  # scipy's message is pybind11's dump of the arguments
        scipy.fft.dct(np.ones(4), workers=1.5)
    with pytest.raises(TypeError):
        pyfftgl.dct(np.ones(4), workers=1.5)


@pytest.mark.quick
@pytest.mark.parametrize("name", ["dctn", "idctn", "dstn", "idstn"])
@pytest.mark.parametrize("x", [np.float64(3.0), np.float32(2.0), np.array(5, np.int64),
                               [1.0, 2.0, 3.0], [1, 2, 3]], ids=repr)
@pytest.mark.parametrize("kwargs", [{}, {"axes": ()}, {"s": ()}], ids=repr)
def test_no_axis_returns_the_input_as_scipy(name, x, kwargs):
    """0-d input (whose axes are none) and axes=(): scipy.fft returns its input as an ndarray,
    of its own dtype, with no other check (a bad norm passes)."""
    if np.ndim(x) == 1 and not kwargs:
        pytest.skip("one axis to transform")
    theirs = getattr(scipy.fft, name)(x, norm="bad", **kwargs)
    ours = getattr(pyfftgl, name)(x, norm="bad", **kwargs)
    assert type(ours) is type(theirs) is np.ndarray
    assert (ours.dtype, ours.shape) == (theirs.dtype, theirs.shape)
    assert np.array_equal(ours, theirs)


@pytest.mark.quick
@pytest.mark.parametrize("name,args,kwargs", BAD)
def test_bad_input_raises_as_scipy(name, args, kwargs):
    with pytest.raises(Exception) as theirs:
        getattr(scipy.fft, name)(*args, **kwargs)
    misses = pyfftgl.plan_cache.stats()["misses"]
    with pytest.raises(type(theirs.value)) as ours:
        getattr(pyfftgl, name)(*args, **kwargs)
    assert str(ours.value) == str(theirs.value)
    assert pyfftgl.plan_cache.stats()["misses"] == misses  # nothing was planned


@pytest.mark.quick
def test_long_double_is_refused():
    with pytest.raises(TypeError, match="single or double"):
        pyfftgl.dct(np.ones(4, np.longdouble))


@pytest.mark.quick
def test_each_complex_line_carries_one_real_line():
    # even n: the line's n reals as n/2 complex values; odd n: n complex values of one line;
    # complex input (inner axis of 2) keeps its real and imaginary parts apart
    from pyfftgl.limits import Limits
    lim = Limits(32768, 1024, (1024, 1024, 64), (2**31 - 1, 65535, 65535), 2**32)
    spec = plan_r2r((5, 8, 2), [(1, R2RAxis("dct", 2, 8, 0, False)),
                                (0, R2RAxis("dst", 3, 5, 0, False))], 32, lim)
    assert [st.fft[0] for st in spec.steps] == [(5, 4, 2), (5, 16)]
    assert [st.pre.threads for st in spec.steps] == [5 * 4 * 2, 5 * 16]
    assert [st.post.threads for st in spec.steps] == [80, 80]
    assert R2RAxis("dct", 3, 8, 0, False).fft_length == 4
    assert fft_shape(1, 8, 1) == ((8,), 0) and fft_shape(4, 8, 1) == ((4, 8), 1)
    assert fft_shape(1, 8, 3) == ((8, 3), 0) and fft_shape(2, 8, 3) == ((2, 8, 3), 1)
    assert R2RAxis("dct", 2, 7, 0, False).fft_length == 7
    assert R2RAxis("dct", 1, 7, 0, False).fft_length == 12
    assert R2RAxis("dst", 1, 7, 0, False).fft_length == 16
    assert R2RAxis("dst", 4, 7, 0, False).fft_length == 14


@pytest.mark.quick
def test_out_receives_a_device_result(backend):
    x = np.random.default_rng(4).standard_normal((8, 6)).astype(np.float32)
    d = pyfftgl.asarray(x, backend=backend)
    out = pyfftgl.asarray(np.zeros((8, 6), np.float32), backend=backend)
    assert pyfftgl.dstn(d, type=3, out=out) is out
    check(out.get().astype(np.float64), exact("dst", exact("dst", x.T, 3).T, 3),
          bound("dst", 3, 8, 32, size=48))
    with pytest.raises(ValueError, match="out must be"):
        pyfftgl.dctn(d, out=d)
    with pytest.raises(TypeError, match="out= is for DeviceArray"):
        pyfftgl.dct(x, out=out)


@pytest.mark.quick
def test_fused_axes_match_separate_passes():
    """Between two axes the post pass runs inside the next pre pass: one pass fewer, the same
    numbers as the separate passes."""
    from pyfftgl.dctdst import R2RPlan
    device = pyfftgl.get_device("vulkan")
    x = np.random.default_rng(5).standard_normal((6, 10)).astype(np.float32)
    d = pyfftgl.asarray(x, backend=device)
    axes = [(0, R2RAxis("dst", 2, 6, 0, False)), (1, R2RAxis("dst", 2, 10, 0, False))]
    results = []
    for fuse in (True, False):
        plan = R2RPlan((6, 10), axes, 32, device, fuse=fuse)
        out = pyfftgl.asarray(np.zeros_like(x), backend=device)
        names = [name for name, _ in plan.parts(d.buffer, out.buffer)]
        assert names == (["pre", "fft", "post+pre", "fft", "post"] if fuse else
                         ["pre", "fft", "post", "pre", "fft", "post"])
        plan.run({"in": d.buffer, "out": out.buffer})
        results.append(out.get())
    np.testing.assert_allclose(results[0], results[1], rtol=0, atol=1e-5)
    check(results[0].astype(np.float64), exact("dst", exact("dst", x.T, 2).T, 2),
          bound("dst", 2, 10, 32, size=60))
