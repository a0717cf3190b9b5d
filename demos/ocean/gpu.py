"""The ocean's per-frame GPU work: spectra (compute), every inverse FFT in one pyfftgl call, foam.

Nothing is read back per frame; `read_fields` exists for tests.
"""
from __future__ import annotations

import contextlib
import math
from pathlib import Path

import moderngl
import numpy as np

from pyfftgl.gl import TextureFFT

from .physics import Ocean, unpack_textures

SHADERS = Path(__file__).with_name("shaders")
GROUP = 16  # local size of both compute shaders
# The field textures' (GLSL image format, ModernGL dtype) by `half`.
FIELD_FORMATS = {False: ("rgba32f", "f4"), True: ("rgba16f", "f2")}


def shader_source(name: str, defines: dict | None = None) -> str:
    """A shader's text with `#include "file"` lines replaced by that file (one level) and
    `#define NAME VALUE` lines for `defines` after its #version line."""
    lines = []
    for i, line in enumerate((SHADERS / name).read_text().splitlines()):
        if i == 1:
            lines += [f"#define {k} {v}" for k, v in (defines or {}).items()]
        if line.startswith("#include"):
            lines.append((SHADERS / line.split('"')[1]).read_text())
        else:
            lines.append(line)
    return "\n".join(lines) + "\n"


class FieldLayer:
    """Layer `index` of the fields' TextureArray (cascade c's texture j is layer 2 c + j), where
    tests and tools name one texture of a cascade (OceanGPU.read_texture)."""

    def __init__(self, array, index: int):
        self.array, self.index = array, index
        self.dtype, self.components = array.dtype, array.components


class OceanGPU:
    """Per cascade: h0 and w(k) textures (static), two layers of the fields' TextureArray (the
    FFT's data, all transformed in one set of passes: measured faster than a list of textures,
    which picks an image per texel), one foam texture.
    half: the field textures (the FFT's data: spectra in, fields out) are rgba16f instead of
    rgba32f, half their memory and bandwidth; the FFT still computes in float32."""

    def __init__(self, ctx: moderngl.Context, ocean: Ocean, foam_decay=0.3, foam_bias=0.84,
                 foam_gain=12.0, anisotropy=8.0, half=False):
        self.ctx = ctx
        self.anisotropy = anisotropy
        self.ocean = ocean
        self.size = n = ocean.params.size
        self.field_format, self.field_dtype = FIELD_FORMATS[bool(half)]
        self.fft = TextureFFT(ctx, (n, n), norm="forward")   # unscaled inverse: Tessendorf's sum
        self.spectrum_source = shader_source("spectrum.comp", {"FIELD_FORMAT": self.field_format})
        self.spectrum_cs = ctx.compute_shader(self.spectrum_source)
        self.foam_cs = ctx.compute_shader(shader_source("foam.comp"))
        self.foam_decay, self.foam_bias, self.foam_gain = foam_decay, foam_bias, foam_gain
        self.array = None  # the fields: layers 2c, 2c + 1 = cascade c's two packed textures
        self.fields = []   # per cascade [FieldLayer 2c, FieldLayer 2c + 1]
        self.foam = []
        self._static = []
        self.set_ocean(ocean)
        # Two time queries used alternately: reading last frame's does not stall on this frame's.
        self.timers = [ctx.query(time=True), ctx.query(time=True)]
        self.frame = 0
        # stage(name) wraps each stage of a frame ("spectrum", "FFT", "foam"; the renderer's
        # "sky", "ocean", "buoy"): nothing by default, a timer under `--bench` (bench.StageTimes).
        self.stage = lambda name: contextlib.nullcontext()

    def set_ocean(self, ocean: Ocean):
        """Upload h0 and w(k) of a (new) sea state; textures are reused when the shape allows."""
        self.ocean = ocean
        n = self.size
        if ocean.params.size != n:
            raise ValueError("the FFT size is fixed for the life of an OceanGPU")
        layers = 2 * len(ocean.cascades)
        if self.array is None or self.array.layers != layers:  # spectra are remade every frame
            if self.array is not None:
                self.array.release()
            self.array = self._texture(4, mip=True, dtype=self.field_dtype, layers=layers)
            self.fields = [[FieldLayer(self.array, 2 * c + j) for j in range(2)]
                           for c in range(len(ocean.cascades))]
        while len(self.foam) < len(ocean.cascades):
            foam = self._texture(1, mip=True)
            foam.write(np.zeros((n, n), np.float32).tobytes())
            self.foam.append(foam)
        for t in self._static:
            t.release()
        self._static = []
        for c in ocean.cascades:
            h0 = np.stack([c.h0.real, c.h0.imag, c.h0_minus.real, c.h0_minus.imag], axis=-1)
            h0_tex = self.ctx.texture((n, n), 4, h0.astype(np.float32).tobytes(), dtype="f4")
            w_tex = self.ctx.texture((n, n), 1, c.omega.astype(np.float32).tobytes(), dtype="f4")
            for t in (h0_tex, w_tex):
                t.filter = (moderngl.NEAREST, moderngl.NEAREST)
            self._static.append((h0_tex, w_tex))

    def _texture(self, components, mip, dtype="f4", layers=0):
        n = self.size
        t = (self.ctx.texture_array((n, n, layers), components, dtype=dtype) if layers else
             self.ctx.texture((n, n), components, dtype=dtype))
        t.repeat_x = t.repeat_y = True
        if mip:
            t.build_mipmaps()
            t.filter = (moderngl.LINEAR_MIPMAP_LINEAR, moderngl.LINEAR)
            t.anisotropy = self.anisotropy
        return t

    @property
    def cascades(self):
        return len(self.ocean.cascades)

    def all_field_textures(self):
        return [t for pair in self.fields[:self.cascades] for t in pair]

    def build_spectra(self, t: float):
        cs = self.spectrum_cs
        cs["size"] = self.size
        cs["time"] = float(t)
        cs["choppiness"] = float(self.ocean.choppiness)
        groups = (self.size + GROUP - 1) // GROUP
        self.array.bind_to_image(0, read=False, write=True)
        for i, (c, (h0_tex, w_tex)) in enumerate(zip(self.ocean.cascades, self._static)):
            cs["patch_size"] = float(c.patch)
            cs["layer0"] = 2 * i
            h0_tex.use(0)
            w_tex.use(1)
            cs.run(groups, groups)
        self.ctx.memory_barrier()

    def inverse_fft(self, timed=False):
        """Every field of every cascade through one pyfftgl call, in place (one set of passes)."""
        if timed:
            with self.timers[self.frame % 2]:
                self.fft.inverse(self.array, self.array)
        else:
            self.fft.inverse(self.array, self.array)

    def update_foam(self, dt: float):
        cs = self.foam_cs
        cs["size"] = self.size
        cs["decay"] = float(self.foam_decay)
        cs["bias"] = float(self.foam_bias)
        cs["gain"] = float(self.foam_gain)
        cs["dt"] = float(dt)
        groups = (self.size + GROUP - 1) // GROUP
        self.array.use(0)
        for i, foam in enumerate(self.foam[:self.cascades]):
            cs["layer0"] = 2 * i
            foam.bind_to_image(0, read=True, write=True)
            cs.run(groups, groups)
        self.ctx.memory_barrier()

    def step(self, t: float, dt: float, timed=False):
        """One frame: spectra, inverse FFTs, foam, then mip chains for distant reads."""
        with self.stage("spectrum"):
            self.build_spectra(t)
        with self.stage("FFT"):
            self.inverse_fft(timed)
        with self.stage("foam"):  # with the mip chains
            self.update_foam(dt)
            for tex in [self.array] + self.foam[:self.cascades]:
                tex.build_mipmaps()
        self.frame += 1

    def fft_time_ms(self):
        """GPU time of the previous frame's timed inverse FFTs (a GL time query), in ms."""
        if self.frame < 2:
            return float("nan")
        return self.timers[self.frame % 2].elapsed / 1e6

    # ---- tests and tools only: these read the GPU back ----
    def read_texture(self, tex, components=4):
        """(N, N, components) float32 (float16 values from a half-float texture) of a texture
        or a FieldLayer."""
        n = self.size
        if isinstance(tex, FieldLayer):
            a = np.frombuffer(tex.array.read(), np.dtype(tex.dtype))
            a = a.reshape(tex.array.layers, n, n, components)[tex.index]
        else:
            a = np.frombuffer(tex.read(), np.dtype(tex.dtype)).reshape(n, n, components)
        return a.astype(np.float32, copy=False)

    def read_fields(self, cascade: int):
        tex0, tex1 = self.fields[cascade]
        return unpack_textures(self.read_texture(tex0).astype(np.float64),
                               self.read_texture(tex1).astype(np.float64))

    def release(self):
        self.fft.close()
        for t in [self.array] + self.foam:
            t.release()
        for pair in self._static:
            for t in pair:
                t.release()
        self.spectrum_cs.release()
        self.foam_cs.release()


def fade_distances(patch_sizes):
    """Distance by which a cascade's detail is gone: 40 of its tiles, where it would tile."""
    return [math.inf if i == 0 else 40.0 * p for i, p in enumerate(patch_sizes)]
