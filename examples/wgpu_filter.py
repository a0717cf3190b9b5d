"""Filter a picture on your own wgpu device, headless: pyfftgl.wgpu_textures.TextureFFT convolves an
rgba32float texture (RGBA as two complex fields, one set of passes) with a blur and a band-pass,
each recorded into a command encoder of the application's, as a render loop's frame would be.
The results are read back and written side by side (original | blurred | band-passed) as a PNG.

    python examples/wgpu_filter.py [--out wgpu_filter.png] [--backend vulkan|gl|metal|d3d12]
"""
from __future__ import annotations

import argparse
import pathlib
import sys

import numpy as np
import wgpu

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))  # the demos' images
import pyfftgl.wgpu_textures  # noqa: E402
from demos.filter import filters, images  # noqa: E402

BACKENDS = {"vulkan": "Vulkan", "gl": "OpenGL", "metal": "Metal", "d3d12": "D3D12"}


def open_device(backend: str | None):
    """A device as an application opens one: the adapter of `backend`, else wgpu's choice."""
    if backend is None:
        return wgpu.gpu.request_adapter_sync(power_preference="high-performance") \
            .request_device_sync()
    for adapter in wgpu.gpu.enumerate_adapters_sync():
        if adapter.info["backend_type"] == BACKENDS[backend]:
            return adapter.request_device_sync()
    sys.exit(f"wgpu offers no {backend} adapter here")


def texture(device, rgba: np.ndarray):
    h, w = rgba.shape[:2]
    usage = (wgpu.TextureUsage.TEXTURE_BINDING | wgpu.TextureUsage.STORAGE_BINDING
             | wgpu.TextureUsage.COPY_SRC | wgpu.TextureUsage.COPY_DST)
    tex = device.create_texture(size=(w, h, 1), format="rgba32float", usage=usage)
    device.queue.write_texture({"texture": tex}, np.ascontiguousarray(rgba, np.float32).tobytes(),
                               {"bytes_per_row": w * 16, "rows_per_image": h}, (w, h, 1))
    return tex


def read(device, tex) -> np.ndarray:
    w, h = tex.width, tex.height
    raw = device.queue.read_texture({"texture": tex}, {"bytes_per_row": w * 16,
                                                       "rows_per_image": h}, (w, h, 1))
    return np.frombuffer(raw, np.float32).reshape(h, w, 4)


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default="wgpu_filter.png")
    ap.add_argument("--backend", choices=sorted(BACKENDS))
    args = ap.parse_args(argv)
    device = open_device(args.backend)
    picture = images.load(images.SAMPLE)
    shape = tuple(images.fast_length(n) for n in picture.shape[:2])
    picture = images.fit(picture, shape)
    fft = pyfftgl.wgpu_textures.TextureFFT(device, shape)
    src = texture(device, picture)
    panels = [picture]
    for filt in (filters.gaussian_blur(shape, sigma=6.0),
                 filters.bandpass(shape, inner=0.01, outer=0.08)):
        spectrum = fft.spectrum(filt.kernel, frequency=filt.frequency)
        encoder = device.create_command_encoder()
        dst = fft.convolve(src, spectrum, encoder=encoder)  # a new texture, filled at submit
        device.queue.submit([encoder.finish()])
        panels.append(read(device, dst))
    images.save(args.out, np.concatenate(panels, axis=1))
    print(f"wrote {args.out}: {shape[1]} x {shape[0]} per panel on "
          f"{device.adapter.info['device']} ({device.adapter.info['backend_type']})")


if __name__ == "__main__":
    main()
