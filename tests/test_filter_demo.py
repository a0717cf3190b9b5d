"""demos/filter on llvmpipe: the GPU path equals the float64 numpy reference, the views show what
they claim, and the headless and windowed (Xvfb) runs produce real pictures."""
import os
import pathlib
import shutil
import subprocess
import sys

import numpy as np
import pytest

from demos.filter import app, filters, images
from conftest import snr_db

ROOT = pathlib.Path(__file__).resolve().parents[1]
SHAPE = (128, 192)  # (height, width): not square, and a factor 3 in the width


@pytest.fixture(scope="module")
def ctx():
    moderngl = pytest.importorskip("moderngl")
    c = moderngl.create_standalone_context(require=430, backend="egl")
    yield c
    c.release()


def _renderer(ctx, half):
    from demos.filter.render import FilterRenderer
    assert ctx.error == "GL_NO_ERROR"
    r = FilterRenderer(ctx, SHAPE, half)
    r.set_input(images.test_pattern(SHAPE))
    yield r
    r.release()
    assert ctx.error == "GL_NO_ERROR"


@pytest.fixture(scope="module")
def view_fbo(ctx):
    """One framebuffer for the view tests: ModernGL rebinds a released bound framebuffer when it
    makes the next one (GL_INVALID_OPERATION)."""
    h, w = SHAPE
    fbo = ctx.simple_framebuffer((2 * (w + 8), h + 8), components=4)
    yield fbo
    fbo.release()


@pytest.fixture
def renderer(ctx):
    yield from _renderer(ctx, False)


@pytest.fixture
def half_renderer(ctx):
    """--half: every texture of the demo in rgba16f."""
    yield from _renderer(ctx, True)


# Parameters scaled to the small test image so each filter changes it a lot.
CASES = {
    "bandpass": lambda s: filters.bandpass(s, inner=0.05, outer=0.25, falloff=0.03),
    "blur": lambda s: filters.gaussian_blur(s, 3.0),
    "sharpen": lambda s: filters.sharpen(s, 2.0, 1.5),
    "motion": lambda s: filters.motion_blur(s, 15.0, 30.0),
    "bloom": lambda s: filters.bloom(s, threshold=0.6, intensity=2.0, radius=0.4),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_gpu_filter_equals_numpy(renderer, name):
    filt = CASES[name](SHAPE)
    renderer.set_filter(filt)
    renderer.run(t=1.5, sparkles=3)
    picture = renderer.read(renderer.image).astype(np.float64)  # what the GPU filtered (sparkles)
    got = renderer.read(renderer.result)
    want = filters.apply(picture, filt)
    assert np.abs(got - want).max() < 1e-4
    assert np.abs(want - picture)[..., :3].max() > 0.2  # the filter does change this picture


@pytest.mark.parametrize("name", sorted(CASES))
def test_half_storage_filter_snr(half_renderer, name):
    """--half: rgba16f images, float32 FFTs. The filtered picture against the float64 filter of the
    same float16 picture: SNR >= 50 dB (llvmpipe: 67-74 dB) and the largest error about one float16
    unit of the largest output (llvmpipe: 4.9e-4 for values below 1, 2e-3 for sharpen's and
    bloom's up to 2.6)."""
    r = half_renderer
    textures = (r.base, r.image, r.bright, r.glow, r.output, r.spectrum)
    assert all(t.dtype == "f2" and t.components == 4 for t in textures)
    assert all("#define IMAGE_FORMAT rgba16f\n" in src for src in r.sources.values())
    filt = CASES[name](SHAPE)
    r.set_filter(filt)
    r.run(t=1.5, sparkles=3)
    picture = r.read(r.image).astype(np.float64)  # float16 values: what the GPU filtered
    got = r.read(r.result).astype(np.float64)
    want = filters.apply(picture, filt)
    assert snr_db(got, want) >= 50
    unit = 2.0 ** (np.floor(np.log2(np.abs(want).max())) - 10)  # float16's at the largest value
    assert np.abs(got - want).max() <= 1.5 * unit
    assert snr_db(picture, want) < 20  # the picture itself, unfiltered, is far from it


def test_half_storage_spectrum_is_orthonormal(half_renderer):
    """--half keeps the spectrum view's input orthonormal (an unscaled one's zero frequency, up to
    H W, overflows float16 from 256 x 256 on); the view scales its power back."""
    r = half_renderer
    r.set_filter(CASES["blur"](SHAPE))
    r.run(t=0.0, sparkles=0)
    out = r.read(r.result).astype(np.float64)
    spec = r.read(r.spectrum).astype(np.float64)
    fields = lambda a: a[..., 0::2] + 1j * a[..., 1::2]  # noqa: E731
    want = np.fft.fft2(fields(out), axes=(0, 1), norm="ortho")
    assert snr_db(fields(spec), want) >= 50
    assert r.spectrum_view["gain"].value == SHAPE[0] * SHAPE[1]


def test_none_passes_the_picture_through(renderer):
    renderer.set_filter(filters.identity(SHAPE))
    renderer.run(t=0.0, sparkles=0)
    assert renderer.result is renderer.image
    assert np.array_equal(renderer.read(renderer.image), images.test_pattern(SHAPE))


def _ramp(v):
    """tests' twin of render.RAMP."""
    def smoothstep(a, b, x):
        t = np.clip((x - a) / (b - a), 0.0, 1.0)
        return t * t * (3 - 2 * t)
    blue = 0.6 * smoothstep(0.0, 0.3, v) * (1 - smoothstep(0.3, 0.6, v)) + smoothstep(0.75, 1.0, v)
    return np.stack([smoothstep(0.0, 0.55, v), smoothstep(0.35, 0.85, v), blue], -1)


@pytest.mark.parametrize("which", ["renderer", "half_renderer"])
def test_views_show_the_picture_and_its_log_power_spectrum(view_fbo, request, which):
    """One fragment per texel: the left half is the clamped picture, the right half the fftshifted
    log(1 + |F|^2) of its luminance, normalised by the largest possible power, through the ramp
    (with --half too, whose spectrum texture is orthonormal)."""
    renderer = request.getfixturevalue(which)
    h, w = SHAPE
    fbo = view_fbo
    filt = CASES["bandpass"](SHAPE)
    renderer.set_filter(filt)
    renderer.run(t=0.0, sparkles=0)
    renderer.draw(fbo)
    shot = np.frombuffer(fbo.read(components=3), np.uint8).reshape(h + 8, 2 * (w + 8), 3)
    shot = shot[::-1].astype(int)  # GL rows start at the bottom
    out = filters.apply(renderer.read(renderer.image), filt)
    left = np.clip(out[..., :3], 0, 1) * 255
    assert np.abs(shot[4:4 + h, 4:4 + w] - left).max() <= 1.01
    lum = np.fft.fft2(out[..., :3] @ filters.LUMA)
    v = np.log1p(np.abs(lum) ** 2) / np.log1p(float(h * w) ** 2)
    right = np.fft.fftshift(_ramp(v), axes=(0, 1)) * 255
    diff = np.abs(shot[4:4 + h, w + 12:2 * w + 12] - right)
    assert diff.max() <= 2.01, diff.max()
    assert right.std() > 20  # a spectrum with structure, not a flat field


def test_kernels_are_what_they_say():
    s = (64, 96)
    dy, dx = filters.offsets(s)
    blur = filters.gaussian_blur(s, 2.0).kernel
    assert blur.sum() == pytest.approx(1.0) and blur[0, 0] == blur.max()
    assert (blur * dx * dx).sum() == pytest.approx(4.0, rel=1e-6)  # variance sigma^2
    mask = filters.bandpass(s, 0.1, 0.3, 0.02).kernel
    assert np.array_equal(mask, np.roll(mask[::-1, ::-1], (1, 1), (0, 1)))  # even: a real kernel
    assert mask[0, 0] == 1.0 and mask[0, 12] == 1.0 and mask[0, 5] == 0.0 and mask[0, 40] == 0.0
    motion = filters.motion_blur(s, 20.0, 90.0).kernel  # vertical on screen
    assert motion.sum() == pytest.approx(1.0)
    assert (motion * dy).sum() == pytest.approx(0.0, abs=1e-9)
    # a box of length 20 (variance L^2 / 12) spread by the bilinear splat's tent (variance 1 / 6)
    assert (motion * dy * dy).sum() == pytest.approx(20.0 ** 2 / 12 + 1 / 6, rel=2e-3)
    assert (motion * dx * dx).sum() == pytest.approx(0.0, abs=1e-9)
    sharp = filters.sharpen(s, 1.5, 2.0).kernel
    assert sharp.sum() == pytest.approx(1.0) and sharp[0, 0] > 1.0
    assert filters.bloom(s, intensity=2.5).kernel.sum() == pytest.approx(2.5)


def test_bright_pass_and_bloom_reference():
    x = np.zeros((4, 4, 4))
    x[1, 1, :3] = 1.0
    x[2, 2, :3] = 0.5
    x[3, 3, :3] = [0.875, 0.875, 0.875]  # half way from the threshold to white
    b = filters.bright_pass(x, 0.75)
    assert np.allclose(b[1, 1, :3], 1.0) and not b[2, 2].any() and not b[..., 3].any()
    assert np.allclose(b[3, 3, :3], 0.5)  # luminance (lum - t) / (1 - t), hue kept
    out = filters.apply(x, filters.Filter("bloom", filters.identity((4, 4)).kernel, threshold=0.75))
    assert np.allclose(out, x + b)


def test_sizes_and_fitting():
    sizes = (1080, 1081, 1920, 1023, 7)
    assert [images.fast_length(n) for n in sizes] == [1080, 1125, 1920, 1024, 8]
    assert app.parse_size("2048x1152") == (1152, 2048) and app.parse_size("256") == (256, 256)
    hd = np.full((1080, 1920, 4), 0.5, np.float32)
    fitted = images.fit(hd, (1152, 2048))
    assert fitted.shape == (1152, 2048, 4)
    assert (fitted[36:36 + 1080, 64:64 + 1920] == 0.5).all() and not fitted[:36, :, :3].any()
    assert (fitted[:36, :, 3] == 1).all() and not fitted[:, :64, :3].any()
    small = images.fit(hd, (270, 1024))  # shrunk to 480 x 270, centred
    assert (small[:, 272:272 + 480] == 0.5).all() and not small[:, :272, :3].any()


def test_controls_adjust_within_bounds():
    c = app.Controls("bandpass", SHAPE)
    assert c.values["bandpass"] == {"inner": 0.02, "outer": 0.2, "falloff": 0.02}
    c.adjust(0, -10)  # left arrow: inner stops at 0
    c.adjust(1, 2)    # up arrow: outer + 2 steps
    c.adjust(2, 1)    # wheel: falloff x 1.2
    assert c.values["bandpass"] == pytest.approx({"inner": 0.0, "outer": 0.21, "falloff": 0.024})
    assert c.filter().kernel[0, 0] == 1.0 and not c.dirty
    c.choose("motion")
    c.drag(30.0, -30.0)  # right and up on screen
    assert c.values["motion"] == pytest.approx({"length": 30 * 2 ** 0.5, "angle": 45.0})
    c.choose("blur")
    c.drag(30.0, 0.0)  # drags only steer motion blur
    c.adjust(2, 1)
    assert c.values["blur"]["sigma"] == pytest.approx(4.6) and c.describe() == "blur  sigma 4.6"
    with pytest.raises(ValueError, match="blur has no parameter 'amount'"):
        c.set("amount", 2)


def test_inputs_from_an_image_path(tmp_path):
    from PIL import Image
    rgb = (np.arange(200 * 300 * 3) % 251).astype(np.uint8).reshape(200, 300, 3)
    Image.fromarray(rgb).save(tmp_path / "in.png")
    args = app.parser().parse_args(["--image", str(tmp_path / "in.png")])
    shape, pictures = app.inputs(args)
    assert shape == (200, 300)  # 2-3-5-smooth already: no padding
    assert [label for label, _ in pictures] == [str(tmp_path / "in.png"), "sample.png",
                                                "test pattern"]
    assert np.array_equal(pictures[0][1][..., :3], rgb / np.float32(255))
    args = app.parser().parse_args(["--image", str(tmp_path / "in.png"), "--size", "512x256"])
    shape, pictures = app.inputs(args)
    assert shape == (256, 512) and all(p.shape == (256, 512, 4) for _, p in pictures)
    assert np.array_equal(pictures[0][1][28:228, 106:406, :3], rgb / np.float32(255))


def test_bench_runs_and_checks_against_numpy(tmp_path):
    from demos.filter.bench import run_bench
    assert run_bench([(64, 96)], 3, str(tmp_path / "b.json")) == 0
    import json
    row, = json.loads((tmp_path / "b.json").read_text())["rows"]
    assert (row["width"], row["height"]) == (96, 64)
    assert row["max_abs_err"] < 1e-4 and row["gl_loop_wall_ms"] > 0
    assert run_bench([(64, 96)], 3, str(tmp_path / "h.json"), half=True) == 0
    result = json.loads((tmp_path / "h.json").read_text())
    row, = result["rows"]
    assert result["storage"].startswith("rgba16f")
    # float16 output: more than float32's error, within a float16 unit, SNR >= 50 dB
    assert 1e-5 < row["max_abs_err"] < 2e-3 and row["snr_db"] >= 50


def _run_demo(args, tmp_path, prefix=()):
    path = os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])
    return subprocess.run([*prefix, sys.executable, "-m", "demos.filter", *args], cwd=tmp_path,
                          env=dict(os.environ, PYTHONPATH=path), capture_output=True, text=True,
                          timeout=300)


def _png(path):
    from PIL import Image
    with Image.open(path) as im:
        return np.asarray(im.convert("RGB"), np.float64)


def test_headless_screenshot(tmp_path):
    """Band-pass against no filter on the same picture: the left halves (below the caption)
    differ. With --half the band-pass frame looks like the full-precision one."""
    shots = {}
    for name, extra in (("bandpass", []), ("none", []), ("half", ["--half"])):
        r = _run_demo(["--headless", "--frames", "2", "--size", "128", "--window", "640x320",
                       "--filter", "none" if name == "none" else "bandpass", "--paused",
                       "--screenshot", f"{name}.png", *extra], tmp_path)
        assert r.returncode == 0, r.stderr
        assert ("rgba16f storage" in r.stdout) == (name == "half")
        shots[name] = _png(tmp_path / f"{name}.png")
    band, none, half = shots["bandpass"], shots["none"], shots["half"]
    assert band.shape == half.shape == (320, 640, 3)
    for shot in (band, half):  # picture, spectrum: not flat
        assert shot[:, :320].std() > 20 and shot[:, 320:].std() > 20
    assert np.abs(band[110:310, 10:310] - none[110:310, 10:310]).mean() > 5
    # below the caption, both views: within a grey level or so of full precision
    assert np.abs(half[110:310] - band[110:310]).mean() < 0.5


def test_window_under_xvfb(tmp_path):
    if shutil.which("xvfb-run") is None:
        pytest.skip("xvfb-run is not installed (tools/setup.sh installs xvfb): no display for "
                    "a window")
    r = _run_demo(["--frames", "4", "--size", "128", "--window", "640x320", "--filter", "bloom",
                   "--screenshot", "window.png"], tmp_path, prefix=("xvfb-run", "-a"))
    assert r.returncode == 0, r.stdout + r.stderr
    assert "4 frames" in r.stdout
    shot = _png(tmp_path / "window.png")
    assert shot.shape == (320, 640, 3) and shot[:, :320].std() > 20


def test_caption_is_drawn_only_when_its_text_changes(ctx):
    """The caption (Pillow text and a texture upload, more than the filter costs) is redrawn at
    most twice a second of the wall clock, and only when its text changed."""
    shape = (64, 96)
    demo = app.Demo(ctx, shape, [("test pattern", images.test_pattern(shape))],
                    app.Controls("blur", shape))
    fbo = ctx.simple_framebuffer((192, 64), components=4)
    drawn, text = [], ["a"]
    demo.caption_lines = lambda: list(text)
    set_caption = demo.renderer.set_caption
    demo.renderer.set_caption = lambda lines, font: drawn.append(lines) or set_caption(lines, font)
    for now in (0.0, 0.1, 0.2, 1.0, 2.0):  # the text stays: drawn once
        demo.frame(fbo, None, 1 / 60, now)
    text[0] = "b"
    demo.frame(fbo, None, 1 / 60, 2.2)  # changed, but within half a second of the last look
    assert drawn == [["a"]]
    demo.frame(fbo, None, 1 / 60, 2.6)
    assert drawn == [["a"], ["b"]]
    demo.renderer.release()
