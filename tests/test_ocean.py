"""The Tessendorf ocean demo (demos/ocean): physics against exact math, the GPU path against the
numpy reference of the same formulas, the rendered image, and the window under Xvfb.

Runs on llvmpipe through EGL like the rest of the GL tests; the screenshot and window tests are
subprocesses so they exercise `python -m demos.ocean` exactly as a user would.
"""
import math
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from demos.ocean import physics
from demos.ocean.physics import Ocean, OceanParams
from conftest import snr_db

ROOT = Path(__file__).resolve().parents[1]
EPS32 = float(np.finfo(np.float32).eps)


def contract_l2(n):
    """The 2D accuracy contract for the inverse FFT: rel L2 <= 2 eps sqrt(log2 N)."""
    return 2.0 * EPS32 * math.sqrt(math.log2(n))


# ---- physics (numpy, no GPU) ----

def test_fields_are_real():
    ocean = Ocean(OceanParams(size=64, patch_sizes=(300.0, 40.0)))
    for c in ocean.cascades:
        for name, f in physics.fields(c, 7.3, ocean.choppiness, keep_imag=True).items():
            assert np.abs(f.imag).max() < 1e-5 * np.abs(f.real).max(), name


def test_minus_index_is_negated_wave_vector():
    kx, kz = physics.wave_vectors(8, 10.0)
    # Away from Nyquist, the element at -k holds -k.
    mkx, mkz = physics.minus_index(kx), physics.minus_index(kz)
    inner = np.ones((8, 8), bool)
    inner[4, :] = inner[:, 4] = False
    assert np.allclose(mkx[inner], -kx[inner]) and np.allclose(mkz[inner], -kz[inner])


def test_spreading_is_normalised():
    theta = np.linspace(-np.pi, np.pi, 20001)
    wp = 1.0
    for omega in (0.5, 1.0, 2.0, 5.0):
        for swell in (0.0, 0.5, 1.0):
            d = physics.hasselmann_spreading(np.full_like(theta, omega), theta, wp, 10.0, swell)
            assert abs(np.trapezoid(d, theta) - 1.0) < 1e-6


def test_jonswap_peak_uses_the_erratum():
    _, wp = physics.jonswap_peak(10.0, 100e3)
    assert wp == pytest.approx(22.0 * (9.81 ** 2 / (10.0 * 100e3)) ** (1 / 3))
    w = np.linspace(0.3, 3.0, 20001)
    s = physics.jonswap(w, 10.0, 100e3)
    assert w[np.argmax(s)] == pytest.approx(wp, rel=2e-3)


@pytest.mark.parametrize("spectrum", ["jonswap", "phillips"])
def test_parseval_variance_matches_spectrum_integral(spectrum):
    # A patch that resolves the peak (about 15 grid steps to k_p) and two cascades, so the band
    # split is covered too.
    params = OceanParams(spectrum=spectrum, size=256, patch_sizes=(1600.0, 150.0), wind_speed=10.0,
                         fetch=200e3, seed=3)
    ocean = Ocean(params)
    top = ocean.cascades[-1]
    k_max = np.pi * top.size / top.patch
    integral = physics.omnidirectional_variance(params, 0.0, k_max)
    # The grid's expected variance (sum of S dk^2 over both cascades) is the spectrum's integral.
    assert ocean.expected_variance() == pytest.approx(integral, rel=0.02)
    # Discrete Parseval on the actual field, and Hs from the field against 4 sqrt(m0) of the
    # spectrum: a single random sea differs from the ensemble, so that one is looser.
    t = 4.2
    total = 0.0
    for c in ocean.cascades:
        h = physics.spectra(c, t, 1.0)["h"]
        field = np.fft.ifft2(h, norm="forward").real
        assert field.mean() == pytest.approx(0.0, abs=1e-12)
        assert np.mean(field ** 2) == pytest.approx(np.sum(np.abs(h) ** 2), rel=1e-9)
        total += np.sum(np.abs(h) ** 2)
    assert 4 * math.sqrt(total) == pytest.approx(4 * math.sqrt(integral), rel=0.15)


def test_parseval_with_deterministic_amplitudes():
    """With |xi| fixed to its mean square, one field's variance is the spectrum's integral."""
    params = OceanParams(size=256, patch_sizes=(1600.0,), wind_speed=10.0, fetch=200e3, seed=5)
    c = physics.make_cascade(params, 0, np.random.default_rng(5))
    phase = np.exp(2j * np.pi * np.random.default_rng(6).random(c.h0.shape))
    c.h0 = np.where(c.spectrum > 0, phase * np.sqrt(c.spectrum / 2.0), 0.0)
    c.h0_minus = np.conj(physics.minus_index(c.h0))
    integral = physics.omnidirectional_variance(params, 0.0, np.pi * c.size / c.patch)
    for t in (0.0, 13.0):
        field = physics.fields(c, t, 1.0)["h"]
        assert np.var(field) == pytest.approx(integral, rel=0.02)


def test_animation_repeats_at_repeat_time():
    params = OceanParams(size=64, patch_sizes=(200.0, 20.0), repeat_time=25.0)
    ocean = Ocean(params)
    w0 = 2 * np.pi / params.repeat_time
    for c in ocean.cascades:
        m = c.omega / w0
        assert np.allclose(m, np.round(m), atol=1e-9)
        a = physics.fields(c, 3.0, 1.0)
        b = physics.fields(c, 3.0 + params.repeat_time, 1.0)
        mid = physics.fields(c, 3.0 + params.repeat_time / 2, 1.0)
        for name in physics.FIELD_NAMES:
            scale = np.abs(a[name]).max()
            assert np.abs(a[name] - b[name]).max() < 1e-9 * scale, name
        assert np.abs(a["h"] - mid["h"]).max() > 0.1 * np.abs(a["h"]).max()
    # Without a repeat time the sea does not loop at that period.
    free = Ocean(dataclasses_replace(params, repeat_time=0.0)).cascades[0]
    a, b = physics.fields(free, 3.0, 1.0)["h"], physics.fields(free, 28.0, 1.0)["h"]
    assert np.abs(a - b).max() > 0.1 * np.abs(a).max()


def dataclasses_replace(p, **kw):
    import dataclasses
    return dataclasses.replace(p, **kw)


def test_waves_travel_downwind():
    # A narrow swell-like sea moving along +x: the height pattern shifts towards +x over time.
    params = OceanParams(size=128, patch_sizes=(800.0,), wind_direction=0.0, swell=1.0)
    c = Ocean(params).cascades[0]
    a, b = physics.fields(c, 0.0, 1.0)["h"], physics.fields(c, 1.0, 1.0)["h"]
    # Phase velocity at the peak is ~g/w_p; cross-correlate along x to find the shift.
    corr = np.fft.ifft2(np.fft.fft2(b) * np.conj(np.fft.fft2(a))).real
    j, i = np.unravel_index(np.argmax(corr), corr.shape)
    shift = (i if i < 64 else i - 128) * 800.0 / 128
    assert shift > 0


def test_fields_match_direct_sum_and_finite_differences():
    """FFT fields at grid points equal the direct sum over every wave, and the slope and Jacobian
    fields equal central differences (step 1 mm) of the directly summed height and displacement."""
    params = OceanParams(size=32, patch_sizes=(100.0,), choppiness=1.3, wind_speed=6.0)
    ocean = Ocean(params, max_components=10 ** 9, energy_fraction=1.0)
    c = ocean.cascades[0]
    t = 2.0
    f = physics.fields(c, t, params.choppiness)
    rng = np.random.default_rng(2)
    j, i = rng.integers(0, 32, (2, 30))
    x, z = i * 100.0 / 32, j * 100.0 / 32
    names = ("dx", "h", "dz", "sx", "sz", "dxx", "dzz", "dxz")
    direct = dict(zip(names, ocean.surface_at(x, z, t)))
    for name in physics.FIELD_NAMES:
        atol = 1e-9 * np.abs(f[name]).max()
        assert np.allclose(direct[name], f[name][j, i], rtol=0, atol=atol), name
    e = 1e-3
    at = lambda dx, dz: dict(zip(("dx", "h", "dz"), ocean.surface_at(x + dx, z + dz, t)[:3]))
    xp, xm, zp, zm = at(e, 0), at(-e, 0), at(0, e), at(0, -e)
    fd = {"sx": (xp["h"] - xm["h"]) / (2 * e), "sz": (zp["h"] - zm["h"]) / (2 * e),
          "dxx": (xp["dx"] - xm["dx"]) / (2 * e), "dzz": (zp["dz"] - zm["dz"]) / (2 * e),
          "dxz": (zp["dx"] - zm["dx"]) / (2 * e)}
    for name, value in fd.items():
        assert np.allclose(value, f[name][j, i], rtol=0, atol=1e-5 * np.abs(f[name]).max()), name
    # dDz/dx equals dDx/dz (D is a gradient field), which is why one Jacobian term serves both.
    dzx = (xp["dz"] - xm["dz"]) / (2 * e)
    assert np.allclose(dzx, fd["dxz"], atol=1e-5 * np.abs(f["dxz"]).max())


def test_height_at_inverts_displacement():
    params = OceanParams(size=64, patch_sizes=(250.0, 30.0), choppiness=1.2)
    exact = Ocean(params, max_components=10 ** 9, energy_fraction=1.0)
    capped = Ocean(params)
    hs = exact.significant_wave_height()
    t = 5.0
    rng = np.random.default_rng(0)
    x0, z0 = rng.uniform(0, 250, 20), rng.uniform(0, 250, 20)
    dx, h, dz, *_ = exact.surface_at(x0, z0, t)
    for ocean in (exact, capped):
        got, normal = ocean.height_at(x0 + dx, z0 + dz, t)
        assert np.abs(got - h).max() < 0.01 * hs
        assert np.allclose(np.linalg.norm(normal, axis=-1), 1.0) and (normal[:, 1] > 0.5).all()


# ---- the GPU path (ModernGL on whatever driver EGL gives: llvmpipe in CI) ----

@pytest.fixture(scope="module")
def ctx():
    moderngl = pytest.importorskip("moderngl")
    c = moderngl.create_standalone_context(require=430, backend="egl")
    assert c.error == "GL_NO_ERROR"
    yield c
    assert c.error == "GL_NO_ERROR"
    c.release()


def _gpu(ctx, params):
    from demos.ocean.gpu import OceanGPU
    return OceanGPU(ctx, Ocean(params))


def _unpack_complex(raw):
    """(N, N, 4) float32 texture -> (N, N, 2) complex128 fields."""
    raw = raw.astype(np.float64)
    return raw[..., 0::2] + 1j * raw[..., 1::2]


def test_gpu_spectra_match_numpy(ctx):
    params = OceanParams(size=64, patch_sizes=(300.0, 40.0), choppiness=1.3)
    sim = _gpu(ctx, params)
    t = 1.7
    sim.build_spectra(t)
    for i, c in enumerate(sim.ocean.cascades):
        ref = physics.packed_spectra(c, t, params.choppiness)
        for tex, r in zip(sim.fields[i], ref):
            got = _unpack_complex(sim.read_texture(tex))
            # float32 inputs, sin/cos of w t: a few ulps of the largest value.
            assert np.linalg.norm(got - r) <= 1e-5 * np.linalg.norm(r)
    sim.release()


def _spectra_then_fft(sim, t):
    """Build the spectra at time t, read them back, then run the frame's inverse FFT in place:
    the spectra as the FFT saw them, per cascade and field texture."""
    sim.build_spectra(t)
    spectra = [[_unpack_complex(sim.read_texture(tex)) for tex in pair]
               for pair in sim.fields[:sim.cascades]]
    sim.inverse_fft()
    return spectra


@pytest.mark.parametrize("size", [64, 256])
def test_gpu_fields_match_reference(ctx, size):
    """The inverse FFT of the GPU's spectra within the contract; fields real; the same formulas."""
    params = OceanParams(size=size, patch_sizes=(300.0, 40.0), choppiness=1.3)
    sim = _gpu(ctx, params)
    t = 2.5
    spectra = _spectra_then_fft(sim, t)
    for i, c in enumerate(sim.ocean.cascades):
        for j, tex in enumerate(sim.fields[i]):
            got = _unpack_complex(sim.read_texture(tex))
            # Reference: the float64 inverse FFT of the same float32 spectra (the contract's terms).
            ref = np.fft.ifft2(spectra[i][j], axes=(0, 1), norm="forward")
            for f in range(2):
                err = np.linalg.norm(got[..., f] - ref[..., f]) / np.linalg.norm(ref[..., f])
                assert err <= contract_l2(size), (i, j, f, err)
        # End to end against the numpy reference of the formulas in float64 (spectra built in
        # float64, inverse FFT in float64): the float32 spectra (sin and cos of w t in float32)
        # add about as much error again as the FFT, so twice the contract.
        packed = physics.packed_spectra(c, t, params.choppiness)
        ref_tex = np.fft.ifft2(packed, axes=(1, 2), norm="forward")
        for j, tex in enumerate(sim.fields[i]):
            got = _unpack_complex(sim.read_texture(tex))
            for f in range(2):
                r = ref_tex[j][..., f]
                err = np.linalg.norm(got[..., f] - r) / np.linalg.norm(r)
                assert err <= 2 * contract_l2(size), ("end to end", i, j, f, err)
        # Each real field alone (displacement, slopes, Jacobian terms): a field that shares its
        # transform with a larger one (Dxz with Dz) carries that one's absolute error, hence 2e-6.
        gpu = sim.read_fields(i)
        ref = physics.fields(c, t, params.choppiness, keep_imag=True)
        for name in physics.FIELD_NAMES:
            assert np.abs(ref[name].imag).max() < 1e-5 * np.abs(ref[name].real).max()
            err = np.linalg.norm(gpu[name] - ref[name].real) / np.linalg.norm(ref[name].real)
            assert err < 2e-6, (name, err)
    sim.release()


@pytest.mark.parametrize("size", [64, 256])
def test_gpu_fields_half_storage(ctx, size):
    """--half: rgba16f spectra and fields around a float32 FFT. Each real field (Dx, h, Dz, Dxz,
    slopes, Jacobian terms) against the float64 inverse FFT of the same float16 spectra: SNR >= 50
    dB (llvmpipe: 67 dB); end to end against the float64 formulas too (llvmpipe: 55 dB, the
    spectra's own float16 rounding included)."""
    params = OceanParams(size=size, patch_sizes=(300.0, 40.0), choppiness=1.3)
    from demos.ocean.gpu import OceanGPU
    sim = OceanGPU(ctx, Ocean(params), half=True)
    assert sim.field_format == "rgba16f"
    assert all(t.dtype == "f2" and t.components == 4 for t in sim.all_field_textures())
    assert "#define FIELD_FORMAT rgba16f\n" in sim.spectrum_source  # its image2D declarations
    t = 2.5
    spectra = _spectra_then_fft(sim, t)
    for i, c in enumerate(sim.ocean.cascades):
        exact = np.fft.ifft2(physics.packed_spectra(c, t, params.choppiness), axes=(1, 2),
                             norm="forward")
        for j, tex in enumerate(sim.fields[i]):
            got = _unpack_complex(sim.read_texture(tex))
            ref = np.fft.ifft2(spectra[i][j], axes=(0, 1), norm="forward")
            assert snr_db(spectra[i][j], ref) < 10  # what the check sees if the FFT is skipped
            for f in range(2):
                for part in (np.real, np.imag):  # the two real fields of a complex one
                    g = part(got[..., f])
                    assert snr_db(g, part(ref[..., f])) >= 50, (i, j, f)
                    assert snr_db(g, part(exact[j][..., f])) >= 50, ("end to end", i, j, f)
    sim.release()


def test_gpu_height_field_is_real(ctx):
    """The model's h(k, t) alone (no packing) through the GPU inverse FFT gives a real field."""
    params = OceanParams(size=256, patch_sizes=(300.0,))
    sim = _gpu(ctx, params)
    h_spec = physics.spectra(sim.ocean.cascades[0], 3.0, 1.0)["h"]
    data = np.stack([h_spec.real, h_spec.imag], -1).astype(np.float32)
    tex = ctx.texture((256, 256), 2, data.tobytes(), dtype="f4")
    sim.fft.inverse(tex, tex)
    out = np.frombuffer(tex.read(), np.float32).reshape(256, 256, 2)
    assert np.abs(out[..., 1]).max() < 1e-5 * np.abs(out[..., 0]).max()
    assert np.abs(out[..., 0]).max() > 0.1
    tex.release()
    sim.release()


def test_gpu_repeats_at_repeat_time(ctx):
    """The GPU sees the raw times: the field at t + T is the field at t (frequencies quantised
    to multiples of 2 pi / T), up to float32 phases, and differs half a period later."""
    from demos.ocean.gpu import OceanGPU
    fields = {}
    for repeat in (20.0, 0.0):
        sim = OceanGPU(ctx, Ocean(OceanParams(size=64, patch_sizes=(200.0,), repeat_time=repeat)))
        for t in (1.0, 11.0, 21.0, 41.0):
            sim.build_spectra(t)
            sim.inverse_fft()
            fields[repeat, t] = sim.read_fields(0)["h"]
        sim.release()
    h = fields[20.0, 1.0]
    def apart(a, b):
        return np.max(np.abs(a - b)) / np.max(np.abs(h))
    assert apart(fields[20.0, 21.0], h) < 1e-4 and apart(fields[20.0, 41.0], h) < 1e-4
    assert apart(fields[20.0, 11.0], h) > 0.1  # half a period on: another sea
    assert apart(fields[0.0, 21.0], fields[0.0, 1.0]) > 0.1  # no repeat time: no loop


def test_height_at_matches_rendered_field(ctx):
    """The host query at a displaced grid point returns the GPU field's height there (< 1% Hs)."""
    params = OceanParams(size=256, patch_sizes=(400.0, 71.0), choppiness=1.0)
    from demos.ocean.gpu import OceanGPU
    ocean = Ocean(params)
    sim = OceanGPU(ctx, ocean)
    t = 6.0
    sim.build_spectra(t)
    sim.inverse_fft()
    fields = [sim.read_fields(i) for i in range(2)]
    hs = ocean.significant_wave_height()
    # Grid points shared by both cascades: world positions that are texels of each (71/400 is not a
    # ratio of integers, so sum cascade 1 by its own texel at the nearest grid point via bilinear
    # evaluation of its periodic field).
    rng = np.random.default_rng(1)
    worst = 0.0
    for _ in range(40):
        i, j = rng.integers(0, 256, 2)
        x0, z0 = i * 400.0 / 256, j * 400.0 / 256
        total = {k: fields[0][k][j, i] for k in ("dx", "h", "dz")}
        for k in total:
            total[k] += _bilinear(fields[1][k], x0 / 71.0 * 256, z0 / 71.0 * 256)
        got, _ = ocean.height_at(np.array(x0 + total["dx"]), np.array(z0 + total["dz"]), t)
        worst = max(worst, abs(float(got) - total["h"]))
    assert worst < 0.01 * hs, (worst, hs)
    sim.release()


def _bilinear(a, x, y):
    n = a.shape[0]
    i0, j0 = int(np.floor(x)), int(np.floor(y))
    fx, fy = x - i0, y - j0
    g = lambda j, i: a[j % n, i % n]
    return ((1 - fx) * (1 - fy) * g(j0, i0) + fx * (1 - fy) * g(j0, i0 + 1)
            + (1 - fx) * fy * g(j0 + 1, i0) + fx * fy * g(j0 + 1, i0 + 1))


# ---- the demo as a user runs it ----

def _run_demo(args, prefix=()):
    """`python -m demos.ocean ARGS` from the repository root (after `prefix`, e.g. xvfb-run)."""
    env = dict(os.environ)
    paths = [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p]
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT)] + paths)
    return subprocess.run([*prefix, sys.executable, "-m", "demos.ocean", *args], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=900)


def _screenshot(tmp_path, frames, *extra):
    """`--headless` at 256 x 256, one 256^2 cascade: (stdout, the PNG as (256, 256, 3) floats)."""
    out = tmp_path / "ocean.png"
    r = _run_demo(["--headless", "--frames", str(frames), "--screenshot", str(out), "--size",
                   "256", "--fft-size", "256", "--cascades", "1", *extra])
    assert r.returncode == 0, r.stdout + r.stderr
    from PIL import Image
    img = np.asarray(Image.open(out).convert("RGB"), np.float64)
    assert img.shape == (256, 256, 3)
    return r.stdout, img


def _assert_water_under_sky(img):
    assert img.std() > 5.0                                    # not uniform
    top, bottom = img[:20], img[-40:]
    # Sky on top: bright and blue-ish; water at the bottom: darker than the sky, blue above red,
    # with structure (waves) in it.
    assert top.mean() > 120 and top[..., 2].mean() > top[..., 0].mean()
    assert bottom.mean() < top.mean() - 30
    assert bottom[..., 2].mean() > bottom[..., 0].mean()
    assert bottom.std(axis=(0, 1)).mean() > 2.0


def test_headless_screenshot_shows_water_under_sky(tmp_path):
    _assert_water_under_sky(_screenshot(tmp_path, 30)[1])


def test_headless_half_frame_looks_like_float32(tmp_path):
    """--half renders the same sea: water under a sky, within a grey level or so of the float32
    frame on average (llvmpipe: 0.1)."""
    out, half = _screenshot(tmp_path, 3, "--half")
    assert "rgba16f fields" in out
    _assert_water_under_sky(half)
    assert np.abs(half - _screenshot(tmp_path, 3)[1]).mean() < 1.0


def test_window_runs_under_xvfb():
    prefix = ()
    if not os.environ.get("DISPLAY"):
        if not shutil.which("xvfb-run"):
            pytest.skip("no DISPLAY and no xvfb-run to make one (tools/setup.sh installs xvfb)")
        prefix = ("xvfb-run", "-a", "-s", "-screen 0 640x480x24")
    r = _run_demo(["--frames", "5", "--size", "320x180", "--fft-size", "256", "--cascades", "2"],
                  prefix)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "window closed after 5 frames" in r.stdout


@pytest.mark.parametrize("half", [False, True])
def test_gpu_fields_batched_equal_per_texture(ctx, half):
    """All cascades' fields in one call of one set of passes (a TextureArray, the layer a grid
    dimension) give the fields that one call per texture gave before, within float32 rounding
    (same seed and time): the picture does not change."""
    from demos.ocean.gpu import OceanGPU
    params = OceanParams(size=128, patch_sizes=(300.0, 90.0, 40.0, 11.0), choppiness=1.3)
    sim = OceanGPU(ctx, Ocean(params), half=half)
    layers = sim.all_field_textures()
    assert len(layers) == 8 and sim.array.layers == 8
    sim.build_spectra(2.5)
    spectra = [sim.read_texture(t) for t in layers]
    sim.inverse_fft()
    assert sim.fft.recordings()[-1].dispatch_count == 2  # 8 textures, 16 fields: two passes in all
    batched = np.stack([sim.read_texture(t).astype(np.float64) for t in layers])
    dtype = "f2" if half else "f4"
    alone = []
    for spectrum in spectra:  # the earlier way: each texture its own call and dispatches
        tex = ctx.texture((128, 128), 4, spectrum.astype(np.float16 if half else np.float32)
                          .tobytes(), dtype=dtype)
        sim.fft.inverse(tex, tex)
        alone.append(sim.read_texture(tex).astype(np.float64))
        tex.release()
    a, b = batched, np.stack(alone)
    scale = np.abs(b).max(axis=(1, 2, 3), keepdims=True)
    eps = 2.0 ** -10 if half else 2.0 ** -23  # one rounding of the stored values
    assert np.all(np.abs(a - b) <= 2 * eps * scale), np.abs(a - b).max()
    assert scale.min() > 0 and not np.array_equal(a[0], a[1])  # fields, all different
    sim.release()


def test_bench_times_every_stage_of_a_frame(ctx):
    """`--bench`'s per-stage times: the six stages of a frame, each timed, in frame order."""
    from demos.ocean.app import OceanApp, offscreen
    from demos.ocean.bench import StageTimes
    app = OceanApp(ctx, OceanParams(size=64, patch_sizes=(300.0, 40.0)), width=320)
    offscreen(ctx, (320, 180)).use()
    app.sim.stage = stages = StageTimes(ctx)
    for _ in range(2):
        app.frame(1 / 60, 16 / 9)
    assert list(stages.ms) == ["spectrum", "FFT", "foam", "sky", "ocean", "buoy"]
    assert all(v > 0 for v in stages.ms.values()), stages.ms
    app.release()
