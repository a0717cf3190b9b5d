"""Non-finite input stays in its batch member, and results are deterministic.

A NaN or an Inf in one member of a batch makes that member's output non-finite and leaves every
other member bit-identical to a run without it, on each kind of pass: a one-dispatch line, a
four-step (forced with a small shared memory, as in test_fft.py), Bluestein, real-to-complex
and complex-to-real, and a batched 2D transform. Repeated runs are bit-identical and the input
is left bit-identical. Every transform that could pair lines (the DCT/DST family, the real FFTs,
convolutions, TextureFFT's two-field textures and lists) keeps a non-finite value in its line,
as numpy and scipy do (issue 51)."""
import numpy as np
import pytest
import scipy.fft

import pyfftgl
import pyfftgl.scipy_fft
import pyfftgl.signal
from pyfftgl import planner
from pyfftgl.backends import get_device
from pyfftgl.limits import Limits
from pyfftgl.plans import TransformPlan

from conftest import assert_accurate, random_complex

SMALL = Limits(8192, 1024, (1024, 1024, 64), (2**31 - 1, 65535, 65535), 2**32)


def _plan(backend, shape, axes, limits=None, steps=None):
    """A TransformPlan and the complex64 data it takes: c2c over `axes`, or `steps`."""
    dev = get_device(backend)
    lim = planner.tighter(dev.info.limits, limits)
    if steps is None:
        spec = planner.plan_c2c(shape, axes, False, "backward", lim)
    else:
        spec = planner.plan_steps(shape, steps, lim)
    return TransformPlan(spec, dev, lim, "backward")


def _cases(backend):
    """(label, plan, input shape, batch axis, pass kinds the plan must contain)."""
    return [
        ("line", _plan(backend, (5, 256), (1,)), (5, 256)),
        ("four-step", _plan(backend, (3, 2**14), (1,), SMALL), (3, 2**14)),
        ("bluestein", _plan(backend, (4, 1009), (1,)), (4, 1009)),
        ("rfft", _plan(backend, (4, 128), None, steps=[planner.Step("r2c", 1, n=256)]), (4, 128)),
        ("irfft", _plan(backend, (4, 129), None, steps=[planner.Step("c2r", 1, n=256)]), (4, 129)),
        ("2d batch", _plan(backend, (3, 24, 40), (1, 2)), (3, 24, 40)),
    ]


def _bits(a):
    return np.ascontiguousarray(a).view(np.uint32)


def test_non_finite_stays_in_its_batch_member(backend):
    for label, plan, shape in _cases(backend):
        if label == "four-step":
            assert "four-step" in plan.spec.algorithms, "the small limits must force a four-step"
        if label == "bluestein":
            assert "bluestein" in plan.spec.algorithms
        x = random_complex(shape, seed=len(shape) + shape[-1])
        clean = plan.execute(x)
        assert np.all(np.isfinite(clean)), label
        for member, bad in ((1, np.nan), (0, np.inf), (shape[0] - 1, -np.inf),
                            (1, complex(np.nan, 1.0))):
            y = x.copy()
            y[(member,) + tuple(s // 3 for s in shape[1:])] = bad
            keep = y.copy()
            got = plan.execute(y)
            assert np.array_equal(_bits(y), _bits(keep)), f"{label}: the input was written"
            others = [i for i in range(shape[0]) if i != member]
            assert np.array_equal(_bits(got[others]), _bits(clean[others])), \
                f"{label}: {bad} in member {member} changed another member"
            # every output depends on every input of its member (for the real steps: every
            # complex pair of reals holds at least one non-finite value)
            assert not np.any(np.isfinite(got[member])), f"{label}: finite output beside {bad}"


def test_public_functions_keep_non_finite_in_its_member(backend):
    x = random_complex((4, 60), seed=5)
    r = np.random.default_rng(6).standard_normal((4, 64)).astype(np.float32)
    for f, a in ((pyfftgl.fft, x), (pyfftgl.ifft, x), (pyfftgl.rfft, r), (pyfftgl.irfft, x),
                 (pyfftgl.hfft, x), (pyfftgl.ihfft, r)):
        clean = f(a, backend=backend)
        b = a.copy()
        b[2, 7] = np.inf
        got = f(b, backend=backend)
        assert np.array_equal(_bits(got[[0, 1, 3]]), _bits(clean[[0, 1, 3]])), f.__name__
        assert not np.all(np.isfinite(got[2])), f.__name__


def test_repeated_runs_are_bit_identical(backend):
    for label, plan, shape in _cases(backend):
        x = random_complex(shape, seed=11)
        keep = x.copy()
        first = plan.execute(x)
        for _ in range(3):
            assert np.array_equal(_bits(plan.execute(x)), _bits(first)), label
        assert np.array_equal(_bits(x), _bits(keep)), label


def test_public_calls_and_device_arrays_are_deterministic(backend):
    x = random_complex((6, 96), seed=12)
    r = np.random.default_rng(13).standard_normal((6, 96)).astype(np.float32)
    keep_x, keep_r = x.copy(), r.copy()
    calls = [lambda: pyfftgl.fft2(x, backend=backend), lambda: pyfftgl.rfft(r, backend=backend),
             lambda: pyfftgl.irfft(x, backend=backend), lambda: pyfftgl.fft(x, n=101,
                                                                              backend=backend)]
    firsts = [c() for c in calls]
    pyfftgl.plan_cache.clear()  # fresh plans (new buffers and tables) give the same bits
    for c, first in zip(calls, firsts):
        for _ in range(2):
            assert np.array_equal(_bits(c()), _bits(first))
    assert np.array_equal(_bits(x), _bits(keep_x)) and np.array_equal(_bits(r), _bits(keep_r))
    d = pyfftgl.asarray(x, backend=backend)
    out = pyfftgl.asarray(np.zeros_like(x), backend=backend)
    first = pyfftgl.fft2(d).get()
    assert np.array_equal(_bits(first), _bits(firsts[0]))  # the device path: the same kernels
    for _ in range(3):
        pyfftgl.fft2(d, out=out)
        assert np.array_equal(_bits(out.get()), _bits(first))
    assert np.array_equal(_bits(d.get()), _bits(keep_x))


# ---------------------------------------------------------------- lines that share no FFT line
# A transform that pairs two lines in one complex FFT (Makhoul's DCT, a real FFT's half-length
# view, a texture's two fields) must keep a non-finite value in its own line: every other line,
# and for complex input the other part's transform, equals numpy/scipy's within the contract.

EPS64 = float(np.finfo(np.float64).eps)


def _assert_lines(got, ref, bad, n, double):
    """Lines of `got` outside the boolean line mask `bad` match `ref` (float64, of the same
    input) within the accuracy contract; inside it `got` is non-finite wherever `ref` is."""
    got, ref = np.asarray(got, np.complex128), np.asarray(ref, np.complex128)
    good = ~bad
    assert np.all(np.isfinite(ref[good])), "the reference's other lines are finite"
    g, r = got[good], ref[good]
    if double:
        rel = np.linalg.norm(g - r) / np.linalg.norm(r)
        assert rel <= 2 * EPS64 * np.sqrt(max(1.0, np.log2(n))), f"rel L2 {rel:.3e}"
    else:
        assert_accurate(g, r, n)
    assert not np.any(np.isfinite(got[bad & ~np.isfinite(ref)])), "finite beside non-finite"


def _lines_of(shape, axes, where):
    """The mask of the lines (over `axes`) holding the index `where`."""
    mask = np.zeros(shape, bool)
    idx = tuple(slice(None) if ax in axes else w for ax, w in enumerate(where))
    mask[idx] = True
    return mask


def _parts(a):
    """Complex values as (..., 2) reals (real, imaginary part); reals with a unit last axis."""
    a = np.asarray(a)
    return np.stack([a.real, a.imag], -1) if a.dtype.kind == "c" else a[..., None]


# (shape, the transform's axis or axes, the index made non-finite, complex input)
R2R_CASES = {
    1: [((3, 8), (1,), (1, 2), False), ((3, 7), (1,), (1, 3), False),
        ((8, 3), (0,), (2, 1), False), ((3, 8), (1,), (1, 2), True)],
    2: [((3, 6, 8), (1, 2), (1, 2, 5), False), ((6, 8, 3), (0, 1), (2, 5, 1), False),
        ((3, 4, 6), (1, 2), (1, 2, 3), True)],
}


def _r2r_runs(name, backend, nd):
    """(pyfftgl's result, scipy's float64 result, the bad mask, n) for every type and case of
    the DCT/DST function `name`, numpy input in both precisions and DeviceArray input."""
    f, ref_f = getattr(pyfftgl, name), getattr(scipy.fft, name)
    rng = np.random.default_rng(len(name))
    for type_ in (1, 2, 3, 4):
        for i, (shape, axes, where, cplx) in enumerate(R2R_CASES[nd]):
            x = rng.standard_normal(shape) + (1j * rng.standard_normal(shape) if cplx else 0)
            x[where] = np.nan if (type_ + i) % 2 else np.inf  # the real part only
            kw = {"axes": axes} if nd == 2 else {"axis": axes[0]}
            bad = _lines_of(shape + (2,), axes, where + (0,))[..., : 1 + cplx]
            n = int(np.prod([shape[a] for a in axes]))
            for dtype in ((np.complex64, np.complex128) if cplx else (np.float32, np.float64)):
                y = x.astype(dtype)
                with np.errstate(invalid="ignore"):
                    ref = ref_f(y.astype(np.complex128 if cplx else np.float64), type_, **kw)
                yield f(y, type_, backend=backend, **kw), ref, bad, n, dtype
                if i == 0 and dtype in (np.float32, np.complex64):
                    d = pyfftgl.asarray(y, backend=backend)
                    yield f(d, type_, **kw).get(), ref, bad, n, dtype


@pytest.mark.parametrize("name", ["dct", "idct", "dst", "idst", "dctn", "idctn", "dstn", "idstn"])
def test_dct_family_keeps_non_finite_in_its_line(backend, name):
    for got, ref, bad, n, dtype in _r2r_runs(name, backend, 2 if name.endswith("n") else 1):
        double = np.dtype(dtype) in (np.float64, np.complex128)
        _assert_lines(_parts(got), _parts(ref), bad, n, double)


def test_scipy_backend_keeps_non_finite_in_its_line():
    x = np.ones((4, 8))
    x[0, 0] = np.nan  # the example
    z = np.random.default_rng(3).standard_normal((3, 8)) * (1 + 1j)
    z[1, 4] = complex(np.inf, 1.0)
    with scipy.fft.set_backend(pyfftgl.scipy_fft, only=True):
        got = [scipy.fft.dct(x), scipy.fft.idst(x.astype(np.float32), 3),
               scipy.fft.dctn(z, 2, axes=(1,)), scipy.fft.idct(z.astype(np.complex64))]
    with np.errstate(invalid="ignore"):
        refs = [scipy.fft.dct(x), scipy.fft.idst(x, 3), scipy.fft.dctn(z, 2, axes=(1,)),
                scipy.fft.idct(z)]
    bads = [_lines_of((4, 8, 1), (1,), (0, 0, 0)), _lines_of((4, 8, 1), (1,), (0, 0, 0)),
            _lines_of((3, 8, 2), (1,), (1, 4, 0)), _lines_of((3, 8, 2), (1,), (1, 4, 0))]
    for g, r, bad in zip(got, refs, bads):
        _assert_lines(_parts(g), _parts(r), bad, 8, g.dtype in (np.float64, np.complex128))


def _fft_runs(backend):
    """(label, pyfftgl's result, numpy's float64 result, bad mask, n) for the real FFT kinds:
    batched rows (even, odd), a strided real axis, 2D and 3D with a batch member or inner lines
    beside the transformed ones, both precisions, numpy and DeviceArray input."""
    rng = np.random.default_rng(21)
    cases = [  # (name, shape, kwargs, line axes, where, complex input)
        ("rfft", (4, 16), {}, (1,), (1, 5), False), ("rfft", (4, 15), {}, (1,), (2, 3), False),
        ("rfft", (16, 3), {"axis": 0}, (0,), (4, 1), False),
        ("irfft", (4, 9), {}, (1,), (1, 4), True), ("irfft", (4, 8), {"n": 15}, (1,), (3, 2), True),
        ("hfft", (4, 9), {}, (1,), (2, 4), True), ("ihfft", (4, 16), {}, (1,), (0, 7), False),
        ("rfftn", (3, 6, 16), {"axes": (1, 2)}, (1, 2), (1, 2, 5), False),
        ("rfftn", (6, 16, 3), {"axes": (0, 1)}, (0, 1), (2, 5, 1), False),
        ("irfftn", (3, 6, 9), {"axes": (1, 2)}, (1, 2), (1, 2, 5), True),
        ("irfftn", (6, 9, 3), {"axes": (0, 1)}, (0, 1), (2, 5, 1), True),
        ("rfft2", (2, 3, 8, 12), {}, (2, 3), (1, 2, 3, 4), False),
    ]
    for i, (name, shape, kw, axes, where, cplx) in enumerate(cases):
        x = rng.standard_normal(shape) + (1j * rng.standard_normal(shape) if cplx else 0)
        x[where] = complex(np.nan, 1.0) if cplx else (np.nan if i % 2 else -np.inf)
        f, ref_f = getattr(pyfftgl, name), getattr(np.fft, name)
        with np.errstate(invalid="ignore"):
            ref = ref_f(x, **kw)
        bad = _lines_of(ref.shape, axes, where)
        n = int(np.prod([ref.shape[a] for a in axes]))
        for dtype in ((np.complex64, np.complex128) if cplx else (np.float32, np.float64)):
            y = x.astype(dtype)
            yield name, f(y, backend=backend, **kw), ref, bad, n, dtype
            if dtype in (np.float32, np.complex64):
                yield name, f(pyfftgl.asarray(y, backend=backend), **kw).get(), ref, bad, n, dtype


def test_real_ffts_keep_non_finite_in_its_line(backend):
    for name, got, ref, bad, n, dtype in _fft_runs(backend):
        double = np.dtype(dtype) in (np.float64, np.complex128)
        try:
            _assert_lines(got, ref, bad, n, double)
        except AssertionError as e:
            raise AssertionError(f"{name} {np.dtype(dtype)}: {e}") from None


def test_convolutions_keep_non_finite_in_their_member(backend):
    """fftconvolve and a Convolver (real FFTs on the innermost axis, or complex ones) over a
    batch axis: a non-finite image leaves the other members' convolutions scipy's."""
    import scipy.signal
    rng = np.random.default_rng(31)
    cases = [((3, 40), (1, 5), None, (1,), (1, 17)), ((3, 12, 10), (1, 3, 4), (1, 2), (1, 2),
                                                        (2, 4, 4)),
             ((12, 3), (5, 1), (0,), (0,), (6, 1))]  # a strided axis: complex FFTs
    for shape, kshape, axes, line_axes, where in cases:
        for dtype in (np.float32, np.complex128):
            x = rng.standard_normal(shape).astype(dtype)
            k = rng.standard_normal(kshape).astype(dtype)
            x[where] = np.inf if dtype == np.float32 else complex(np.nan, 0.5)
            with np.errstate(invalid="ignore"):
                ref = scipy.signal.fftconvolve(x.astype(np.complex128 if dtype == np.complex128
                                                        else np.float64), k, "same", axes=axes)
            bad = np.broadcast_to(_lines_of(shape, line_axes, where)[..., None],
                                  _parts(ref).shape)
            n = int(np.prod([shape[a] for a in line_axes]))
            double = dtype == np.complex128
            got = pyfftgl.signal.fftconvolve(x, k, "same", axes=axes, backend=backend)
            _assert_lines(_parts(got), _parts(ref), bad, n, double)
            conv = pyfftgl.signal.Convolver(k, shape, "same", axes=axes, dtype=dtype,
                                            backend=backend)
            got = conv(pyfftgl.asarray(x, backend=backend)).get()
            _assert_lines(_parts(got), _parts(ref), bad, n, double)


def _texture_fields(a):
    """The complex fields of (h, w, c) texels: c = 1 real, 2 one field, 4 two."""
    a = a.astype(np.float64)
    if a.shape[2] == 1:
        return [a[..., 0] + 0j]
    with np.errstate(invalid="ignore"):
        return [a[..., 2 * f] + 1j * a[..., 2 * f + 1] for f in range(a.shape[2] // 2)]


def test_texture_fields_and_layers_keep_non_finite_apart():
    """TextureFFT: a NaN in field 1 of an rgba32f texture (r + i g) leaves field 2 (b + i a)
    numpy's, forward, inverse and convolve; a non-finite texture of a list leaves the others."""
    import pyfftgl.gl
    dev = get_device("gl")
    shape = (16, 24)
    rng = np.random.default_rng(41)
    kernel = np.zeros(shape)
    kernel[0, :3], kernel[1, 0] = (0.5, 0.25, 0.125), 0.125
    kspec = np.fft.fft2(kernel)
    with dev.current():
        ctx = dev.ctx

        def tex(a):
            t = ctx.texture((shape[1], shape[0]), a.shape[2], dtype="f4")
            t.write(np.ascontiguousarray(a, np.float32).tobytes())
            return t

        def read(t):
            return np.frombuffer(t.read(), np.float32).reshape(shape + (t.components,))

        for inter in ("image", "buffer"):
            fft = pyfftgl.gl.TextureFFT(ctx, shape, intermediate=inter)
            k = fft.spectrum(kernel)
            # rgba32f; a list of two rg32f, of two r32f: the first of each non-finite
            texels = [rng.standard_normal(shape + (c,)).astype(np.float32)
                      for c in (4, 2, 2, 1, 1)]
            for a, bad in zip(texels, (np.nan, np.inf, None, -np.inf, None)):
                if bad is not None:
                    a[3, 5, 0] = bad  # field 1's real part
            groups = [[tex(texels[0])], [tex(texels[1]), tex(texels[2])],
                      [tex(texels[3]), tex(texels[4])]]
            firsts = [0, 1, 3]
            calls = [(fft.forward, np.fft.fft2), (fft.inverse, np.fft.ifft2),
                     (lambda s: fft.convolve(s, k), lambda x: np.fft.ifft2(np.fft.fft2(x) * kspec))]
            for group, first in zip(groups, firsts):
                for call, ref_f in calls:
                    outs = call(group if len(group) > 1 else group[0])
                    outs = outs if isinstance(outs, list) else [outs]
                    for j, out in enumerate(outs):
                        got = _texture_fields(read(out))
                        for f, x in enumerate(_texture_fields(texels[first + j])):
                            with np.errstate(invalid="ignore"):
                                ref = ref_f(x)
                            if np.all(np.isfinite(x)):
                                _assert_lines(got[f], ref, np.zeros(shape, bool), 384, False)
                            else:
                                assert not np.any(np.isfinite(got[f][~np.isfinite(ref)]))
                        out.release()
                for t in group:
                    t.release()
            fft.close()
