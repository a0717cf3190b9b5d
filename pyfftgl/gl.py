"""The render-loop API's old import path: `pyfftgl.gl.TextureFFT` is pyfftgl.textures'
TextureFFT (ModernGL textures); this module only re-exports its public names."""
from __future__ import annotations

from .textures import (ROW_LINES, TWO_FIELD_SHAPES, Spectrum, TextureFFT,  # noqa: F401
                       texture_limits, work_format)

__all__ = ["TextureFFT", "Spectrum", "ROW_LINES", "TWO_FIELD_SHAPES", "texture_limits",
           "work_format"]
