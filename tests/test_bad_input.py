"""Bad input, fed to pyfftgl and to numpy.fft: the same exception type (pyfftgl's may be a
subclass: AxisError for numpy's bare IndexError) and, where marked, the same message; raised
before any GPU work, with the caller's arrays (input and out=) left as they were."""
import warnings

import numpy as np
import pytest

import pyfftgl
import pyfftgl.numpy_fft

from conftest import assert_accurate, random_complex

C8 = np.arange(8, dtype=np.float32).astype(np.complex64)
F8 = np.arange(8, dtype=np.float32)
M = np.arange(32, dtype=np.float32).reshape(4, 8).astype(np.complex64)
MR = np.arange(32, dtype=np.float32).reshape(4, 8)

# (function, input, kwargs, same message as numpy's)
CASES = [
    ("fft", C8, dict(n=0), True),
    ("fft", C8, dict(n=-1), True),
    ("ifft", C8, dict(n=-8), True),
    ("fft", C8, dict(n=2.5), False),
    ("fft", C8, dict(n="8"), False),
    ("fft", C8, dict(n=True), True),
    ("fft", C8, dict(norm="bad"), True),
    ("fft", C8, dict(norm="Ortho"), True),
    ("ifft", C8, dict(norm=""), True),
    ("fft", C8, dict(norm=1), True),
    ("fft", C8, dict(axis=1), False),
    ("fft", C8, dict(axis=-2), False),
    ("fft", C8, dict(axis=0.5), True),
    ("fft", C8, dict(axis=None), True),
    ("fftn", M, dict(axes=(0, 2)), False),
    ("fftn", M, dict(axes=(0.5,)), False),
    ("fftn", M, dict(s=(4,), axes=(0, 1)), True),
    ("fftn", M, dict(s=(4, 8, 2)), True),
    ("fftn", M, dict(s=(0, 8), axes=(0, 1)), True),
    ("ifftn", M, dict(s=(4, -3), axes=(0, 1)), True),
    ("fftn", M, dict(s=(4.5, 8), axes=(0, 1)), False),
    ("fft2", C8, {}, False),
    ("ifft2", M, dict(axes=(0, 1, 2)), False),
    ("fft", np.array([1, "a"], dtype=object), {}, True),
    ("fft", np.array([1.0, 2.0], dtype=object), {}, True),
    ("fft", np.array(["a", "b"]), {}, True),
    ("fft", np.array([b"a", b"b"]), {}, True),
    ("fft", np.array([1, 2], dtype="M8[s]"), {}, True),
    ("fft", np.array([1, 2], dtype="m8[s]"), {}, True),
    ("fft", np.zeros(2, [("a", "f4")]), {}, True),
    ("rfft", np.array(["a"]), {}, True),
    ("irfft", np.array([1, 2], dtype="M8[D]"), {}, True),
    ("fft", np.complex64(1), {}, False),
    ("fft", None, {}, False),
    ("fft", "abc", {}, False),
    ("rfftn", np.float32(1), {}, True),
    ("irfftn", np.complex64(1), {}, True),
    ("fft", np.ones(0, np.complex64), {}, True),
    ("fft", np.ones((3, 0), np.complex64), {}, True),
    ("rfft", np.ones(0, np.float32), {}, True),
    ("rfft", C8, {}, True),
    ("rfft", M, dict(n=3), True),
    ("rfftn", M, {}, True),
    ("ihfft", C8, {}, True),
    ("rfft", F8, dict(n=0), True),
    ("irfft", C8, dict(n=0), True),
    ("irfft", C8, dict(n=-3), True),
    ("irfft", np.ones(1, np.complex64), {}, True),
    ("irfftn", np.ones((4, 1), np.complex64), {}, True),
    ("irfft2", np.ones((4, 1), np.complex64), {}, True),
    ("hfft", np.ones(1, np.complex64), {}, True),
    ("irfftn", M, dict(s=(4, 0), axes=(0, 1)), True),
    ("fft", C8, dict(out=np.zeros(4, np.complex64)), True),
    ("fft", C8, dict(out=np.zeros((8, 1), np.complex64)), True),
    ("fft", C8, dict(out=np.zeros(8, np.float32)), False),
    ("fft", C8, dict(out=np.zeros(8, np.int32)), False),
    ("fft", C8, dict(out=[0] * 8), True),
    ("fftn", M, dict(out=np.zeros((8, 4), np.complex64)), True),
    ("rfft", F8, dict(out=np.zeros(8, np.complex64)), True),
    ("rfft", F8, dict(out=np.zeros(5, np.float32)), False),
    ("irfft", C8, dict(out=np.zeros(13, np.float32)), True),
    ("irfft", C8, dict(out=np.zeros(14, np.int64)), False),
    ("rfft2", MR, dict(out=np.zeros((4, 8), np.complex64)), True),
    # numpy's order of checks: the first transform's length, the norm, then the axes
    ("hfft", np.ones(0, np.complex64), dict(norm="bad"), True),
    ("ihfft", np.ones(0, np.float32), dict(norm="bad"), True),
    ("irfftn", np.ones((3, 0), np.complex64), dict(norm="bad"), True),
    ("fft", C8, dict(n=0, axis=5), True),
    ("rfft", C8, dict(norm="bad"), True),
    ("fft2", C8, dict(s=(4,)), True),
    ("fftn", M, dict(s=(4, 8, 2), axes=(0, 1)), True),
    ("irfftn", M, dict(axes=()), True),
    ("irfft2", M, dict(axes=[]), True),
]


def _base(exc: BaseException) -> type:
    """The public exception class a caller would catch: numpy's AxisError or
    DTypePromotionError, else the builtin IndexError / ValueError / TypeError it derives from."""
    for cls in type(exc).__mro__:
        if cls in (np.exceptions.AxisError, np.exceptions.DTypePromotionError, IndexError,
                   ValueError, TypeError):
            return cls
    raise AssertionError(f"unexpected exception {exc!r}")


def _call(module, name, a, kwargs):
    kwargs = {k: (v.copy() if isinstance(v, np.ndarray) else v) for k, v in kwargs.items()}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        try:
            getattr(module, name)(a, **kwargs)
        except Exception as e:  # the exception is the result under test
            return e
    raise AssertionError(f"{module.__name__}.{name} accepted {a!r} {kwargs}")


@pytest.fixture
def no_gpu_work(monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("GPU work started for invalid input")
    monkeypatch.setattr(pyfftgl.numpy_fft, "cached_steps_plan", refuse)


def test_at_least_forty_distinct_bad_inputs():
    assert len({repr(c) for c in CASES}) == len(CASES) >= 40


@pytest.mark.parametrize("name, a, kwargs, same_message", CASES,
                         ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)])
def test_bad_input_raises_as_numpy_does(no_gpu_work, name, a, kwargs, same_message):
    theirs = _call(np.fft, name, a, kwargs)
    keep_a = np.array(a, copy=True) if a is not None else None
    out = kwargs.get("out")
    keep_out = out.copy() if isinstance(out, np.ndarray) else None
    ours = _call(pyfftgl, name, a, kwargs)
    expected = _base(theirs)
    if expected is TypeError and isinstance(ours, np.exceptions.DTypePromotionError):
        expected = TypeError  # DTypePromotionError is a TypeError
    assert isinstance(ours, expected), f"numpy: {theirs!r}; pyfftgl: {ours!r}"
    if same_message:
        assert str(ours) == str(theirs)
    if a is not None:
        assert np.array_equal(np.asarray(a), keep_a) and np.asarray(a).dtype == keep_a.dtype
    if keep_out is not None:
        assert np.array_equal(out, keep_out)


def test_out_is_not_written_by_a_failed_call(no_gpu_work):
    out = np.full(8, 7, np.complex64)  # right shape; the call itself fails
    with pytest.raises(ValueError, match="Invalid norm"):
        pyfftgl.fft(C8, norm="nope", out=out)
    assert np.all(out == 7)


@pytest.mark.parametrize("dtype", [np.bool_, np.int8, np.int32, np.int64, np.uint16, np.float64,
                                   np.longdouble, np.complex128])
def test_dtypes_numpy_accepts_compute_or_are_refused_clearly(dtype, backend):
    """numpy transforms these; pyfftgl computes them in single precision or refuses with a
    TypeError that says so (never a wrong answer, never another error)."""
    a = (np.arange(16) % 3).astype(dtype)
    want = np.fft.fft(a.astype(np.complex128))
    try:
        got = pyfftgl.fft(a, backend=backend)
    except TypeError as e:
        assert "single precision" in str(e) or "precision" in str(e)
        return
    assert_accurate(np.asarray(got, np.complex128), want, 16, 4.0)


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.complex64])
def test_single_and_half_precision_match_numpy(dtype, backend):
    a = (np.arange(16) % 5 - 2).astype(dtype)
    for name in ("fft", "ifft", "rfft", "irfft") if dtype != np.complex64 else ("fft", "ifft",
                                                                                 "irfft"):
        want = getattr(np.fft, name)(a)
        got = getattr(pyfftgl, name)(a, backend=backend)
        assert got.dtype == want.dtype and got.shape == want.shape
        if got.dtype == np.float16:  # both rounded to half precision at the end
            eps16 = float(np.finfo(np.float16).eps)
            assert np.max(np.abs(got - want.astype(np.float64))) <= eps16 * np.max(np.abs(want))
            continue
        assert_accurate(np.asarray(got, np.complex128), want.astype(np.complex128), 16, 4.0)


@pytest.mark.parametrize("dtype", [">f4", ">c8", ">f8", ">i4", ">f2"])
def test_big_endian_input_is_transformed_as_numpy_does(dtype, backend):
    """FITS files hold big-endian data; numpy.fft takes it, and so does pyfftgl (a native copy
    is uploaded), with numpy's result dtypes and the caller's array left as it was."""
    a = (np.arange(32) % 7 - 3).astype(dtype).reshape(2, 16)
    keep = a.copy()
    native = a.astype(a.dtype.newbyteorder("="))
    wide = native.astype(np.complex128 if native.dtype.kind == "c" else np.float64)
    names = ("fft", "irfft", "fft2") + (() if a.dtype.kind == "c" else ("rfft", "rfftn"))
    for name in names:
        want = getattr(np.fft, name)(a)
        got = getattr(pyfftgl, name)(a, backend=backend)
        assert got.dtype == want.dtype and got.dtype.isnative and got.shape == want.shape, name
        ref = getattr(np.fft, name)(wide)
        if got.dtype == np.float16:  # rounded to half precision at the end, as numpy's
            assert np.max(np.abs(got - ref)) <= np.finfo(np.float16).eps * np.max(np.abs(ref))
        else:
            assert_accurate(np.asarray(got, np.complex128), ref, 16, 4.0)
    with pyfftgl.plan(a.shape, a.dtype, kind="fft2", backend=backend) as p:
        assert_accurate(p(a), np.fft.fft2(wide), 32, 4.0)
    if a.dtype.itemsize >= 4:  # device arrays hold single and double precision
        d = pyfftgl.asarray(a, backend=backend)
        assert d.dtype.isnative and np.array_equal(d.get(), native)
    assert np.array_equal(a, keep) and a.dtype == np.dtype(dtype)


def test_empty_batches_and_zero_d(backend):
    """numpy's answers for empty batches and 0-d input to fftn: shapes, dtypes, no GPU work."""
    for a, name, kw in ((np.zeros((0, 8), np.complex64), "fft", {}),
                        (np.zeros((3, 0), np.complex64), "fft", dict(axis=0)),
                        (np.zeros((0, 8), np.float32), "rfft", {}),
                        (np.complex64(2 + 1j), "fftn", {}),
                        (np.ones((2, 3), np.complex64), "fftn", dict(axes=())),
                        (np.complex64(3), "ifftn", {})):
        want = getattr(np.fft, name)(a, **kw)
        got = getattr(pyfftgl, name)(a, backend=backend, **kw)
        assert got.shape == want.shape and got.dtype == want.dtype
        assert np.array_equal(got, want)


def test_strided_and_negatively_strided_input_works(backend):
    base = random_complex((12, 80), seed=3)
    real = base.real.copy()
    for view in (base[:, ::2], base[::-1], base[:, ::-3], base.T, np.asfortranarray(base),
                 base[2:11:3, 5:69]):
        keep = view.copy()
        for name in ("fftn", "fft", "ifft2"):
            got = getattr(pyfftgl, name)(view, backend=backend)
            want = getattr(np.fft, name)(view.astype(np.complex128))
            assert_accurate(got, want, view.size)
        assert np.array_equal(view, keep)
    for view in (real[:, ::-2], real[::2].T):
        keep = view.copy()
        assert_accurate(pyfftgl.rfft2(view, backend=backend),
                        np.fft.rfft2(view.astype(np.float64)), view.size)
        assert np.array_equal(view, keep)
    out = np.zeros((12, 160), np.complex64)[:, ::2]  # a strided out= is filled in place
    pyfftgl.fft(base, out=out, backend=backend)
    assert_accurate(out, np.fft.fft(base.astype(np.complex128)), 80)


# -- device arrays ---------------------------------------------------------------------------

def test_device_array_bad_out_and_closed_arrays(backend, monkeypatch):
    x = random_complex((4, 16), seed=1)
    d = pyfftgl.asarray(x, backend=backend)
    other = "gl" if backend == "vulkan" else "vulkan"
    elsewhere = pyfftgl.asarray(np.zeros_like(x), backend=other)
    wrong_shape = pyfftgl.asarray(np.zeros((4, 8), np.complex64), backend=backend)
    wrong_dtype = pyfftgl.asarray(np.zeros((4, 32), np.float32), backend=backend)
    closed = pyfftgl.asarray(x, backend=backend)
    closed.close()
    monkeypatch.setattr(pyfftgl.numpy_fft, "cached_steps_plan", lambda *a, **k: pytest.fail("GPU"))
    cases = [
        (lambda: pyfftgl.fft(d, out=wrong_shape), ValueError, "wrong shape or dtype"),
        (lambda: pyfftgl.fft(d, out=wrong_dtype), ValueError, "wrong shape or dtype"),
        (lambda: pyfftgl.fft(d, out=elsewhere), TypeError, "same device"),
        (lambda: pyfftgl.fft(d, out=np.zeros_like(x)), TypeError, "DeviceArray"),
        (lambda: pyfftgl.fft(d, out=d), ValueError, "in-place"),
        (lambda: pyfftgl.fft(closed), ValueError, "closed"),
        (lambda: pyfftgl.rfft2(closed.view(np.float32)), ValueError, "closed"),
        (lambda: pyfftgl.fft(d, out=closed), ValueError, "closed"),
        (lambda: pyfftgl.hfft(closed), ValueError, "closed"),
        (lambda: closed.get(), ValueError, "closed"),
        (lambda: pyfftgl.fft(d, backend=other), ValueError, "not on the requested backend"),
        (lambda: pyfftgl.ifft2(elsewhere, backend=backend), ValueError, "requested backend"),
        (lambda: pyfftgl.fft(d, norm="bad"), ValueError, "Invalid norm"),
        (lambda: pyfftgl.fft(d, axis=2), IndexError, "out of bounds"),
        (lambda: pyfftgl.fft(d, n=0), ValueError, "Invalid number"),
        (lambda: pyfftgl.asarray(x, dtype=np.int32, backend=backend), TypeError, "complex64"),
    ]
    for call, exc, msg in cases:
        with pytest.raises(exc, match=msg):
            call()
    monkeypatch.undo()
    assert np.array_equal(d.get(), x) and np.array_equal(elsewhere.get(), np.zeros_like(x))
    assert np.array_equal(wrong_shape.get(), np.zeros((4, 8), np.complex64))
    assert "closed" in repr(closed)


def test_closed_plan_raises(backend):
    with pyfftgl.plan((4, 16), np.complex64, kind="fft2", backend=backend) as p:
        x = random_complex((4, 16), seed=2)
        assert_accurate(p(x), np.fft.fft2(x.astype(np.complex128)), 64)
        with pytest.raises(ValueError, match="this plan transforms arrays of shape"):
            p(np.zeros((4, 8), np.complex64))
    with pytest.raises(ValueError, match="was closed"):
        p(x)
    with pytest.raises(ValueError, match="kind must be one of"):
        pyfftgl.plan((4, 16), kind="fft3", backend=backend)
    with pytest.raises(ValueError, match="Invalid norm"):
        pyfftgl.plan((4, 16), kind="fft", norm="x", backend=backend)


# -- TextureFFT --------------------------------------------------------------------------------

def test_texture_fft_arguments():
    import pyfftgl.gl
    from pyfftgl.backends import get_device
    dev = get_device("gl")
    with dev.current():  # the test makes textures on the library's context
        ctx = dev.ctx
        for shape, exc in (((0, 8), ValueError), ((8, -1), ValueError), ((8,), ValueError),
                           ((8, 8, 8), ValueError), ((2.5, 8), ValueError),
                           ((1 << 20, 8), ValueError)):
            with pytest.raises(exc):
                pyfftgl.gl.TextureFFT(ctx, shape)
        with pytest.raises(ValueError, match="intermediate"):
            pyfftgl.gl.TextureFFT(ctx, (8, 8), intermediate="texture")
        with pytest.raises(ValueError, match="Invalid norm"):
            pyfftgl.gl.TextureFFT(ctx, (8, 8), norm="bad")
        fft, other = pyfftgl.gl.TextureFFT(ctx, (8, 16)), pyfftgl.gl.TextureFFT(ctx, (8, 16))
        good = ctx.texture((16, 8), 2, dtype="f4")
        rgba = ctx.texture((16, 8), 4, dtype="f4")
        r32 = ctx.texture((16, 8), 1, dtype="f4")
        cases = [
            (lambda: fft.forward(np.zeros((8, 16), np.float32)), TypeError, "moderngl.Texture"),
            (lambda: fft.forward(ctx.texture((16, 8), 3, dtype="f4")), TypeError, "r32f"),
            (lambda: fft.forward(ctx.texture((16, 8), 2, dtype="f1")), TypeError, "r32f"),
            (lambda: fft.forward(ctx.texture((8, 16), 2, dtype="f4")), ValueError, "texels"),
            (lambda: fft.forward(good, rgba), ValueError, "cannot write"),
            (lambda: fft.forward(good, r32), ValueError, "cannot write"),
            (lambda: fft.forward([good, good], [good]), ValueError, "dst must match"),
            (lambda: fft.forward([good], good), ValueError, "dst must match"),
            (lambda: fft.convolve(good, other.spectrum(np.ones((8, 16)))), TypeError,
             "this TextureFFT"),
            (lambda: fft.convolve(good, np.ones((8, 16))), TypeError, "this TextureFFT"),
            (lambda: fft.convolve(good, fft.spectrum(np.ones((8, 16, 4), np.float32))),
             ValueError, "2 fields cannot filter"),
            (lambda: fft.spectrum(np.ones((16, 8))), ValueError, "kernel must have shape"),
            (lambda: fft.spectrum(np.ones((8, 16, 4), np.complex64)), ValueError, "shape"),
            (lambda: fft.spectrum(np.array([["a"] * 16] * 8)), TypeError, "numeric"),
            (lambda: fft.spectrum(good, frequency=True), TypeError, "numpy array"),
        ]
        before = np.frombuffer(good.read(), np.float32).copy()
        for call, exc, msg in cases:
            with pytest.raises(exc, match=msg):
                call()
        assert np.array_equal(np.frombuffer(good.read(), np.float32), before)
        fft.close()
        other.close()
        assert ctx.error == "GL_NO_ERROR"



@pytest.mark.parametrize("name", ["fft2", "ifft2", "fftn", "ifftn"])
@pytest.mark.parametrize("a", [np.arange(6.0).reshape(2, 3), np.arange(4, dtype=">f8"),
                               np.ones(3, np.float16), np.ones(3, bool), [1, 2, 3]], ids=repr)
def test_no_axis_returns_the_input_as_numpy(no_gpu_work, name, a):
    """axes=(): numpy transforms nothing and returns its input as it is (its dtype, the same
    ndarray), checking no norm; a Plan of it returns its input's values too."""
    theirs = getattr(np.fft, name)(a, axes=(), norm="bad")
    ours = getattr(pyfftgl, name)(a, axes=(), norm="bad")
    assert (type(ours), ours.dtype, ours.shape) == (type(theirs), theirs.dtype, theirs.shape)
    assert np.array_equal(ours, theirs) and (ours is a) == (theirs is a)
    arr = np.asarray(a)
    with pyfftgl.plan(arr.shape, arr.dtype, kind=name, axes=()) as p:
        assert p.out_dtype == arr.dtype.newbyteorder("=") and np.array_equal(p(arr), arr)


def test_rfft_takes_a_bool_length_as_numpy(backend):
    x = np.arange(8.0)
    for name in ("rfft", "ihfft"):
        want = getattr(np.fft, name)(x, n=True)
        got = getattr(pyfftgl, name)(x, n=True, backend=backend)
        assert got.shape == want.shape and np.allclose(got, want)


def test_irfftn_none_in_s_is_irffts_default_length(backend):
    a = random_complex((4, 5)).astype(np.complex128)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        want = np.fft.irfftn(a, s=(4, None), axes=(0, 1))
        got = pyfftgl.irfftn(a, s=(4, None), axes=(0, 1), backend=backend)
    assert got.shape == want.shape == (4, 8)
    assert np.allclose(got, want, atol=1e-12)
