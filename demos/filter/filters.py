"""The demo's filters as kernels of the FFT size, and a float64 numpy reference that applies them.

A filter is what `TextureFFT.spectrum()` takes: a real spatial kernel whose origin is element [0, 0]
(so circular convolution does not shift the image), or, with `frequency=True`, the spectrum itself.
Every kernel here is real, so one complex transform filters two real channels without mixing them.
Distances are in pixels, frequencies in cycles per pixel, angles in degrees counter-clockwise on
screen (x to the right, y up; array rows grow downwards).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

LUMA = np.array([0.2126, 0.7152, 0.0722])  # Rec. 709 weights, also used by the bright-pass shader


@dataclass(frozen=True)
class Filter:
    """A kernel for `TextureFFT.spectrum(kernel, frequency)`; bloom adds a bright-pass threshold."""
    name: str
    kernel: np.ndarray
    frequency: bool = False
    threshold: float | None = None  # bloom: convolve only what is brighter than this, then add

    def spectrum(self) -> np.ndarray:
        """The float64 spectrum the GPU multiplies by (the numpy reference's view of the kernel)."""
        return self.kernel.astype(np.complex128) if self.frequency else np.fft.fft2(self.kernel)


def offsets(shape):
    """Signed pixel offsets (dy, dx) of each element from the origin [0, 0], wrapping around."""
    h, w = shape
    return np.fft.fftfreq(h, 1.0 / h)[:, None], np.fft.fftfreq(w, 1.0 / w)[None, :]


def _smoothstep(edge0, edge1, x):
    t = np.clip((x - edge0) / (edge1 - edge0), 0.0, 1.0)
    return t * t * (3.0 - 2.0 * t)


def _gaussian(shape, sigma):
    dy, dx = offsets(shape)
    if sigma <= 0:
        return ((dy == 0) & (dx == 0)).astype(np.float64)
    two_var = 2.0 * sigma * sigma
    g = np.exp(-dy * dy / two_var) * np.exp(-dx * dx / two_var)  # separable: two cheap exps
    return g / g.sum()


def _splat(shape, t, angle, weights):
    """Bilinear splat of points at distance t along a direction; the sum of weights is kept."""
    a = np.deg2rad(angle)
    x, y = t * np.cos(a), -t * np.sin(a)  # screen y is up, rows go down
    x0, y0 = np.floor(x), np.floor(y)
    fx, fy = x - x0, y - y0
    k = np.zeros(shape)
    h, w = shape
    for oy, wy in ((0, 1 - fy), (1, fy)):
        for ox, wx in ((0, 1 - fx), (1, fx)):
            np.add.at(k, ((y0 + oy).astype(int) % h, (x0 + ox).astype(int) % w), weights * wy * wx)
    return k


def identity(shape) -> Filter:
    k = np.zeros(shape)
    k[0, 0] = 1.0
    return Filter("none", k)


def bandpass(shape, inner=0.02, outer=0.2, falloff=0.02, keep_mean=True) -> Filter:
    """Keeps radial frequencies between `inner` and `outer` cycles/pixel; each edge is a smoothstep
    `falloff` wide. keep_mean passes the zero frequency too, so the picture keeps its average
    colour instead of going black. The mask is real and even, so the kernel it stands for is
    real."""
    fy = np.fft.fftfreq(shape[0])[:, None]
    fx = np.fft.fftfreq(shape[1])[None, :]
    r = np.hypot(fx, fy)
    half = max(falloff, 1e-6) / 2
    low = np.ones(shape) if inner <= 0 else _smoothstep(inner - half, inner + half, r)
    mask = low * (1.0 - _smoothstep(outer - half, outer + half, r))
    if keep_mean:
        mask[0, 0] = 1.0
    return Filter("bandpass", mask, frequency=True)


def gaussian_blur(shape, sigma=4.0) -> Filter:
    return Filter("blur", _gaussian(shape, sigma))


def sharpen(shape, amount=1.5, sigma=2.0) -> Filter:
    """Unsharp mask: x + amount * (x - blur(x)) as one kernel."""
    k = -amount * _gaussian(shape, sigma)
    k[0, 0] += 1.0 + amount
    return Filter("sharpen", k)


def motion_blur(shape, length=24.0, angle=30.0) -> Filter:
    """A box of `length` pixels along `angle`, centred on the pixel (an antialiased line)."""
    n = max(2, int(np.ceil(4 * length)))
    t = (np.arange(n) + 0.5) * (length / n) - length / 2  # midpoints: a box exactly `length` long
    return Filter("motion", _splat(shape, t, angle, np.full(n, 1.0 / n)))


def bloom_kernel(shape, intensity=1.0, radius=1.0, star=0.5, arms=6) -> np.ndarray:
    """A long-tailed glow (a sum of Gaussians with growing sigma) plus a star of `arms` (even)
    exponentially fading streaks, as a six-bladed aperture makes; it sums to `intensity`."""
    sigmas, weights = radius * np.array([1.5, 5.0, 14.0, 36.0]), np.array([0.45, 0.3, 0.17, 0.08])
    glow = sum(wt * _gaussian(shape, s) for s, wt in zip(sigmas, weights))
    reach = 80.0 * radius
    n = max(2, int(8 * reach))
    t = np.linspace(-reach, reach, n)
    fade = np.exp(-np.abs(t) / (reach / 3))
    lines = arms // 2  # each line through the centre gives two arms
    streaks = sum(_splat(shape, t, 90.0 + 180.0 * i / lines, fade) for i in range(lines))
    streaks = _gaussian_smooth(streaks, 0.7)
    return intensity * ((1 - star) * glow + star * streaks / streaks.sum())


def _gaussian_smooth(k, sigma):
    """Softens a splatted line so the star's arms are not one pixel of aliasing."""
    return np.real(np.fft.ifft2(np.fft.fft2(k) * np.fft.fft2(_gaussian(k.shape, sigma))))


def bloom(shape, threshold=0.75, intensity=1.5, radius=1.0, star=0.5) -> Filter:
    return Filter("bloom", bloom_kernel(shape, intensity, radius, star), threshold=threshold)


def bright_pass(image, threshold):
    """What bloom convolves: each colour scaled by how far its luminance exceeds the threshold, as
    a fraction of the headroom above it (white gives its full colour); continuous, so float32 and
    float64 agree. Alpha becomes 0."""
    x = np.asarray(image, np.float64)
    lum = x[..., :3] @ LUMA
    scale = np.maximum(lum - threshold, 0.0) / (max(1.0 - threshold, 1e-3) * np.maximum(lum, 1e-6))
    out = np.zeros_like(x)
    out[..., :3] = x[..., :3] * scale[..., None]
    return out


def convolve(image, spectrum):
    """Real part of ifft2(fft2(channel) * spectrum) for every channel of (H, W, C), in float64."""
    x = np.asarray(image, np.float64)
    f = np.fft.fft2(x, axes=(0, 1)) * spectrum[..., None]
    return np.real(np.fft.ifft2(f, axes=(0, 1)))


def apply(image, filt: Filter):
    """The numpy reference of the demo's GPU path: (H, W, C) image -> filtered float64 image."""
    x = np.asarray(image, np.float64)
    if filt.threshold is None:
        return convolve(x, filt.spectrum())
    return x + convolve(bright_pass(x, filt.threshold), filt.spectrum())


FILTERS = {"none": identity, "bandpass": bandpass, "blur": gaussian_blur, "sharpen": sharpen,
           "motion": motion_blur, "bloom": bloom}
