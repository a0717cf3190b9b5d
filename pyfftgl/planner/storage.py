"""Where a transform's passes read and write (Storage), the one table of image formats, and
emit(): a planned transform's kernel preambles together with the tables they read, as one
generator makes both (VkFFT's habit), for plans.py to allocate, bind and record."""
from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from .abi import COMPLEX64_BYTES
from .passes import float_literal, odd_radix_tables
from .tables import build_table


@dataclass(frozen=True)
class ImageFormat:
    """A GLSL image format a kernel reads or writes: its texture's `components` and ModernGL
    `dtype` ('f4', or 'f2': storage only, computed in float), the complex `fields` a texel holds
    (a real r format: one, its imaginary parts zero), and `spectrum`, the format of the same
    precision that holds a field's complex spectrum."""

    components: int
    dtype: str
    fields: int
    spectrum: str


# The formats the kernels bind as images: the one table of them (textures, planner, backends).
IMAGE_FORMATS = {
    "r32f": ImageFormat(1, "f4", 1, "rg32f"), "rg32f": ImageFormat(2, "f4", 1, "rg32f"),
    "rgba32f": ImageFormat(4, "f4", 2, "rgba32f"),
    "r16f": ImageFormat(1, "f2", 1, "rg16f"), "rg16f": ImageFormat(2, "f2", 1, "rg16f"),
    "rgba16f": ImageFormat(4, "f2", 2, "rgba16f"),
}


def image_format(components: int, dtype: str) -> str | None:
    """The GLSL format of a texture of `components` channels of ModernGL `dtype`, or None."""
    return next((name for name, f in IMAGE_FORMATS.items()
                 if (f.components, f.dtype) == (components, dtype)), None)


def precision_of(dtype) -> int:
    """The kernels' PRECISION for data of numpy `dtype` (complex128/float64: 64, else 32)."""
    return 64 if np.dtype(dtype) in (np.complex128, np.float64) else 32


def element_limits(limits, element_bytes: int):
    """`limits` as the planner must see them for elements of `element_bytes` (its own sizes are
    complex64's): shared memory and buffers hold proportionally fewer elements, and the tuned
    shapes, measured on complex64, do not apply."""
    ratio = element_bytes // COMPLEX64_BYTES
    if ratio == 1:
        return limits
    return replace(limits, tuned=(), max_shared_bytes=limits.max_shared_bytes // ratio,
                   max_buffer_bytes=limits.max_buffer_bytes // ratio, slot_scale=ratio)


@dataclass(frozen=True)
class Storage:
    """Where a plan's passes read and write, beyond plain complex64 buffers: preamble switches
    of the same kernels. `fields`: complex values per element (2: an rgba32f texel holds two
    fields, transformed in the same dispatches). `images`: buffer names ("in", "out", "w0") that
    are images of this GLSL format instead, `width` texels wide. `spec_fields`: the last pass
    multiplies its output by a spectrum (binding 3) of 1 field applied to all, or one per field.
    `precision`: 32 (complex64 data and tables) or 64 (complex128, computed in double).
    `layers`, `height`: the data is `layers` images of `height` rows (the batch of a plan of
    shape (layers, height, width)); the images named in `arrays` are one image2DArray of them,
    those in `lists` `layers` image2Ds bound at consecutive units, so that every layer runs in
    the same dispatches. Other images (a plan's own "w0") are one texture `layers * height` tall."""

    fields: int = 1
    images: tuple[tuple[str, str], ...] = ()  # (buffer name, image format)
    width: int = 0
    spec_fields: int = 0
    precision: int = 32
    layers: int = 1
    height: int = 0
    arrays: tuple[str, ...] = ()
    lists: tuple[str, ...] = ()

    def image_format(self, name: str) -> str | None:
        return dict(self.images).get(name)

    def image_units(self, name: str) -> int:
        """The image units that buffer `name` takes (0: it is a buffer)."""
        if not self.image_format(name):
            return 0
        return self.layers if name in self.lists else 1

    @property
    def dtype(self) -> np.dtype:
        """The complex dtype of one field of the data and of the tables."""
        return np.dtype(np.complex128 if self.precision == 64 else np.complex64)

    @property
    def element_bytes(self) -> int:
        return self.dtype.itemsize * self.fields


@dataclass(frozen=True, eq=False)
class Emitted:
    """A transform's kernels as emitted for one storage: `defines[i]`, the preamble of pass i's
    kernel, and `tables`, every table the passes read concatenated (binding 2; one zero where
    none), at the offsets the preambles name."""

    defines: tuple[dict, ...]
    tables: np.ndarray


def emit(spec, storage: Storage = Storage()) -> Emitted:
    """The preambles and tables of `spec`'s passes (compose.TransformSpec) for `storage`."""
    offsets, parts, at = {}, [], 0
    for key in spec.tables():
        t = build_table(key, storage.dtype)
        offsets[key], at = at, at + t.size
        parts.append(t)
    tables = np.concatenate(parts) if parts else np.zeros(1, storage.dtype)
    last = len(spec.passes) - 1
    return Emitted(tuple(_defines(p, offsets, storage, i == last)
                         for i, p in enumerate(spec.passes)), tables)


def _defines(p, offsets: dict, st: Storage, last: bool) -> dict:
    """Pass p's preamble: its own, plus the storage switches."""
    d = dict(p.defines(offsets))
    if st.fields != 1:
        d["FIELDS"] = st.fields
    if st.precision == 64:  # the preamble's literals again, as doubles
        d["PRECISION"] = 64
        d["SCALE"] = float_literal(p.scale, double=True)
        d.update(odd_radix_tables(p.radices, double=True))
    # Input images are textures at units 0.., output images image units 0.. (two namespaces).
    for role, name in (("IN", p.src_buf), ("OUT", p.dst_buf)):
        fmt = st.image_format(name)
        if fmt:
            d[f"{role}_IMAGE"], d[f"{role}_COMPONENTS"] = fmt, IMAGE_FORMATS[fmt].components
            d["IMG_WIDTH"] = f"{st.width}u"
            if name in st.arrays:
                d[f"{role}_ARRAY"] = 1
            elif name in st.lists:
                d[f"{role}_LIST"] = st.layers
            if name in st.arrays or name in st.lists:
                d["IMG_HEIGHT"] = f"{st.height}u"
            if role == "OUT":  # GLSL 4.30 takes only literals as bindings
                d.update({f"OUT_UNIT{k}": k for k in range(st.image_units(name))})
    if st.spec_fields and last:
        d["MUL_SPEC"], d["SPEC_FIELDS"] = 1, st.spec_fields
        if st.layers > 1:  # one spectrum for every layer
            d["SPEC_SIZE"] = f"{st.width * st.height}u"
    return d
