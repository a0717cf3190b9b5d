"""TextureFFT on many fields per call: a TextureArray (every layer) and lists of textures of one
format run in one set of passes, the layer a grid dimension; every layer against numpy in
float64."""
import moderngl
import numpy as np
import pytest

import pyfftgl.gl
from pyfftgl.backends import get_device

from conftest import assert_accurate

COMPONENTS = {"rg32f": 2, "rgba32f": 4, "rgba16f": 4}
DTYPE = {"rg32f": np.float32, "rgba32f": np.float32, "rgba16f": np.float16}


@pytest.fixture(scope="module")
def ctx():
    dev = get_device("gl")
    with dev.current():  # textures are made on the library's context directly (test_textures)
        assert dev.ctx.error == "GL_NO_ERROR"
        yield dev.ctx
        assert dev.ctx.error == "GL_NO_ERROR"


def texels(layers, shape, fmt, seed):
    """(layers, h, w, c) texel values, rounded to the texture's precision."""
    a = np.random.default_rng(seed).standard_normal((layers,) + shape + (COMPONENTS[fmt],))
    return a.astype(DTYPE[fmt])


def make(ctx, a, kind):
    """A TextureArray of a's layers, or a list of textures, one per layer."""
    layers, h, w, c = a.shape
    dtype = "f2" if a.dtype == np.float16 else "f4"
    if kind == "array":
        return ctx.texture_array((w, h, layers), c, a.tobytes(), dtype=dtype)
    return [ctx.texture((w, h), c, a[i].tobytes(), dtype=dtype) for i in range(layers)]


def read(texs, a):
    """(layers, h, w, c) values of what make() made (read back as float64)."""
    layers, h, w, c = a.shape
    if not isinstance(texs, list):
        return np.frombuffer(texs.read(), a.dtype).reshape(a.shape).astype(np.float64)
    return np.stack([np.frombuffer(t.read(), a.dtype).reshape(h, w, c) for t in texs]
                    ).astype(np.float64)


def fields(texel_layer):
    """The complex fields of one (h, w, c) layer: c = 2 one field, 4 two."""
    x = texel_layer.astype(np.float64)
    return [x[..., 2 * f] + 1j * x[..., 2 * f + 1] for f in range(x.shape[-1] // 2)]


def check(got, ref, n, fmt, factor):
    if fmt.endswith("16f"):  # half-float storage, float32 compute: SNR >= 50 dB
        snr = 20 * np.log10(np.linalg.norm(ref) / np.linalg.norm(got - ref))
        assert snr >= 50, f"SNR {snr:.1f} dB"
    else:
        assert_accurate(got, ref, n, factor=factor)


def submission_calls(fft):
    """The dispatches of the submission the TextureFFT recorded last."""
    return fft.recordings()[-1].dispatch_count


@pytest.mark.parametrize("kind", ["array", "list"])
@pytest.mark.parametrize("fmt", ["rg32f", "rgba32f", "rgba16f"])
@pytest.mark.parametrize("shape", [(48, 80), (17, 32)])  # mixed radix; a Bluestein axis
def test_forward_inverse_convolve_every_layer(ctx, shape, fmt, kind):
    layers = 3
    fft = pyfftgl.gl.TextureFFT(ctx, shape)
    a = texels(layers, shape, fmt, seed=layers + shape[0])
    src = make(ctx, a, kind)
    spec = fft.forward(src)
    assert type(spec) is type(src)
    got = read(spec, a)
    for i in range(layers):
        for g, x in zip(fields(got[i]), fields(a[i])):
            check(g, np.fft.fft2(x), x.size, fmt, 2.0)
    assert np.array_equal(read(src, a), a.astype(np.float64))  # the input is left as it was
    back = fft.inverse(spec, spec)  # in place
    got = read(back, a)
    for i in range(layers):
        for g, x in zip(fields(got[i]), fields(a[i])):
            check(g, x, x.size, fmt, 3.0)
    # convolve: one real kernel for every field of every layer
    kernel = np.random.default_rng(5).standard_normal(shape).astype(np.float32)
    out = fft.convolve(src, fft.spectrum(kernel))
    got, k = read(out, a), np.fft.fft2(kernel.astype(np.float64))
    for i in range(layers):
        for g, x in zip(fields(got[i]), fields(a[i])):
            check(g, np.fft.ifft2(np.fft.fft2(x) * k), x.size, fmt, 2.0)
    assert ctx.error == "GL_NO_ERROR"


@pytest.mark.parametrize("kind", ["array", "list"])
def test_per_field_spectrum_applies_to_every_layer(ctx, kind):
    shape, layers = (32, 24), 4
    fft = pyfftgl.gl.TextureFFT(ctx, shape)
    a = texels(layers, shape, "rgba32f", seed=2)
    rng = np.random.default_rng(3)
    two = (rng.standard_normal(shape + (2,)) + 1j * rng.standard_normal(shape + (2,))
           ).astype(np.complex64)
    got = read(fft.convolve(make(ctx, a, kind), fft.spectrum(two)), a)
    for i in range(layers):
        for f, (g, x) in enumerate(zip(fields(got[i]), fields(a[i]))):
            ref = np.fft.ifft2(np.fft.fft2(x) * np.fft.fft2(two[..., f].astype(np.complex128)))
            assert_accurate(g, ref, x.size, factor=2.0)


@pytest.mark.parametrize("intermediate", ["buffer", "image"])
@pytest.mark.parametrize("kind", ["array", "list"])
def test_dispatches_do_not_grow_with_the_layers(ctx, kind, intermediate):
    """The recorded submission of a call has as many dispatches for 1 layer as for many: the
    layer is a grid dimension, not a loop of passes."""
    shape = (32, 48)
    fft = pyfftgl.gl.TextureFFT(ctx, shape, intermediate=intermediate)
    most = 6 if kind == "list" else 11
    delta = np.zeros(shape)
    delta[0, 0] = 1  # its spectrum is all ones: convolve is the identity
    counts = {}
    for layers in (1, 2, most):
        a = texels(layers, shape, "rgba32f", seed=layers)
        src = make(ctx, a, kind)
        for call, args in (("forward", ()), ("convolve", (fft.spectrum(delta),))):
            out = getattr(fft, call)(src, *args)
            counts.setdefault(call, []).append(submission_calls(fft))
        got = read(out, a)  # the last call, convolve by the delta
        assert np.allclose(got, a, atol=1e-5), layers
    assert all(len(set(c)) == 1 for c in counts.values()), counts


@pytest.mark.parametrize("kind", ["array", "list"])
def test_passes_meet_in_the_calls_float32_textures(ctx, kind):
    """Where the destination holds float32 (the work format), the first pass writes it and the
    second transforms it in place: the plan owns no texture between them. A half-float
    destination, and a list whose destinations are other positions' sources (a first pass
    writing one would race the pass reading it), keep the plan's own; every layer is right."""
    shape, layers = (32, 48), 2
    fft = pyfftgl.gl.TextureFFT(ctx, shape)
    a = texels(layers, shape, "rgba32f", seed=12)
    texel_bytes = shape[0] * shape[1] * 16

    def own_bytes():  # what the plan of the last call holds beyond its tables
        return max(p.nbytes for p in fft.plans()[-1:])

    got = read(fft.forward(make(ctx, a, kind)), a)
    assert "w0" in fft.plans()[-1].caller_bound and own_bytes() < texel_bytes
    for i in range(layers):
        for g, x in zip(fields(got[i]), fields(a[i])):
            check(g, np.fft.fft2(x), x.size, "rgba32f", 2.0)
    h = texels(layers, shape, "rgba16f", seed=13)
    fft.forward(make(ctx, h, kind))
    assert "w0" not in fft.plans()[-1].caller_bound and own_bytes() >= layers * texel_bytes
    if kind == "list":
        s1, s2 = make(ctx, a, kind)
        out = fft.inverse([s1, s2], [s2, s1])
        assert out == [s2, s1] and "w0" not in fft.plans()[-1].caller_bound
        got = read([s2, s1], a)
        for i in range(layers):
            for g, x in zip(fields(got[i]), fields(a[i])):
                check(g, np.fft.ifft2(x), x.size, "rgba32f", 2.0)


def test_long_lists_split_by_image_units(ctx):
    """A list longer than a pass may bind runs as a few sets of passes, each layer right."""
    shape, layers = (16, 16), 11
    fft = pyfftgl.gl.TextureFFT(ctx, shape)
    a = texels(layers, shape, "rg32f", seed=9)
    got = read(fft.forward(make(ctx, a, "list")), a)
    for i in range(layers):
        (g,), (x,) = fields(got[i]), fields(a[i])
        assert_accurate(g, np.fft.fft2(x), x.size)


def test_texture_array_arguments(ctx):
    fft = pyfftgl.gl.TextureFFT(ctx, (16, 32))
    arr = ctx.texture_array((32, 16, 3), 2, dtype="f4")
    with pytest.raises(ValueError, match=r"src is 16 x 16 texels \(width x height\); this "
                                         r"TextureFFT transforms 32 x 16"):
        fft.forward(ctx.texture_array((16, 16, 3), 2, dtype="f4"))
    with pytest.raises(ValueError, match="dst has 2 layers, src has 3"):
        fft.forward(arr, ctx.texture_array((32, 16, 2), 2, dtype="f4"))
    with pytest.raises(TypeError, match="dst must be a moderngl.TextureArray"):
        fft.forward(arr, ctx.texture((32, 16), 2, dtype="f4"))
    with pytest.raises(TypeError, match=r"dst\[0\] must be a moderngl.Texture like src"):
        fft.forward([ctx.texture((32, 16), 2, dtype="f4")], [arr])
    with pytest.raises(TypeError, match="r32f, rg32f or rgba32f"):
        fft.forward(ctx.texture_array((32, 16, 3), 3, dtype="f4"))
    with pytest.raises(TypeError, match="not a TextureArray"):
        fft.spectrum(arr)
    assert fft.plans() == []  # nothing was planned or dispatched
    assert isinstance(fft.forward(arr), moderngl.TextureArray)
