"""pyfftgl.wgpu_textures.TextureFFT on the caller's wgpu device and textures, against numpy
in float64.

The WebGPU tier (test_webgpu.py) runs this module on wgpu's Vulkan adapter (lavapipe) and its GL
adapter (llvmpipe); the main suite keeps one quick test. Array textures and rg32float results
run where wgpu can bind them (not its GL backend), and the refusal is checked there."""
import os

import numpy as np
import pytest

from conftest import assert_accurate

wgpu = pytest.importorskip("wgpu")
from pyfftgl.backends import wgpuinfo  # noqa: E402
import pyfftgl.wgpu_textures as pw  # noqa: E402

TIER = "webgpu" in os.environ.get("PYFFTGL_TEST_BACKENDS", "")
tier_only = pytest.mark.skipif(not TIER, reason="the WebGPU tier runs it (test_webgpu.py)")
U = wgpu.TextureUsage
ALL = U.TEXTURE_BINDING | U.STORAGE_BINDING | U.COPY_SRC | U.COPY_DST
COMPONENTS = {"rgba32float": 4, "rg32float": 2, "r32float": 1}
SHAPE = (24, 40)  # (height, width): 2^3 * 3 by 2^3 * 5, mixed radix on both axes


@pytest.fixture(scope="module")
def gpu():
    """The caller's device: on the adapter the tier picks (PYFFTGL_WEBGPU_ADAPTER)."""
    adapter = wgpuinfo.choose_adapter(wgpuinfo.import_wgpu())
    return adapter.request_device_sync(required_limits={})


def on_gl(gpu) -> bool:
    return gpu.adapter.info["backend_type"] in pw.LAYERS_REFUSED


def upload(gpu, a, fmt="rgba32float", usage=ALL):
    """A texture of `a` ((layers,) height, width, components float32), written through the
    queue as a caller would."""
    a = np.ascontiguousarray(a, np.float32)
    a = a[None] if a.ndim == 3 else a
    layers, h, w, c = a.shape
    tex = gpu.create_texture(size=(w, h, layers), format=fmt, usage=usage)
    gpu.queue.write_texture({"texture": tex}, a.tobytes(),
                            {"bytes_per_row": w * c * 4, "rows_per_image": h}, (w, h, layers))
    return tex


def download(gpu, tex) -> np.ndarray:
    c = COMPONENTS[tex.format]
    w, h, layers = tex.width, tex.height, tex.depth_or_array_layers
    raw = gpu.queue.read_texture({"texture": tex}, {"bytes_per_row": w * c * 4,
                                                    "rows_per_image": h}, (w, h, layers))
    return np.frombuffer(raw, np.float32).reshape(layers, h, w, c)


def fields(a) -> np.ndarray:
    """(..., components) texels as complex128 fields (r + i g, b + i a; r alone for r32)."""
    a = np.asarray(a, np.float64)
    return a[..., :1] + 0j if a.shape[-1] == 1 else a[..., 0::2] + 1j * a[..., 1::2]


def image(layers=1, c=4, seed=0):
    return np.random.default_rng(seed).standard_normal((layers,) + SHAPE + (c,)).astype(
        np.float32)


def check_layers(got, ref):
    for g, r in zip(fields(got), ref):  # per layer and field
        for k in range(r.shape[-1]):
            assert_accurate(g[..., k], r[..., k], SHAPE[0] * SHAPE[1])


@pytest.mark.quick
def test_forward_inverse_rgba(gpu):
    x = image()
    tex = upload(gpu, x)
    fft = pw.TextureFFT(gpu, SHAPE)
    spec = fft.forward(tex)
    assert spec.format == "rgba32float" and spec.size == tex.size
    check_layers(download(gpu, spec), np.fft.fft2(fields(x), axes=(1, 2)))
    back = fft.inverse(spec, tex)  # dst is the caller's own texture, the input overwritten
    assert back is tex
    check_layers(download(gpu, tex), fields(x))


@tier_only
@pytest.mark.parametrize("norm", ["ortho", "forward"])
def test_norm_and_dst_is_src(gpu, norm):
    x = image(seed=3)
    tex = upload(gpu, x)
    fft = pw.TextureFFT(gpu, SHAPE, norm=norm)
    assert fft.forward(tex, tex) is tex
    check_layers(download(gpu, tex), np.fft.fft2(fields(x), axes=(1, 2), norm=norm))


@tier_only
def test_convolve_array_texture_per_layer(gpu):
    x = image(layers=6, seed=1)  # more layers than a pass binds where the limit is 4
    k = np.random.default_rng(2).standard_normal(SHAPE)
    fft = pw.TextureFFT(gpu, SHAPE)
    tex = upload(gpu, x)
    K = fft.spectrum(k)
    if on_gl(gpu):
        before = fft.device.submissions
        with pytest.raises(ValueError, match="binds no single layer of an array texture"):
            fft.convolve(tex, K)
        assert fft.device.submissions == before
        return
    out = fft.convolve(tex, K)
    assert out.depth_or_array_layers == 6
    ref = np.fft.ifft2(np.fft.fft2(fields(x), axes=(1, 2)) * np.fft.fft2(k)[..., None],
                       axes=(1, 2))
    check_layers(download(gpu, out), ref)
    fwd = fft.forward(tex)
    check_layers(download(gpu, fwd), np.fft.fft2(fields(x), axes=(1, 2)))


@tier_only
def test_one_field_and_real_textures(gpu):
    fft = pw.TextureFFT(gpu, SHAPE)
    x = image(c=2, seed=4)
    src = upload(gpu, x, "rg32float", U.TEXTURE_BINDING | U.COPY_DST)
    if on_gl(gpu):  # wgpu's GL backend writes no rg32float storage texture
        with pytest.raises(TypeError, match="cannot write rg32float"):
            fft.forward(src)
        return
    check_layers(download(gpu, fft.forward(src)), np.fft.fft2(fields(x), axes=(1, 2)))
    r = image(c=1, seed=5)
    spec = fft.forward(upload(gpu, r, "r32float"))
    assert spec.format == "rg32float"  # a real field's spectrum is complex
    real = upload(gpu, np.zeros_like(r), "r32float")
    fft.inverse(spec, real)  # an r32float dst keeps the real part
    check_layers(download(gpu, real), fields(r))


@tier_only
def test_caller_encoder_and_replays(gpu):
    """The caller's encoder gets the pass; the caller's writes before it are seen, and the same
    arguments replay the recorded pass (a render loop's frames)."""
    fft = pw.TextureFFT(gpu, SHAPE)
    k = np.zeros(SHAPE + (4,), np.float32)
    k[0, 0], k[1, 0], k[0, 1] = 0.5, 0.25, 0.25  # a per-field (RGBA) kernel
    K = fft.spectrum(upload(gpu, k, usage=U.TEXTURE_BINDING | U.COPY_DST))
    src, dst = upload(gpu, image(seed=6)), upload(gpu, image(seed=7))
    for frame in range(3):
        x = image(seed=10 + frame)
        gpu.queue.write_texture({"texture": src}, x.tobytes(),
                                {"bytes_per_row": SHAPE[1] * 16, "rows_per_image": SHAPE[0]},
                                (SHAPE[1], SHAPE[0], 1))
        encoder = gpu.create_command_encoder()
        assert fft.convolve(src, K, dst, encoder=encoder) is dst
        gpu.queue.submit([encoder.finish()])
        K64 = np.fft.fft2(fields(k), axes=(0, 1))
        ref = np.fft.ifft2(np.fft.fft2(fields(x), axes=(1, 2)) * K64, axes=(1, 2))
        check_layers(download(gpu, dst), ref)
    assert fft.stats()["recorded"] == 1


@tier_only
def test_spectrum_frequency_and_get(gpu):
    fft = pw.TextureFFT(gpu, SHAPE)
    k = np.random.default_rng(8).standard_normal(SHAPE)
    K = fft.spectrum(k)
    assert_accurate(K.get(), np.fft.fft2(k), SHAPE[0] * SHAPE[1])
    H = np.fft.fft2(k).astype(np.complex64)
    np.testing.assert_array_equal(fft.spectrum(H, frequency=True).get(), H)


@tier_only
def test_bad_arguments_raise_before_gpu_work(gpu):
    fft = pw.TextureFFT(gpu, SHAPE)
    good = upload(gpu, image())
    other = pw.TextureFFT(gpu, SHAPE).spectrum(np.ones(SHAPE))
    before = (fft.device.submissions, fft.stats())
    small = gpu.create_texture(size=(8, 8, 1), format="rgba32float", usage=ALL)
    bgra = gpu.create_texture(size=(40, 24, 1), format="rgba8unorm", usage=U.TEXTURE_BINDING)
    no_read = gpu.create_texture(size=(40, 24, 1), format="rgba32float", usage=U.STORAGE_BINDING)
    no_write = gpu.create_texture(size=(40, 24, 1), format="rgba32float",
                                  usage=U.TEXTURE_BINDING)
    gone = gpu.create_texture(size=(40, 24, 1), format="rgba32float", usage=ALL)
    gone.destroy()
    foreign = wgpuinfo.choose_adapter(wgpu).request_device_sync().create_texture(
        size=(40, 24, 1), format="rgba32float", usage=ALL)
    cases = [(lambda: fft.forward(np.zeros(SHAPE)), TypeError, "must be a wgpu.GPUTexture"),
             (lambda: fft.forward(small), ValueError, "8 x 8 texels"),
             (lambda: fft.forward(bgra), TypeError, "rgba8unorm"),
             (lambda: fft.forward(no_read), ValueError, "TEXTURE_BINDING"),
             (lambda: fft.forward(good, no_write), ValueError, "STORAGE_BINDING"),
             (lambda: fft.forward(gone), ValueError, "destroyed"),
             (lambda: fft.forward(good, gone), ValueError, "destroyed"),
             (lambda: fft.forward(foreign), ValueError, "another GPUDevice"),
             (lambda: fft.convolve(good, other), TypeError, "this TextureFFT's spectrum"),
             (lambda: fft.forward(good, encoder=object()), TypeError, "GPUCommandEncoder"),
             (lambda: pw.TextureFFT(gpu, (0, 4)), ValueError, "positive integers"),
             (lambda: pw.TextureFFT(object(), SHAPE), TypeError, "wgpu.GPUDevice"),
             (lambda: fft.spectrum(np.ones((3, 3))), ValueError, "kernel must have shape")]
    for call, kind, message in cases:
        with pytest.raises(kind, match=message):
            call()
    assert (fft.device.submissions, fft.stats()) == before
    fft.close()
    with pytest.raises(ValueError, match="was closed"):
        fft.forward(good)
