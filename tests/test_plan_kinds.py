"""plan(shape, kind=k, ...)(x) is pyfftgl.<k>(x, ...) for every numpy.fft kind: default and
explicit axes/s/n on 1-, 2- and 3-D shapes, on numpy and device input, both backends, and both
are numpy's float64 result within the accuracy contract.

The kinds are listed here by hand (not read from pyfftgl's table) so that the test is an
independent statement of numpy's surface."""
import numpy as np
import pytest

import pyfftgl
from conftest import assert_accurate

C2C = ("fft", "ifft", "fft2", "ifft2", "fftn", "ifftn")
R2C = ("rfft", "rfft2", "rfftn", "ihfft")
C2R = ("irfft", "irfft2", "irfftn", "hfft")
ONE_AXIS = ("fft", "ifft", "rfft", "irfft", "hfft", "ihfft")
SHAPES = {1: (10,), 2: (6, 9), 3: (4, 6, 10)}  # odd and even last axes
# Explicit arguments as plan() takes them; a 1-D kind's axis also as a 1-sequence.
ONE_AXIS_ARGS = {1: dict(axes=0, n=7), 2: dict(axes=0, n=5), 3: dict(axes=(1,), n=9)}
ND_ARGS = {1: dict(axes=(0,), s=(12,)), 2: dict(axes=(1, 0), s=(5, 7)),
           3: dict(axes=(-1, 0), s=(7, -1))}


def _cases():
    for kind in C2C + R2C + C2R:
        for ndim in (1, 2, 3):
            for explicit in (False, True):
                if kind.endswith("2") and ndim == 1 and not explicit:
                    continue  # numpy's default axes (-2, -1) need two dimensions
                yield pytest.param(kind, ndim, explicit, id=f"{kind}-{ndim}d-"
                                   f"{'explicit' if explicit else 'default'}")


def _function_args(kind, plan_args):
    """plan()'s arguments as the function takes them."""
    if kind not in ONE_AXIS:
        return dict(plan_args)
    axis = plan_args.get("axes", -1)
    return dict(n=plan_args.get("n"), axis=axis if isinstance(axis, int) else axis[0])


def _input(kind, shape):
    rng = np.random.default_rng(len(shape) * 7 + len(kind))
    x = rng.standard_normal(shape)
    if kind not in R2C:
        x = x + 1j * rng.standard_normal(shape)
    return x.astype(np.float32 if kind in R2C else np.complex64)


@pytest.mark.parametrize("kind, ndim, explicit", list(_cases()))
def test_plan_is_the_function(backend, kind, ndim, explicit):
    shape = SHAPES[ndim]
    args = (ONE_AXIS_ARGS if kind in ONE_AXIS else ND_ARGS)[ndim] if explicit else {}
    fargs = _function_args(kind, args)
    x = _input(kind, shape)
    func = getattr(pyfftgl, kind)
    ref = getattr(np.fft, kind)(x.astype(np.complex128 if x.dtype.kind == "c" else np.float64),
                                **fargs)
    with pyfftgl.plan(shape, x.dtype, kind=kind, backend=backend, **args) as p:
        assert (p.out_shape, p.out_dtype.kind) == (ref.shape, ref.dtype.kind)
        got, want = p(x), func(x, backend=backend, **fargs)
        assert got.shape == want.shape == ref.shape and got.dtype == want.dtype
        np.testing.assert_array_equal(got, want)
        assert_accurate(got, ref, max(ref.size, 2), factor=2)
        d = pyfftgl.asarray(x, backend=backend)
        got_d, want_d = p(d), func(d, **fargs)
        assert isinstance(got_d, pyfftgl.DeviceArray)
        got_d, want_d = got_d.get(), want_d.get()
        assert got_d.shape == want_d.shape == ref.shape and got_d.dtype == want_d.dtype
        np.testing.assert_array_equal(got_d, want_d)
        assert_accurate(got_d, ref, max(ref.size, 2), factor=2)


@pytest.mark.parametrize("kind", [k for k in C2C + R2C + C2R if k.endswith("2")])
def test_plan_of_a_2d_kind_on_1d_raises_as_the_function(kind):
    x = np.zeros(8, np.float32 if kind in R2C else np.complex64)
    with pytest.raises(IndexError):  # numpy's: its default axes (-2, -1) on one dimension
        getattr(np.fft, kind)(x)
    with pytest.raises(IndexError) as want:  # pyfftgl's AxisError is an IndexError
        getattr(pyfftgl, kind)(x)
    with pytest.raises(IndexError) as got:
        pyfftgl.plan(x.shape, x.dtype, kind=kind)
    assert (type(got.value), str(got.value)) == (type(want.value), str(want.value))


def test_the_table_is_numpys_surface():
    """One row per numpy.fft function, with numpy's default axes; every front end serves the
    table's kinds with those defaults."""
    import inspect

    import pyfftgl.scipy_fft  # noqa: F401 (reads the table)
    from pyfftgl.kinds import KINDS
    assert set(KINDS) == set(C2C + R2C + C2R)
    for name, spec in KINDS.items():
        params = inspect.signature(getattr(np.fft, name)).parameters
        default = params["axes" if spec.nd else "axis"].default
        assert spec.default_axes == default and spec.nd == (name not in ONE_AXIS)
        mine = inspect.signature(getattr(pyfftgl, name)).parameters
        assert mine["axes" if spec.nd else "axis"].default == default
        assert spec.family == ("c2c" if name in C2C else "r2c" if name in R2C else "c2r")
    assert set(KINDS) <= set(pyfftgl.__all__)
