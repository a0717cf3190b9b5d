"""The demo's inputs as RGBA float32 arrays in [0, 1]: a generated test pattern, the bundled
procedural landscape (sample.png, made by `python -m demos.filter.images`), or any image file."""
from __future__ import annotations

import pathlib

import numpy as np
from PIL import Image, ImageDraw, ImageFont

SAMPLE = pathlib.Path(__file__).with_name("sample.png")


def fast_length(n: int) -> int:
    """The smallest m >= n whose prime factors are 2, 3 and 5 (sizes the FFT does without padding
    to a power of two or falling back to Bluestein)."""
    m = max(1, n)
    while True:
        r = m
        for p in (2, 3, 5):
            while r % p == 0:
                r //= p
        if r == 1:
            return m
        m += 1


def fit(image, shape):
    """Shrinks an (h, w, 4) image to fit inside shape where it is larger (keeping its aspect) and
    pads it, centred, with opaque black: circular convolution then wraps into black, not into the
    far edge. A smaller image is padded, not enlarged."""
    h, w = shape
    ih, iw = image.shape[:2]
    scale = min(1.0, h / ih, w / iw)
    nh, nw = max(1, round(ih * scale)), max(1, round(iw * scale))
    if (nh, nw) != (ih, iw):
        bands = [Image.fromarray(np.ascontiguousarray(image[..., c]), "F")
                 .resize((nw, nh), Image.LANCZOS) for c in range(4)]
        image = np.clip(np.stack([np.asarray(b) for b in bands], -1), 0.0, 1.0)
    out = np.zeros((h, w, 4), np.float32)
    out[..., 3] = 1.0
    y, x = (h - nh) // 2, (w - nw) // 2
    out[y:y + nh, x:x + nw] = image
    return out


def load(path) -> np.ndarray:
    """Any image Pillow reads, as RGBA float32 in [0, 1] (8 and 16 bit per channel)."""
    with Image.open(path) as im:
        return np.asarray(im.convert("RGBA"), np.float32) / 255.0


def font(size):
    """Pillow's default font at `size` pixels (its small bitmap font on Pillow < 10.1)."""
    try:
        return ImageFont.load_default(size=size)
    except TypeError:  # Pillow < 10.1 has only the small bitmap font
        return ImageFont.load_default()


def _disc(shape, cy, cx, radius, soft=1.0):
    y, x = np.mgrid[:shape[0], :shape[1]]
    r = np.hypot(x - cx, y - cy)
    return np.clip((radius - r) / soft + 0.5, 0.0, 1.0), r, np.arctan2(y - cy, x - cx)


def _over(img, mask, colour):
    img[..., :3] += mask[..., None] * (np.asarray(colour, np.float64) - img[..., :3])


def test_pattern(shape, seed=3) -> np.ndarray:
    """Something every filter shows: a zone plate (all frequencies, for band-pass), a Siemens star
    and a frequency sweep (edges for blur, sharpen, motion), 75% colour bars (below the default
    bloom threshold), text, and bright dots on a dark ground (what bloom catches)."""
    h, w = shape
    s = min(h, w)
    img = np.zeros((h, w, 4))
    gy = np.linspace(0.0, 1.0, h)[:, None]
    img[..., :3] = [0.05, 0.06, 0.12] + gy[..., None] * [0.05, 0.06, 0.08]
    img[..., 3] = 1.0

    inside, r, _ = _disc(shape, 0.30 * h, 0.27 * w, 0.23 * s)
    big_r = 0.23 * s
    # local frequency r / (2 big_r) cycles/pixel: 0.5 at the rim
    zone = 0.5 + 0.45 * np.cos(np.pi * 0.5 * r * r / big_r)
    _over(img, inside, np.zeros(3))
    img[..., :3] += inside[..., None] * zone[..., None]

    bars = 0.75 * np.array([[1, 1, 1], [1, 1, 0], [0, 1, 1], [0, 1, 0],
                            [1, 0, 1], [1, 0, 0], [0, 0, 1]])
    x0, x1, y0, y1 = int(0.56 * w), int(0.96 * w), int(0.07 * h), int(0.30 * h)
    for i, c in enumerate(bars):
        a = x0 + (x1 - x0) * i // len(bars)
        b = x0 + (x1 - x0) * (i + 1) // len(bars)
        img[y0:y1, a:b, :3] = c

    inside, r, theta = _disc(shape, 0.58 * h, 0.76 * w, 0.17 * s)
    star = (np.sin(18 * theta) > 0).astype(np.float64)
    _over(img, inside, np.zeros(3))
    img[..., :3] += inside[..., None] * (0.1 + 0.8 * star)[..., None]

    x0, x1, y0, y1 = int(0.56 * w), int(0.96 * w), int(0.82 * h), int(0.94 * h)
    u = np.linspace(0.0, 1.0, x1 - x0)
    period = 24.0 * (2.0 / 24.0) ** u  # 24 px down to 2 px (Nyquist)
    phase = 2 * np.pi * np.cumsum(1.0 / period)
    img[y0:y1, x0:x1, :3] = (0.5 + 0.45 * np.cos(phase))[None, :, None]

    text = Image.new("L", (w, h), 0)
    draw = ImageDraw.Draw(text)
    draw.text((0.05 * w, 0.60 * h), "pyfftgl", fill=255, font=font(max(8, int(0.09 * s))))
    small = font(max(8, int(0.028 * s)))
    lines = ["FFT filters on textures:", "band-pass, blur, sharpen,", "motion blur and bloom.",
             "The quick brown fox jumps", "over the lazy dog 0123456789"]
    for i, line in enumerate(lines):
        draw.text((0.05 * w, (0.72 + 0.045 * i) * h), line, fill=255, font=small)
    _over(img, np.asarray(text, np.float64) / 255.0, [0.95, 0.95, 0.9])

    rng = np.random.default_rng(seed)
    tints = np.array([[1, 1, 1], [1, 0.85, 0.6], [0.7, 0.85, 1], [1, 0.6, 0.5]])
    for _ in range(28):
        y, x = rng.integers(0, h), rng.integers(0, w)
        dot, _, _ = _disc(shape, y, x, rng.uniform(0.8, 2.5) * s / 1024 + 0.7)
        _over(img, dot, tints[rng.integers(0, len(tints))])
    lamps = ((0.47, 0.52, [1.0, 0.8, 0.5]), (0.93, 0.30, [0.6, 0.8, 1.0]), (0.40, 0.90, [1, 1, 1]))
    for y, x, tint in lamps:
        lamp, _, _ = _disc(shape, y * h, x * w, 4.0 * s / 1024 + 1.0)
        _over(img, lamp, tint)
    return np.clip(img, 0.0, 1.0).astype(np.float32)


def _ridge(w, rng, octaves=7):
    """A mountain skyline: 1/f noise along x, periodic so the image tiles."""
    x = np.arange(w) / w
    y = np.zeros(w)
    for o in range(1, octaves + 1):
        f = 2 ** o
        a, b = rng.standard_normal(2)
        y += (a * np.sin(2 * np.pi * f * x) + b * np.cos(2 * np.pi * f * x)) / f
    return y / np.abs(y).max()


def landscape(shape=(540, 960), seed=7) -> np.ndarray:
    """The bundled image: a dusk lake with mountains, a setting sun, stars and shore lights."""
    h, w = shape
    rng = np.random.default_rng(seed)
    horizon = int(0.64 * h)
    y = np.linspace(0.0, 1.0, horizon)[:, None, None]
    top, mid, low = np.array([[0.05, 0.06, 0.20], [0.45, 0.25, 0.45], [1.0, 0.62, 0.30]])
    sky = np.where(y < 0.3, top + (mid - top) * (y / 0.3),
                   mid + (low - mid) * np.clip((y - 0.3) / 0.25, 0, 1))
    sky = np.broadcast_to(sky, (horizon, w, 3)).copy()

    sun, r, _ = _disc((horizon, w), 0.45 * horizon, 0.68 * w, 0.05 * h, soft=1.5)
    halo = np.exp(-(r / (0.18 * h)) ** 2)
    sky += halo[..., None] * [0.35, 0.22, 0.08]
    _over(sky, sun, [1.0, 0.97, 0.88])
    for _ in range(70):
        sy, sx = rng.integers(0, int(0.3 * horizon)), rng.integers(0, w)
        dot, _, _ = _disc((horizon, w), sy, sx, rng.uniform(0.5, 1.4))
        _over(sky, dot * rng.uniform(0.5, 1.0), [1.0, 1.0, 0.95])

    rows = np.arange(horizon)[:, None]
    layers = [(0.58, 0.14, [0.42, 0.30, 0.48]), (0.70, 0.12, [0.25, 0.17, 0.32]),
              (0.84, 0.10, [0.10, 0.07, 0.14])]
    for base, height, colour in layers:
        top_row = (base - height * (0.5 + 0.5 * _ridge(w, rng))) * horizon
        _over(sky, np.clip(rows - top_row[None, :] + 0.5, 0.0, 1.0), colour)

    below = h - horizon
    src = np.clip(horizon - 1 - np.arange(below), 0, horizon - 1)  # the sky mirrored
    ripple = (2.5 * np.sin(np.arange(below)[:, None] * 0.9 + np.linspace(0, 40, w)[None, :])
              * (0.3 + np.arange(below)[:, None] / below))
    xs = np.clip(np.arange(w)[None, :] + ripple, 0, w - 1).astype(int)
    lake = sky[src[:, None], xs] * 0.7 + np.array([0.0, 0.02, 0.05])
    img = np.concatenate([sky, lake], 0)
    img[horizon - 1:horizon + 1] *= 0.6
    for _ in range(9):
        ly, lx = horizon - rng.integers(2, 5), rng.integers(0, int(0.55 * w))
        dot, _, _ = _disc((h, w), ly, lx, 1.3)
        _over(img, dot, [1.0, 0.85, 0.55])
    out = np.ones((h, w, 4), np.float32)
    out[..., :3] = np.clip(img, 0.0, 1.0)
    return out


def save(path, rgb) -> None:
    """Writes an (h, w, 3 or 4) float image in [0, 1] as 8-bit RGB."""
    a = np.clip(np.asarray(rgb)[..., :3] * 255.0 + 0.5, 0, 255).astype(np.uint8)
    Image.fromarray(a, "RGB").save(path, optimize=True)


if __name__ == "__main__":
    save(SAMPLE, landscape())
    print(f"wrote {SAMPLE} ({SAMPLE.stat().st_size} bytes)")
