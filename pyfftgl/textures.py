"""The render-loop API: 2D FFTs of the caller's ModernGL textures, on the caller's context.

    fft = pyfftgl.gl.TextureFFT(ctx, (height, width))
    fft.forward(image_tex, spectrum_tex)        # queued; nothing comes back to the host
    k = fft.spectrum(kernel)                    # a kernel's spectrum, kept on the GPU
    fft.convolve(image_tex, k, filtered_tex)    # forward, multiply, inverse: one submission

Texel (x, y) is element [y, x] of a C-ordered (height, width, components) float32 array, as
`texture.write(a.tobytes())` lays it out. rg32f holds one complex field (r + i g), rgba32f two
(r + i g, b + i a) transformed in the same dispatches, r32f a real field (imaginary parts read as
zero, real parts written). The passes are the library's one-dispatch-per-axis kernels reading
textures (texelFetch through a nearest-texel sampler, whatever the texture's own filters) and
writing image2Ds. Where the two axes take one pass each (`intermediate="image"`), the passes
meet in the destination where it holds float32 of the same fields (rg32f, rgba32f: the first
pass writes it, the second transforms it in place), else in a plan-owned texture;
`intermediate="buffer"` makes that a plan-owned buffer.
A TextureArray (every layer) or a list of textures of one format is one set of passes, the
layer one more grid dimension (array textures, or textures selected per layer: up to 8 a pass).
Half-float textures (r16f, rg16f, rgba16f: dtype 'f2') are read and written the same way at half
the bandwidth, computed in float32; what lies between the passes stays float32.

GL state a call changes: SSBO bindings 0-3, image units 0-7 (the textures it writes), the top 8
texture units (those it reads, through a sampler that stays bound there; your units 0.. keep
their textures and samplers) and the current program. It reads its inputs as any sampling
command does: after your drawing and uploads, and after your image stores once you have issued
`ctx.memory_barrier(moderngl.TEXTURE_FETCH_BARRIER_BIT)` (or all bits). It ends with a memory
barrier for sampling, texelFetch, drawing into and copying the results; a shader of yours that
reads them with imageLoad needs `ctx.memory_barrier(moderngl.SHADER_IMAGE_ACCESS_BARRIER_BIT)`
before it.
"""
from __future__ import annotations

import contextlib
import operator

import moderngl
import numpy as np

from . import _validate, planner
from .backends import get_device
from .backends.gl import GLDevice, GLImage
from .backends.gl_context import egl
from .planner import IMAGE_FORMATS, TEXTURE_INTERMEDIATES, TextureCall, image_format
# Their old home, which tests, tools and docs name: the planner's (planner/textures.py) now.
from .planner import ROW_LINES, TWO_FIELD_SHAPES, texture_limits, work_format  # noqa: F401
from .device_plan import DevicePlan, TextureSpectrum, run_once
from .plans import TransformPlan


def _released(obj) -> bool:
    """Whether a ModernGL object was released (ModernGL swaps its handle for an InvalidObject)."""
    return type(getattr(obj, "mglo", None)).__name__ == "InvalidObject"


def _device_of(ctx) -> GLDevice:
    """The GL device on `ctx` (GLDevice.of), made with ctx current: a device takes the context
    current at its making for ctx's own. The caller's EGL context is put back after, where it
    had one (ModernGL's exit leaves none current); else ctx stays current."""
    calls = egl() if getattr(ctx, "_pyfftgl_device", None) is None else None
    if calls is None:
        return GLDevice.of(ctx)
    before = calls.state()
    ctx.__enter__()
    try:
        return GLDevice.of(ctx)
    finally:
        if before[3]:
            calls.restore(before)


class Spectrum(TextureSpectrum):
    __doc__ = TextureSpectrum.__doc__

    def check(self) -> None:
        if _released(self.owner.ctx):
            raise ValueError("the ModernGL context this spectrum lives on was released")


class TextureFFT:
    """2D FFTs of (height, width) textures on the ModernGL context `ctx` (GL 4.3+), for any size
    the library plans (mixed radix and Bluestein included). `norm` as numpy's for forward and
    inverse; spectrum() and convolve() compute numpy's fft2(k) and ifft2(fft2(x) * fft2(k)).
    forward(), inverse() and convolve() return once queued; spectrum() of an array waits for
    its upload texture's work (make spectra before a render loop), as close() does.

    Textures must be made on `ctx` itself (`texture.ctx is ctx`): ModernGL does not record
    which contexts share objects, so one of any other context (share=True ones too) is refused,
    as is a spectrum of another TextureFFT. A list's dst may be in place, or another position's
    src of the same format pair; not another position's dst, nor a src of another set of passes.

    The device made for `ctx` (with ctx current) is stored on it as `ctx._pyfftgl_device` (one
    per context, so programs compile once per context), and importing pyfftgl.gl installs an
    audit hook that fences the library's last GL call when a single-threaded process starts a
    thread (see backends/gl_context.py)."""

    ROW_LINES = ROW_LINES  # the module's (texture_limits)

    def __init__(self, ctx, shape, norm=None, *, intermediate: str = "image"):
        if len(shape) != 2 or any(int(n) != n or n < 1 for n in shape):
            raise ValueError(f"shape must be (height, width) of positive integers, got {shape!r}")
        if intermediate not in TEXTURE_INTERMEDIATES:
            raise ValueError(f"intermediate must be one of {TEXTURE_INTERMEDIATES}, "
                             f"got {intermediate!r}")
        self.shape = (int(shape[0]), int(shape[1]))
        self.size = self.shape[0] * self.shape[1]
        self.norm, self.intermediate = _validate.norm(norm), intermediate
        if not isinstance(ctx, moderngl.Context):
            raise TypeError(f"ctx must be a moderngl.Context, not {type(ctx).__name__}")
        if _released(ctx):
            raise ValueError("ctx was released")
        self.ctx = ctx
        self.device = get_device(_device_of(ctx))  # held to the device profile in force
        side = self.device.info.limits.max_texture_size
        if max(self.shape) > side:
            raise ValueError(f"{self.shape} exceeds this device's largest texture side ({side})")
        self._plans: dict[TextureCall, TransformPlan] = {}
        # (fields, layers) -> what lies between convolve's halves (_between)
        self._mid: dict[tuple, object] = {}
        # Every call's recorded submission, by the textures it binds (a render loop replays
        # them); the dispatches are its plans' for each group of the call.
        self.calls = DevicePlan(self.device)
        self._last: dict = {}  # tag -> (the last call's arguments, its submission): _replayed

    # -- plans ------------------------------------------------------------------------------

    def _plan(self, call: TextureCall) -> TransformPlan:
        """The plan of `call`, made once: planner.texture_plan decides its passes and storage."""
        plan = self._plans.get(call)
        if plan is None:
            made = planner.texture_plan(call, self.device.info.limits)
            plan = self._plans[call] = TransformPlan(made.spec, self.device, made.limits,
                                                     call.norm, storage=made.storage,
                                                     aliases=made.aliases)
        return plan

    def _list_size(self) -> int:
        """How many textures of a list one set of passes takes: a pass reads a list through
        texture units (compute shaders have at least 16) and writes one to image units, at most
        8 (the kernel's)."""
        return max(1, min(8, getattr(self.device, "image_units", 8)))

    def _between(self, fields: int, layers: int):
        """What convolve's forward half writes and its inverse half reads, (object, image
        format or None): a float32 texture of every layer one below the other, read through a
        sampler (so GL orders the halves with the texture-fetch barrier), or where that would
        exceed the largest texture side, a buffer."""
        got = self._mid.get((fields, layers))
        if got is None:
            h, w = self.shape
            fmt = planner.between_format(self.shape, fields, layers,
                                         self.device.info.limits.max_texture_size)
            got = (self.device.image(w, h * layers, fmt) if fmt
                   else self.device.buffer(self.size * 8 * fields * layers), fmt)
            self._mid[(fields, layers)] = got
        return got

    def _current(self):
        """device.current(), refused where the caller released ctx since (ModernGL's released
        context cannot be made current)."""
        if _released(self.ctx):
            raise ValueError(f"the ModernGL context of this TextureFFT ({self.shape[0]} x "
                             f"{self.shape[1]}) was released")
        return self.device.current()

    def _check_open(self) -> None:
        if self._closed:
            raise ValueError(f"this TextureFFT ({self.shape[0]} x {self.shape[1]}) was closed")

    def _format(self, tex, what: str, layers: int | None = None) -> str:
        """tex's image format, once it is known to be a texture of this shape (a TextureArray
        of `layers` layers where `layers` is given)."""
        kinds = (moderngl.TextureArray,) if layers else (moderngl.Texture, moderngl.TextureArray)
        if not isinstance(tex, kinds):
            raise TypeError(f"{what} must be a moderngl.{kinds[0].__name__}"
                            f"{'' if layers else ' or TextureArray'}, not {type(tex).__name__}")
        if _released(tex):
            raise ValueError(f"{what} was released")
        if tex.ctx is not self.ctx:  # its name would bind another texture, or none, here
            raise ValueError(f"{what} belongs to another ModernGL context than this "
                             f"TextureFFT's ctx; make it on ctx")
        if getattr(tex, "depth", False):  # a depth format is no image format a shader may bind
            raise TypeError(f"{what} is a depth texture; TextureFFT transforms colour textures")
        if getattr(tex, "samples", 0):  # a sampler2D reads none; an image2D writes none
            raise TypeError(f"{what} is a multisample texture; TextureFFT transforms single-"
                            f"sample textures (resolve it into one first)")
        fmt, size = image_format(tex.components, tex.dtype), tuple(tex.size)
        if fmt is None:
            raise TypeError(f"{what} must be an r32f, rg32f or rgba32f texture (components 1, 2 "
                            f"or 4, dtype 'f4'; or 'f2': r16f, rg16f, rgba16f), got "
                            f"{tex.components} x {tex.dtype!r}")
        if size[:2] != self.shape[::-1]:
            raise ValueError(f"{what} is {size[0]} x {size[1]} texels (width x height); this "
                             f"TextureFFT transforms {self.shape[1]} x {self.shape[0]}")
        if layers and size[2] != layers:
            raise ValueError(f"{what} has {size[2]} layers, src has {layers}")
        return fmt

    def _new_texture(self, fmt: str, layers: int = 0):
        f = IMAGE_FORMATS[fmt]
        if layers:
            return self.ctx.texture_array(self.shape[::-1] + (layers,), f.components,
                                          dtype=f.dtype)
        return self.ctx.texture(self.shape[::-1], f.components, dtype=f.dtype)

    def _groups(self, src, dst, out_format, real_out: bool, spec_fields=0):
        """The call's work as groups, each one set of passes: (srcs, dsts, src format, dst
        format, layers, kind), kind "array" (one TextureArray), "list" (textures of one format,
        as many as a pass may bind) or "" (one texture); new dst textures of format
        out_format(src format) where dst is None. `real_out`: an r32f dst may take the real
        parts of a one-field result. Returns (groups, the dst textures in src's order, many)."""
        many = isinstance(src, (list, tuple))
        srcs = list(src) if many else [src]
        if dst is None:
            dsts = [None] * len(srcs)
        else:
            dsts = list(dst) if isinstance(dst, (list, tuple)) else [dst]
            if many != isinstance(dst, (list, tuple)) or len(dsts) != len(srcs):
                raise ValueError(f"dst must match src: {len(srcs)} texture(s), got {len(dsts)}")
        items = []
        for i, (s, d) in enumerate(zip(srcs, dsts)):
            names = (f"src[{i}]", f"dst[{i}]") if many else ("src", "dst")
            items.append(self._item(s, d, names, out_format, real_out, spec_fields))
        sets = planner.texture_sets([it[2:] for it in items], many, self._list_size())
        planner.check_texture_overlaps([id(it[0]) for it in items],
                                       [None if it[1] is None else id(it[1]) for it in items],
                                       sets, many)
        # New textures only once every argument is known good.
        items = [(s, d if d is not None else self._new_texture(fd, layers), fs, fd, layers)
                 for s, d, fs, fd, layers in items]
        groups = []
        for at, kind in sets:
            chunk = [items[i] for i in at]
            s, d, fs, fd, layers = chunk[0]
            groups.append(([c[0] for c in chunk], [c[1] for c in chunk], fs, fd,
                           len(chunk) if kind == "list" else layers, kind))
        return groups, [it[1] for it in items], many

    def _item(self, s, d, names, out_format, real_out: bool, spec_fields: int) -> tuple:
        """One position of a call, checked: (src, dst or None, src format, dst format,
        layers: a TextureArray's, else 0)."""
        ws, wd = names
        fs = self._format(s, ws)
        layers = s.layers if isinstance(s, moderngl.TextureArray) else 0
        fd = self._format(d, wd, layers) if d is not None else None
        if d is not None and not layers and isinstance(d, moderngl.TextureArray):
            raise TypeError(f"{wd} must be a moderngl.Texture like src, not a TextureArray")
        if fd is not None and (IMAGE_FORMATS[fd].fields != IMAGE_FORMATS[fs].fields
                               or IMAGE_FORMATS[fd].components == 1 and not real_out):
            raise ValueError(f"cannot write the transform of a {fs} texture into {fd}")
        if spec_fields > IMAGE_FORMATS[fs].fields:
            raise ValueError(f"a spectrum of {spec_fields} fields cannot filter a "
                             f"{fs} texture of {IMAGE_FORMATS[fs].fields}")
        return s, d, fs, fd or out_format(fs), layers

    @staticmethod
    def _images(texs, kind):
        """The resource a plan binds for a group's textures: one image, or a list."""
        return [GLImage(t) for t in texs] if kind == "list" else GLImage(texs[0])

    # -- calls ------------------------------------------------------------------------------

    def _run(self, tag, objs, build, args=()):
        """Replay the submission recorded for `tag` on the textures `objs` (built by build() on
        first use); remembered as the call on `args` (see _replayed) where those are objects."""
        with self.calls.lock:
            sub = self.calls.recording(objs, build, tag)
            sub.run(wait=False)
            if args and not any(a is None or isinstance(a, (list, tuple)) for a in args):
                self._last[tag] = (args, sub)

    def _replayed(self, tag, args) -> bool:
        """Replay the last call of `tag` where it had the very same arguments (a render loop's
        every frame), none of them released since: their checks held then and still hold (a
        texture's size and format are fixed), so only the submission runs."""
        last = self._last.get(tag)
        if last is None or not all(map(operator.is_, last[0], args)) or any(map(_released, args)):
            return False
        # The run holds the device, which orders it among every call; the calls' lock (taken
        # after the device everywhere) is not needed to run a recording, and taken first it
        # deadlocked with a thread recording a call.
        try:
            last[1].run(wait=False)
        except AttributeError:  # ModernGL's released context cannot be made current
            self._current()  # says so where that was it
            raise
        return True

    def _transform(self, inverse: bool, src, dst):
        # A real field's spectrum is complex; the inverse may keep real parts (an r32f dst).
        groups, dsts, many = self._groups(src, dst, lambda fs: IMAGE_FORMATS[fs].spectrum,
                                          real_out=inverse)
        objs = tuple(o for ss, ds, *_ in groups for o in ss + ds)
        # The passes may meet in dst unless a dst is another position's src: a first pass
        # writing it would race the one reading it.
        srcs = {id(s) for ss, *_ in groups for s in ss}
        apart = all(d is s or id(d) not in srcs for ss, ds, *_ in groups for s, d in zip(ss, ds))

        def build():
            out = []
            for ss, ds, fs, fd, layers, kind in groups:
                plan = self._plan(planner.transform_call(self.shape, inverse, self.norm, fs, fd,
                                                         layers, kind, self.intermediate, apart))
                out += plan.flat_dispatches({"in": self._images(ss, kind),
                                             "out": self._images(ds, kind)})
            return out
        self._run(("t", inverse), objs, build, (src, dst))
        return dsts if many else dsts[0]

    def forward(self, src, dst=None):
        """fft2 of every field of `src` (a texture or a list of them) into `dst` (default: new
        textures of src's format; rg32f for r32f; `dst is src` works). Returns dst."""
        self._check_open()
        if self._replayed(("t", False), (src, dst)):  # takes the context itself
            return dst
        with self._current():  # from any thread (see backends/gl.py)
            return self._transform(False, src, dst)

    def inverse(self, src, dst=None):
        """ifft2 of every field of `src` into `dst` (default: new textures of src's format; an
        r32f dst keeps the real part). Returns dst."""
        self._check_open()
        if self._replayed(("t", True), (src, dst)):
            return dst
        with self._current():
            return self._transform(True, src, dst)

    def spectrum(self, kernel, *, frequency: bool = False) -> Spectrum:
        """numpy's fft2 of `kernel`, kept on the GPU for convolve(). `kernel`: a (height, width)
        real or complex array (one spectrum for every field), (height, width, 2) complex or
        (height, width, 4) float RGBA (one per field), or a texture (its fields). The kernel's
        origin is element [0, 0] (np.fft.ifftshift a centred one). frequency=True: `kernel`
        already is the spectrum, (height, width) or (height, width, 2), uploaded as is."""
        self._check_open()
        with self._current():
            return self._spectrum(kernel, frequency)

    def _spectrum(self, kernel, frequency: bool) -> Spectrum:
        if isinstance(kernel, (moderngl.Texture, moderngl.TextureArray)):
            if frequency:
                raise TypeError("frequency=True takes a numpy array, not a texture")
            return self._spectrum_of_texture(kernel)
        a = np.asarray(kernel)
        if a.dtype.kind not in "biufc":
            raise TypeError(f"kernel must be numeric, not {a.dtype}")
        h, w = self.shape
        if a.shape == (h, w):
            field = np.asarray(a, np.complex64)
        elif a.shape == (h, w, 2) and (frequency or a.dtype.kind == "c"):
            field = np.asarray(a, np.complex64)
        elif a.shape == (h, w, 4) and not frequency and a.dtype.kind != "c":
            f = np.asarray(a, np.float32)
            field = (f[..., 0::2] + 1j * f[..., 1::2]).astype(np.complex64)
        else:
            raise ValueError(f"kernel must have shape {(h, w)}, {(h, w, 2)} (complex) or "
                             f"{(h, w, 4)} (RGBA), got {a.shape}")
        fields = 2 if field.ndim == 3 else 1
        data = np.ascontiguousarray(field).view(np.float32)
        if frequency:
            return Spectrum(self, self.device.buffer(data.nbytes, data.ravel()), fields)
        tex = self._new_texture(work_format(fields))
        tex.write(data.tobytes())
        try:
            return self._spectrum_of_texture(tex)
        finally:
            self.device.finish()  # the upload texture is released with its last use done
            tex.release()

    def _spectrum_of_texture(self, tex) -> Spectrum:
        if isinstance(tex, moderngl.TextureArray):
            raise TypeError("kernel must be one moderngl.Texture, not a TextureArray")
        fmt = self._format(tex, "kernel")
        fields = IMAGE_FORMATS[fmt].fields
        buf = self.device.buffer(self.size * 8 * fields)
        plan = self._plan(TextureCall(self.shape, False, "backward", fields, fmt, None,
                                      intermediate=self.intermediate))
        run_once(self.device, plan.flat_dispatches({"in": GLImage(tex), "out": buf}))
        return Spectrum(self, buf, fields)

    def convolve(self, src, spectrum: Spectrum, dst=None):
        """numpy's ifft2(fft2(src) * spectrum) for every field of `src` (a texture or a list),
        into `dst` (default: new textures of src's format; `dst is src` works), in one
        submission with the multiply fused into the forward transform's last pass. Returns dst."""
        self._check_open()
        if self._replayed(("c",), (src, spectrum, dst)):
            return dst
        with self._current():
            return self._convolve(src, spectrum, dst)

    def _convolve(self, src, spectrum: Spectrum, dst):
        if not isinstance(spectrum, Spectrum) or spectrum.owner is not self:
            raise TypeError("spectrum must come from this TextureFFT's spectrum()")
        groups, dsts, many = self._groups(src, dst, lambda fs: fs, real_out=True,
                                          spec_fields=spectrum.fields)
        objs = tuple(o for ss, ds, *_ in groups for o in ss + ds) + (spectrum,)

        def build():
            out = []
            for ss, ds, fs, fd, layers, kind in groups:
                mid, fm = self._between(IMAGE_FORMATS[fs].fields, max(layers, 1))
                fwd, inv = map(self._plan, planner.convolve_calls(
                    self.shape, fs, fd, spectrum.fields, fm, layers, kind, self.intermediate))
                out += fwd.flat_dispatches({"in": self._images(ss, kind), "out": mid,
                                            "spec": spectrum.buffer})
                out += inv.flat_dispatches({"in": mid, "out": self._images(ds, kind)})
            return out
        self._run(("c",), objs, build, (src, spectrum, dst))
        return dsts if many else dsts[0]

    def plans(self) -> list[TransformPlan]:
        """The plans made so far (their repr shows passes, storage and intermediates)."""
        return list(self._plans.values())

    def stats(self) -> dict:
        """plans: made so far; recorded: recorded submissions held (a call's, by the textures
        it binds); bytes: device memory held by the plans and convolve's intermediates."""
        mids = sum(getattr(obj, "nbytes", 0) for obj, _ in self._mid.values())
        return {"plans": len(self._plans), "recorded": len(self.calls.recorded),
                "bytes": sum(p.nbytes for p in self._plans.values()) + mids}

    def recordings(self) -> list:
        """The recorded submissions held (device_plan.Recording), the most recent last."""
        return self.calls.recordings()

    def __repr__(self):
        return (f"<TextureFFT {self.shape[0]} x {self.shape[1]} norm={self.norm} "
                f"intermediate={self.intermediate} on {self.device.info.name}, "
                f"{len(self._plans)} plan(s)>")

    _closed = False

    def close(self):
        """Release the plans' GL objects (after the GPU is done with them). Calls afterwards
        raise ValueError; spectra already made keep their data. After ctx was released (its
        objects went with it) it only forgets them."""
        self._closed = True
        gone = _released(self.ctx)
        with contextlib.nullcontext() if gone else self.device.current():
            if not gone:
                self.device.finish()
            with self.calls.lock:
                self.calls.recorded.clear()
                self._last.clear()
                self._plans.clear()
                self._mid.clear()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
