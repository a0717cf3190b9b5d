"""The plans of 2D FFTs on textures, decided without a device: the limits a texture's passes plan
with, and the storage layout of one set of passes (which buffer names are images of which format,
where the two passes meet, layers bound as an array or a list, aliases) as a pure function of a
TextureCall. Any API's texture front end (pyfftgl.gl's TextureFFT) validates, asks here, binds and
runs; the layout rules live in this one place."""
from __future__ import annotations

from dataclasses import dataclass, field, replace

from .abi import COMPLEX64_BYTES
from .compose import plan_c2c
from .records import TunedShape
from .rules import TILE_LINES
from .storage import IMAGE_FORMATS, Storage, element_limits

# Rows per workgroup of a pass along a texture's rows, a warp spanning them: textures are stored
# in blocks of neighbouring rows.
ROW_LINES = 2

# Shapes of two-field (rgba) lines measured faster than the planner's own (docs/performance-
# log.md): the complex64 wisdom does not apply to them. 512 for columns (tiled) and rows alike;
# 720-point columns with an invocation per radix-3 butterfly, shared memory padded; 1280-point
# rows two at a time, an invocation per radix-4 butterfly.
TWO_FIELD_SHAPES = (TunedShape(512, (8, 8, 8), 64, 0, False, True),
                    TunedShape(512, (8, 8, 8), 64, 0, False, False),
                    TunedShape(720, (3, 3, 5, 4, 4), 240, 0, True, True),
                    TunedShape(1280, (4, 4, 4, 4, 5), 320, ROW_LINES))

# Where the two passes of a texture transform meet when nothing else decides: "image" (the
# destination, or a texture of the plan's) or "buffer" (a buffer of the plan's).
TEXTURE_INTERMEDIATES = ("buffer", "image")

# How the layers of one set of passes are bound: "" one texture, "array" one TextureArray,
# "list" that many textures at consecutive units.
TEXTURE_KINDS = ("", "array", "list")


def work_format(fields: int) -> str:
    """The float32 format of the textures a texture FFT keeps for itself (between passes, between
    convolve's halves, a kernel's upload) for elements of `fields` complex values."""
    return "rgba32f" if fields == 2 else "rg32f"


def texture_limits(limits, fields: int):
    """The limits texture plans take for elements of `fields` complex values: as if memory were
    smaller, with column tiles of fewer, wider elements (the same 32-byte sectors), rows
    ROW_LINES at once, and two-field lines in TWO_FIELD_SHAPES."""
    out = replace(element_limits(limits, COMPLEX64_BYTES * fields),
                  tile_lines=max(1, TILE_LINES // fields), row_lines=ROW_LINES)
    return replace(out, tuned=TWO_FIELD_SHAPES) if fields == 2 else out


@dataclass(frozen=True)
class TextureCall:
    """One set of passes on textures of `shape` (height, width): a forward or inverse 2D FFT
    with `norm`, of elements of `fields` complex values, reading an image of format `src` (None:
    a buffer) and writing `dst`. `spec_fields` > 0: the last pass multiplies by a spectrum of
    that many fields. `layers` > 0: that many images in one set of passes, bound as one
    TextureArray (kind "array") or a list of textures (kind "list"), except `own` ("in" or
    "out"): a texture of the caller's own making, every layer one below the other. `through`
    ("in" or "out", of the work format): the passes meet in that texture of the call instead of
    one of the plan's. `intermediate`: TEXTURE_INTERMEDIATES. Hashable: a plan cache's key."""

    shape: tuple[int, int]
    inverse: bool
    norm: str
    fields: int
    src: str | None
    dst: str | None
    spec_fields: int = 0
    layers: int = 0
    kind: str = ""
    own: str = ""
    through: str = ""
    intermediate: str = "image"


@dataclass(frozen=True, eq=False)
class TexturePlan:
    """What texture_plan decided for a TextureCall: the transform's `spec`, the `limits` it was
    planned with, its `storage` and `aliases` (a plan buffer name -> the call's buffer name it
    is, for TransformPlan)."""

    call: TextureCall
    spec: object
    limits: object
    storage: Storage
    aliases: dict = field(default_factory=dict)


def texture_plan(call: TextureCall, limits) -> TexturePlan:
    """The plan of `call` on a device of `limits` (its max_texture_size the largest texture
    side): ValueError where it does not fit one submission."""
    h, w = call.shape
    planned = texture_limits(limits, call.fields)
    # the layer is the batch: one more grid dimension of the same passes
    shape, axes = ((call.layers, h, w), (1, 2)) if call.layers else ((h, w), (0, 1))
    spec = plan_c2c(shape, axes, call.inverse, call.norm, planned)
    if spec.chunks != 1:
        raise ValueError(f"a {call.shape} texture transform does not fit one submission here")
    storage, aliases = texture_storage(call, spec, limits.max_texture_size)
    return TexturePlan(call, spec, planned, storage, aliases)


def texture_storage(call: TextureCall, spec, max_side: int) -> tuple[Storage, dict]:
    """(Storage, aliases) of `call` planned as `spec`, on a device whose textures are at most
    `max_side` texels a side."""
    h, w = call.shape
    layers = max(call.layers, 1)
    images = [(name, fmt) for name, fmt in (("in", call.src), ("out", call.dst)) if fmt]
    bound = (tuple(name for name, _ in images if name != call.own) if call.layers else ())
    aliases = {}
    # A texture between the two passes where the one intermediate is the image's size (a
    # Bluestein or four-step axis keeps buffers): the call's own input or output where it may
    # be overwritten and holds float32 (each pass reads a line whole before writing it, so a pass
    # may write the texture it reads), else the plan's, as tall as every layer. Meeting in the
    # call's texture leaves a third less memory in flight (L2's share).
    mid = call.intermediate == "image" and call.src is not None and call.dst is not None
    if mid and len(spec.passes) == 2 and dict(spec.buffers).get("w0", 0) * spec.units == (
            h * w * layers):
        if call.through:
            images.append(("w0", work_format(call.fields)))
            bound += ("w0",) if call.through in bound else ()
            aliases = {"w0": call.through}
        elif h * layers <= max_side:
            images.append(("w0", work_format(call.fields)))
    storage = Storage(fields=call.fields, images=tuple(images), width=w,
                      spec_fields=call.spec_fields, layers=layers, height=h,
                      arrays=bound if call.kind == "array" else (),
                      lists=bound if call.kind == "list" else ())
    return storage, aliases


def transform_call(shape, inverse: bool, norm: str, src: str, dst: str, layers: int = 0,
                   kind: str = "", intermediate: str = "image",
                   dst_free: bool = True) -> TextureCall:
    """The TextureCall of forward() or inverse() from textures of format `src` into `dst`; the
    passes meet in dst where it holds float32 of the same fields and `dst_free` (no dst of the
    call is another position's src, which a first pass writing it would race)."""
    fields = IMAGE_FORMATS[src].fields
    through = "out" if dst_free and dst == work_format(fields) else ""
    return TextureCall(tuple(shape), inverse, norm, fields, src, dst, layers=layers, kind=kind,
                       through=through, intermediate=intermediate)


def between_format(shape, fields: int, layers: int, max_side: int) -> str | None:
    """What convolve's halves meet in for `layers` (at least 1) images of `shape`: a float32
    texture of every layer one below the other (its format), or where that would exceed the
    largest texture side `max_side`, a buffer (None)."""
    return work_format(fields) if shape[0] * layers <= max_side else None


def convolve_calls(shape, src: str, dst: str, spec_fields: int, between: str | None,
                   layers: int = 0, kind: str = "",
                   intermediate: str = "image") -> tuple[TextureCall, TextureCall]:
    """convolve()'s two halves: the forward transform of `src` with the spectrum multiply into
    `between` (between_format), then the inverse into `dst`; each half's passes meet in that
    texture of convolve's own (free to overwrite)."""
    fields = IMAGE_FORMATS[src].fields
    fwd = TextureCall(tuple(shape), False, "backward", fields, src, between, spec_fields,
                      layers, kind, own="out", through="out" if between else "",
                      intermediate=intermediate)
    inv = TextureCall(tuple(shape), True, "backward", fields, between, dst, 0, layers, kind,
                      own="in", through="in" if between else "", intermediate=intermediate)
    return fwd, inv
