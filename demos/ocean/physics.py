"""Tessendorf ocean physics in numpy: spectra, h0(k), the per-frame spectra and their fields.

Conventions (the GPU shaders follow the same ones):
- World axes: x and z horizontal, y up. A cascade is an N x N patch of side L metres; array element
  [j, i] (texel (i, j)) is the point (x, z) = (i L / N, j L / N) and, in the spectrum, the wave
  vector (kx, kz) = 2 pi / L * (fftfreq(N) * N)[i], [j]), unshifted (numpy's FFT order).
- A field is f(x) = sum_k F(k) exp(i k.x): numpy's ifft2 with norm="forward" (unscaled).
- h(k, t) = h0(k) e^{i w t} + conj(h0(-k)) e^{-i w t} (Tessendorf 2001). Its first term moves
  along -k, so h0(k) takes its energy from the directional spectrum at -k: the waves then travel
  towards `wind_direction`.
- Displacement D = i k/|k| h * choppiness. Tessendorf writes -i k/|k| h with a negative lambda; the
  + sign is the one that sharpens crests (Gerstner's x - A sin) for a positive choppiness. A surface
  point is x + D(x), with height h(x).
- Slopes dh/dx = i kx h, dh/dz = i kz h; Jacobian terms dDx/dx = -kx^2/k h c, dDz/dz = -kz^2/k h c,
  dDx/dz = -kx kz/k h c (c = choppiness); J = (1 + Dxx)(1 + Dzz) - Dxz^2 (< 0 where the surface
  folds).
- Eight real fields are packed two per complex field, A + iB with spectrum A(k) + i B(k):
  texture 0 = (Dx + i h, Dz + i Dxz), texture 1 = (sx + i sz, Dxx + i Dzz), so after the inverse
  FFT texture 0 holds (Dx, h, Dz, Dxz) (the vertex displacement in .xyz) and texture 1 holds
  (sx, sz, Dxx, Dzz).
- The spectrum S(kx, kz) is a density over the wave-vector plane whose integral is the height
  variance m0; Hs = 4 sqrt(m0). h0 = (xi_r + i xi_i) / sqrt(2) * sqrt(S dk^2 / 2): each wave is
  counted at k and -k, so E|h(k, t)|^2 summed over the grid is sum S dk^2.
"""
from __future__ import annotations

import dataclasses
import math

import numpy as np

G = 9.81
FIELD_NAMES = ("h", "dx", "dz", "sx", "sz", "dxx", "dzz", "dxz")


@dataclasses.dataclass(frozen=True)
class OceanParams:
    """Everything that decides the sea state; a new value means new h0 textures."""

    spectrum: str = "jonswap"          # "jonswap" (with TMA depth attenuation) or "phillips"
    wind_speed: float = 10.0           # U, m/s at 10 m
    wind_direction: float = 30.0       # degrees from +x towards +z: where the waves travel
    fetch: float = 120e3               # metres of open water upwind (JONSWAP)
    depth: float = 200.0               # metres (dispersion and TMA)
    swell: float = 0.25                # Horvath's swell 0..1: narrows long waves' spreading
    choppiness: float = 1.3            # horizontal displacement scale
    size: int = 256                    # N: FFT size of every cascade
    patch_sizes: tuple = (400.0, 71.0, 13.0, 2.7)  # L per cascade, metres, largest first
    seed: int = 1
    repeat_time: float = 0.0           # T > 0 quantises w to multiples of 2 pi / T (exact loop)
    gamma: float = 3.3                 # JONSWAP peak enhancement

    def __post_init__(self):
        if self.spectrum not in ("jonswap", "phillips"):
            raise ValueError(f"spectrum must be 'jonswap' or 'phillips', got {self.spectrum!r}")
        n = int(self.size)
        if n < 4 or n & (n - 1):
            raise ValueError(f"size must be a power of two >= 4, got {self.size}")
        if not 1 <= len(self.patch_sizes) <= 4:
            raise ValueError("between 1 and 4 cascades (patch_sizes) are supported")
        if any(b >= a for a, b in zip(self.patch_sizes, self.patch_sizes[1:])):
            raise ValueError("patch_sizes must be strictly decreasing (largest cascade first)")
        for name in ("wind_speed", "fetch", "depth"):
            if getattr(self, name) <= 0:
                raise ValueError(f"{name} must be positive")


# ---- dispersion and spectra (all float64, vectorised) ----

def dispersion(k, depth):
    """w(k) = sqrt(g k tanh(k d)); tanh saturates, so deep water costs nothing extra."""
    k = np.asarray(k, np.float64)
    return np.sqrt(G * k * np.tanh(np.minimum(k * depth, 20.0)))


def dispersion_derivative(k, depth):
    """dw/dk, for the change of variables from S(w, theta) to S(kx, kz)."""
    k = np.asarray(k, np.float64)
    kd = np.minimum(k * depth, 20.0)
    th = np.tanh(kd)
    w = np.sqrt(G * k * th)
    with np.errstate(divide="ignore", invalid="ignore"):
        d = G * (th + kd * (1.0 - th * th)) / (2.0 * w)
    return np.where(k > 0, d, 0.0)


def jonswap_peak(wind_speed, fetch):
    """(alpha, w_p) of Horvath 2015 eq. 28 with its erratum: w_p = 22 (g^2 / (U F))^(1/3)."""
    alpha = 0.076 * (wind_speed ** 2 / (fetch * G)) ** 0.22
    omega_p = 22.0 * (G * G / (wind_speed * fetch)) ** (1.0 / 3.0)
    return alpha, omega_p


def jonswap(omega, wind_speed, fetch, gamma=3.3):
    """JONSWAP S(w) in m^2 s (frequency density of the height variance)."""
    omega = np.asarray(omega, np.float64)
    alpha, wp = jonswap_peak(wind_speed, fetch)
    with np.errstate(divide="ignore", over="ignore", invalid="ignore"):
        sigma = np.where(omega <= wp, 0.07, 0.09)
        r = np.exp(-((omega - wp) ** 2) / (2.0 * sigma ** 2 * wp ** 2))
        s = alpha * G * G / omega ** 5 * np.exp(-1.25 * (wp / omega) ** 4) * gamma ** r
    return np.where(omega > 0, s, 0.0)


def tma_attenuation(omega, depth):
    """Kitaigorodskii depth factor of the TMA spectrum (Horvath 2015 eq. 29-30)."""
    wh = np.asarray(omega, np.float64) * math.sqrt(depth / G)
    return np.where(wh <= 1.0, 0.5 * wh * wh, np.where(wh < 2.0, 1.0 - 0.5 * (2.0 - wh) ** 2, 1.0))


def _lgamma(x):
    try:
        from scipy.special import gammaln
    except ImportError:  # numpy alone: correct, a few seconds slower at 4 x 1024^2
        return np.vectorize(math.lgamma, otypes=[np.float64])(x)
    return gammaln(x)


def hasselmann_spreading(omega, theta, omega_p, wind_speed, swell=0.0):
    """D(w, theta), normalised over theta in (-pi, pi]: Q(s) |cos(theta / 2)|^(2 s).

    s from Hasselmann et al. 1980 (as in Horvath 2015), plus Horvath's swell term
    16 tanh(w_p / w) swell^2, which narrows the long waves into a swell.
    """
    omega = np.asarray(omega, np.float64)
    ratio = np.where(omega > 0, omega / omega_p, 1.0)
    expo = -2.33 - 1.45 * (wind_speed * omega_p / G - 1.17)
    s = np.where(ratio <= 1.0, 6.97 * ratio ** 4.06, 9.77 * ratio ** expo)
    s = s + 16.0 * np.tanh(1.0 / ratio) * swell * swell
    s = np.maximum(s, 1e-3)
    # Q(s) = Gamma(s + 1) / (2 sqrt(pi) Gamma(s + 1/2)): the integral of cos^(2s)(theta/2) is 1/Q.
    log_q = _lgamma(s + 1.0) - _lgamma(s + 0.5) - math.log(2.0 * math.sqrt(math.pi))
    return np.exp(log_q) * np.abs(np.cos(0.5 * theta)) ** (2.0 * s)


def omnidirectional(omega, params: OceanParams):
    """S(w) of the JONSWAP family with TMA depth attenuation."""
    s = jonswap(omega, params.wind_speed, params.fetch, params.gamma)
    return s * tma_attenuation(omega, params.depth)


def phillips(kx, kz, params: OceanParams):
    """Tessendorf's Phillips spectrum as a k-plane density, scaled to the PM tail (alpha = 0.0081).

    alpha / (2 k^4) exp(-1/(k L)^2) |k.w|^2 / pi with L = U^2/g: its tail is the deep-water
    alpha g^2 w^-5 and its integral alpha U^4 / (4 g^2) (Hs = 0.18 U^2/g, near Pierson-Moskowitz).
    """
    k = np.hypot(kx, kz)
    a = math.radians(params.wind_direction)
    big_l = params.wind_speed ** 2 / G
    with np.errstate(divide="ignore", invalid="ignore"):
        cos_t = (kx * math.cos(a) + kz * math.sin(a)) / k
        s = 0.0081 / (2.0 * k ** 4) * np.exp(-1.0 / (k * big_l) ** 2) * cos_t ** 2 / math.pi
    return np.where(k > 0, s, 0.0)


def directional_spectrum(kx, kz, params: OceanParams):
    """S(kx, kz): a density over the wave-vector plane whose integral is the height variance."""
    kx = np.asarray(kx, np.float64)
    kz = np.asarray(kz, np.float64)
    if params.spectrum == "phillips":
        return phillips(kx, kz, params)
    k = np.hypot(kx, kz)
    omega = dispersion(k, params.depth)
    _, wp = jonswap_peak(params.wind_speed, params.fetch)
    theta = np.arctan2(kz, kx) - math.radians(params.wind_direction)
    spread = hasselmann_spreading(omega, theta, wp, params.wind_speed, params.swell)
    with np.errstate(divide="ignore", invalid="ignore"):
        s = omnidirectional(omega, params) * spread * dispersion_derivative(k, params.depth) / k
    return np.where(k > 0, s, 0.0)


def omnidirectional_variance(params: OceanParams, k_min=0.0, k_max=np.inf, samples=200000):
    """The integral of the spectrum over |k| in [k_min, k_max): the expected height variance."""
    if params.spectrum == "phillips":
        big_l = params.wind_speed ** 2 / G
        # integral of alpha/(2 k^3) exp(-1/(k L)^2) dk = alpha L^2/4 [exp(-1/(k L)^2)] over the band
        def f(k):
            if k == 0:
                return 0.0
            return 1.0 if not np.isfinite(k) else math.exp(-1.0 / (k * big_l) ** 2)
        return 0.0081 * big_l ** 2 / 4.0 * (f(k_max) - f(k_min))
    w_lo = float(dispersion(k_min, params.depth)) if k_min > 0 else 1e-4
    w_hi = float(dispersion(k_max, params.depth)) if np.isfinite(k_max) else 200.0
    # Log-spaced trapezoid: the peak and the w^-5 tail both resolve at 2e5 points.
    w = np.geomspace(max(w_lo, 1e-4), w_hi, samples)
    s = omnidirectional(w, params)
    return float(np.sum(0.5 * (s[1:] + s[:-1]) * np.diff(w)))


# ---- cascades ----

@dataclasses.dataclass
class Cascade:
    """One patch: its wave vectors, w(k) and h0 (float64), and the band of |k| it owns."""

    patch: float
    size: int
    k_min: float
    k_max: float
    kx: np.ndarray
    kz: np.ndarray
    omega: np.ndarray
    h0: np.ndarray          # h0(k)
    h0_minus: np.ndarray    # conj(h0(-k)), stored so the shader needs no second fetch
    spectrum: np.ndarray    # S(kx, kz) dk^2 inside the band (0 outside)

    @property
    def k(self):
        return np.hypot(self.kx, self.kz)


def cascade_bands(patch_sizes, size):
    """Each cascade owns the |k| between its neighbours, so no wave is counted twice.

    The boundary between cascades i and i+1 is 6 fundamentals of the smaller patch
    (2 pi 6 / L_{i+1}) or the larger patch's Nyquist (pi N / L_i) if that comes first; the last
    cascade keeps all of its grid up to Nyquist.
    """
    bands = []
    for i, patch in enumerate(patch_sizes):
        lo = 0.0 if i == 0 else bands[-1][1]
        hi = np.inf
        if i + 1 < len(patch_sizes):
            hi = min(2.0 * np.pi * 6.0 / patch_sizes[i + 1], np.pi * size / patch)
            if 2.0 * np.pi / patch_sizes[i + 1] >= hi:
                raise ValueError(f"patch {patch_sizes[i + 1]} m is too small after {patch} m at "
                                 f"N={size}: no wave between them would be on either grid")
        bands.append((lo, hi))
    return bands


def wave_vectors(size, patch):
    """(kx, kz) on the unshifted grid: kx varies along axis 1 (texel x), kz along axis 0."""
    f = np.fft.fftfreq(size, d=patch / size) * 2.0 * np.pi
    kz, kx = np.meshgrid(f, f, indexing="ij")
    return kx, kz


def minus_index(a):
    """a(-k) on the unshifted grid: index (N - j) mod N, (N - i) mod N."""
    return np.roll(a[::-1, ::-1], 1, axis=(0, 1))


def make_cascade(params: OceanParams, index: int, rng: np.random.Generator) -> Cascade:
    n = params.size
    patch = float(params.patch_sizes[index])
    k_min, k_max = cascade_bands(params.patch_sizes, n)[index]
    kx, kz = wave_vectors(n, patch)
    k = np.hypot(kx, kz)
    dk = 2.0 * np.pi / patch
    # Energy at -k (see the module docstring: e^{+iwt} moves h0(k) along -k).
    s = directional_spectrum(-kx, -kz, params) * dk * dk
    nyq = n // 2
    keep = (k >= k_min) & (k < k_max) & (k > 0)
    keep[nyq, :] = False   # the Nyquist row and column are their own -k: i k/|k| h there would not
    keep[:, nyq] = False   # be Hermitian, so they carry no wave and every field stays exactly real
    s = np.where(keep, s, 0.0)
    xi = rng.standard_normal((2, n, n))
    h0 = (xi[0] + 1j * xi[1]) / np.sqrt(2.0) * np.sqrt(s / 2.0)
    omega = dispersion(k, params.depth)
    if params.repeat_time > 0:
        w0 = 2.0 * np.pi / params.repeat_time
        omega = np.floor(omega / w0) * w0
    return Cascade(patch, n, k_min, k_max, kx, kz, omega, h0, np.conj(minus_index(h0)), s)


def spectra(c: Cascade, t: float, choppiness: float):
    """The eight complex spectra of one cascade at time t, as a dict of FIELD_NAMES."""
    phase = np.exp(1j * c.omega * t)
    h = c.h0 * phase + c.h0_minus * np.conj(phase)
    k = c.k
    with np.errstate(divide="ignore", invalid="ignore"):
        inv_k = np.where(k > 0, 1.0 / k, 0.0)
    kx, kz = c.kx, c.kz
    return {
        "h": h,
        "dx": 1j * kx * inv_k * h * choppiness,
        "dz": 1j * kz * inv_k * h * choppiness,
        "sx": 1j * kx * h,
        "sz": 1j * kz * h,
        "dxx": -kx * kx * inv_k * h * choppiness,
        "dzz": -kz * kz * inv_k * h * choppiness,
        "dxz": -kx * kz * inv_k * h * choppiness,
    }


def packed_spectra(c: Cascade, t: float, choppiness: float):
    """The two RGBA textures the GPU builds, as (2, N, N, 2) complex: [tex][j, i][field]."""
    s = spectra(c, t, choppiness)
    tex0 = np.stack([s["dx"] + 1j * s["h"], s["dz"] + 1j * s["dxz"]], axis=-1)
    tex1 = np.stack([s["sx"] + 1j * s["sz"], s["dxx"] + 1j * s["dzz"]], axis=-1)
    return np.stack([tex0, tex1])


def fields(c: Cascade, t: float, choppiness: float, keep_imag=False):
    """The eight real fields of one cascade (inverse FFTs of `spectra`), dict of (N, N) float64.

    keep_imag=True returns the complex inverse FFTs, to check that they are real.
    """
    out = {}
    for name, spec in spectra(c, t, choppiness).items():
        f = np.fft.ifft2(spec, norm="forward")
        out[name] = f if keep_imag else f.real
    return out


def unpack_textures(tex0, tex1):
    """Field dict from the two inverse-transformed RGBA textures of a cascade ((N, N, 4) each)."""
    return {"dx": tex0[..., 0], "h": tex0[..., 1], "dz": tex0[..., 2], "dxz": tex0[..., 3],
            "sx": tex1[..., 0], "sz": tex1[..., 1], "dxx": tex1[..., 2], "dzz": tex1[..., 3]}


def jacobian(f):
    return (1.0 + f["dxx"]) * (1.0 + f["dzz"]) - f["dxz"] ** 2


# ---- the ocean: cascades, statistics, height queries ----

class Ocean:
    """The cascades of one sea state, with numpy references and a host-side height query."""

    def __init__(self, params: OceanParams = OceanParams(), max_components=8192,
                 energy_fraction=0.99999):
        self.params = params
        rng = np.random.default_rng(params.seed)
        self.cascades = [make_cascade(params, i, rng) for i in range(len(params.patch_sizes))]
        self._variance = float(sum(c.spectrum.sum() for c in self.cascades))
        #: mean square slope per cascade, sum k^2 S dk^2: faded detail becomes roughness
        self.slope_variances = [float(np.sum(c.k ** 2 * c.spectrum)) for c in self.cascades]
        self._select_components(max_components, energy_fraction)

    @property
    def choppiness(self):
        return self.params.choppiness

    def expected_variance(self):
        """sum over every cascade of S dk^2: the ensemble variance of the height field."""
        return self._variance

    def significant_wave_height(self):
        """Hs = 4 sqrt(m0) of the spectrum the cascades hold."""
        return 4.0 * math.sqrt(self.expected_variance())

    def fields(self, t):
        return [fields(c, t, self.choppiness) for c in self.cascades]

    # Host height queries sum the strongest components directly: the FFT grid is not needed, and
    # only the components are read (never the GPU textures).
    def _select_components(self, max_components, energy_fraction):
        parts = []
        for c in self.cascades:
            n = c.size
            i = np.arange(n)
            signed = np.where(i < n // 2, i, i - n)
            sj, si = np.meshgrid(signed, signed, indexing="ij")
            half = (si > 0) | ((si == 0) & (sj > 0))   # one of each Hermitian pair (k, -k)
            weight = np.abs(c.h0) ** 2 + np.abs(c.h0_minus) ** 2
            sel = half & (weight > 0)
            parts.append((c.kx[sel], c.kz[sel], c.h0[sel], c.h0_minus[sel], c.omega[sel],
                          weight[sel]))
        kx, kz, h0, h0m, omega, weight = (np.concatenate(p) for p in zip(*parts))
        order = np.argsort(weight)[::-1]
        cum = np.cumsum(weight[order])
        total = cum[-1] if cum.size else 0.0
        count = int(np.searchsorted(cum, energy_fraction * total) + 1) if total > 0 else 0
        count = min(count, max_components, order.size)
        idx = order[:count]
        kx, kz, k = kx[idx], kz[idx], np.hypot(kx[idx], kz[idx])
        c = self.choppiness
        self._comp = (kx, kz, h0[idx], h0m[idx], omega[idx])
        # Rows: the factor that turns h(k) into each field of (Dx, h, Dz, sx, sz, Dxx, Dzz, Dxz).
        self._factors = np.stack([1j * kx / k * c, np.ones_like(k, complex), 1j * kz / k * c,
                                  1j * kx, 1j * kz, -kx * kx / k * c + 0j, -kz * kz / k * c + 0j,
                                  -kx * kz / k * c + 0j], axis=0)
        #: fraction of the (time-averaged) height variance that height_at leaves out
        self.height_at_dropped_energy = float(1.0 - cum[count - 1] / total) if count else 1.0
        self.height_at_components = count

    def _h_of_t(self, t):
        kx, kz, h0, h0m, omega = self._comp
        phase = np.exp(1j * omega * t)
        return h0 * phase + h0m * np.conj(phase)

    def _sum(self, x, z, h, rows):
        kx, kz = self._comp[:2]
        e = np.exp(1j * (np.multiply.outer(x.ravel(), kx) + np.multiply.outer(z.ravel(), kz))) * h
        # Each kept k stands for the pair (k, -k): 2 Re of its term. Products and sums rather than
        # `@`: these thin products wake OpenBLAS's threads, which costs milliseconds on a busy host.
        f = self._factors[rows]
        out = 2.0 * np.stack([(f * ep).sum(axis=-1) for ep in e], axis=1).real
        return tuple(f.reshape(x.shape) for f in out)

    def surface_at(self, x, z, t):
        """(Dx, h, Dz, sx, sz, dxx, dzz, dxz) at undisplaced points (x, z): arrays of x's shape."""
        x = np.asarray(x, np.float64)
        z = np.asarray(z, np.float64)
        return self._sum(x, z, self._h_of_t(t), slice(None))

    def height_at(self, x, z, t, iterations=6):
        """Height and unit normal of the surface above world points (x, z) at time t.

        The surface point x0 moves to x0 + D(x0); a fixed-point iteration x0 <- (x, z) - D(x0)
        finds the x0 that lands on (x, z) (it converges while the displacement's gradient stays
        below 1, i.e. where the surface does not fold). Returns (height, normal (..., 3)).
        """
        x = np.asarray(x, np.float64)
        z = np.asarray(z, np.float64)
        x0, z0 = x.copy(), z.copy()
        h_t = self._h_of_t(t)
        for _ in range(iterations):
            dx, dz = self._sum(x0, z0, h_t, slice(0, 3, 2))
            x0, z0 = x - dx, z - dz
        dx, h, dz, sx, sz, dxx, dzz, dxz = self._sum(x0, z0, h_t, slice(None))
        # Normal of the displaced surface: cross(dP/dz, dP/dx) with dP/dx = (1 + dxx, sx, dxz),
        # dP/dz = (dxz, sz, 1 + dzz).
        n = np.stack([sz * dxz - (1.0 + dzz) * sx, (1.0 + dxx) * (1.0 + dzz) - dxz * dxz,
                      dxz * sx - sz * (1.0 + dxx)], axis=-1)
        return h, n / np.linalg.norm(n, axis=-1, keepdims=True)
