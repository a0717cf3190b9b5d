"""TextureFFT on a caller's ModernGL context among others: two standalone EGL contexts that share
no objects (a texture's name in one binds another texture, or none, in the other), against numpy
in float64. ModernGL does not record which contexts share objects, so a TextureFFT takes only
textures made on its own ctx."""
import numpy as np
import pytest

import pyfftgl.gl

from conftest import assert_accurate

SHAPE = (16, 32)  # (height, width)


@pytest.fixture(scope="module")
def contexts():
    moderngl = pytest.importorskip("moderngl")
    a = moderngl.create_context(standalone=True, backend="egl", require=430)
    b = moderngl.create_context(standalone=True, backend="egl", require=430)  # current now
    yield a, b
    for c in (a, b):
        assert c.error == "GL_NO_ERROR"
        c.release()


def _texture(ctx, a):
    with ctx:
        t = ctx.texture((a.shape[1], a.shape[0]), a.shape[2], dtype="f4")
        t.write(np.ascontiguousarray(a, np.float32).tobytes())
    return t


def _field(ctx, t):
    with ctx:
        a = np.frombuffer(t.read(), np.float32).reshape(t.size[1], t.size[0], t.components)
    return a[..., 0] + 1j * a[..., 1]


def _texels(seed):
    return np.random.default_rng(seed).standard_normal(SHAPE + (2,)).astype(np.float32)


def test_a_texture_fft_made_while_another_context_or_none_is_current_runs_on_its_own(contexts):
    """The device of a context is made with that context current, whichever the caller had
    current (and that one is current again after), or none: the results are right."""
    a, b = contexts
    fft = pyfftgl.gl.TextureFFT(a, SHAPE)  # b is current here
    b.texture((4, 4), 2, dtype="f4").release()  # still current: ModernGL makes one on it
    x = _texels(1)
    ref = np.fft.fft2(x[..., 0].astype(np.float64) + 1j * x[..., 1])
    out = fft.forward(_texture(a, x))
    assert_accurate(_field(a, out), ref, ref.size)
    with b:  # b is the caller's: a call leaves it current
        assert fft.forward(_texture(a, x), out) is out
        assert b.error == "GL_NO_ERROR"
    assert_accurate(_field(a, out), ref, ref.size)
    # none current (ModernGL's `with` leaves none): the TextureFFT of b as right
    on_b = pyfftgl.gl.TextureFFT(b, SHAPE)
    assert_accurate(_field(b, on_b.forward(_texture(b, x))), ref, ref.size)
    for f in (fft, on_b):
        f.close()


def test_textures_of_another_context_are_refused_before_any_work(contexts):
    a, b = contexts
    fft = pyfftgl.gl.TextureFFT(a, SHAPE)
    mine, theirs = _texture(a, _texels(2)), _texture(b, _texels(3))
    kernel = fft.spectrum(np.ones(SHAPE))
    plans, before = len(fft.plans()), (_field(a, mine), _field(b, theirs))
    other = "belongs to another ModernGL context than this TextureFFT's ctx"
    for call, msg in [
        (lambda: fft.forward(theirs), f"src {other}"),
        (lambda: fft.forward(mine, theirs), f"dst {other}"),
        (lambda: fft.inverse([mine, theirs]), rf"src\[1\] {other}"),  # a list of both
        (lambda: fft.forward([mine, mine], [mine, theirs]), rf"dst\[1\] {other}"),
        (lambda: fft.convolve(theirs, kernel), f"src {other}"),
        (lambda: fft.convolve(mine, kernel, theirs), f"dst {other}"),
        (lambda: fft.spectrum(theirs), f"kernel {other}"),
    ]:
        with pytest.raises(ValueError, match=msg):
            call()
    # a spectrum of a TextureFFT on the other context
    with pytest.raises(TypeError, match="from this TextureFFT"):
        fft.convolve(mine, pyfftgl.gl.TextureFFT(b, SHAPE).spectrum(np.ones(SHAPE)))
    assert len(fft.plans()) == plans and fft.recordings() == []  # nothing planned or recorded
    for got, was in zip((_field(a, mine), _field(b, theirs)), before):
        assert np.array_equal(got, was)  # neither texture written
    fft.close()


def test_a_released_context_is_refused_and_close_still_works():
    moderngl = pytest.importorskip("moderngl")
    c = moderngl.create_context(standalone=True, backend="egl", require=430)
    fft = pyfftgl.gl.TextureFFT(c, SHAPE)
    t = _texture(c, _texels(4))
    spectrum = fft.spectrum(np.ones(SHAPE))
    assert fft.forward(t, t) is t and fft.forward(t, t) is t  # the second a replay
    c.release()
    gone = r"ModernGL context .*was released"
    for call in (lambda: fft.forward(t, t), lambda: fft.inverse(t, t),  # a replay, a new call
                 lambda: fft.spectrum(np.ones(SHAPE)), lambda: fft.convolve(t, spectrum),
                 spectrum.get):
        with pytest.raises(ValueError, match=gone):
            call()
    fft.close()  # forgets its objects, which went with the context
    with pytest.raises(ValueError, match="ctx was released"):
        pyfftgl.gl.TextureFFT(c, SHAPE)
