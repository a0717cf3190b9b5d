"""The render-loop API on wgpu: 2D FFTs of the caller's wgpu textures, on the caller's GPUDevice.

    fft = pyfftgl.wgpu_textures.TextureFFT(device, (height, width))
    fft.forward(image_tex, spectrum_tex)        # submitted on device.queue; no host transfer
    k = fft.spectrum(kernel)                    # a kernel's spectrum, kept on the GPU
    fft.convolve(image_tex, k, filtered_tex, encoder=encoder)   # into your command encoder

Texel (x, y) is element [y, x] of a C-ordered (height, width, components) float32 array, as
`queue.write_texture` lays it out. rg32float holds one complex field (r + i g), rgba32float two
(r + i g, b + i a) transformed in the same dispatches, r32float a real field (imaginary parts read
as zero, real parts written); rgba16float is read and written as rgba32float is, computed in
float32. A texture of depth_or_array_layers L > 1 is L layers, each transformed on its own, in
the passes of up to `image_units` layers at once (each layer bound as a 2D view; wgpu's GL
backend binds no such view, and refuses array textures here).

Usage flags: a texture read (src, a kernel texture) needs TEXTURE_BINDING, one written (dst)
STORAGE_BINDING (TEXTURE_USAGE); textures made here have both and COPY_SRC | COPY_DST. WebGPU
lets no adapter write rg32float from a shader without native support (wgpu's GL backend has
none): there, transform rgba32float. Reads are textureLoad (no filtering, whatever sampler
you use); the passes meet in buffers of the plan's, so `dst is src` works.

Each call is one compute pass: into `encoder=` (your GPUCommandEncoder; it runs where you
submit it, ordered with your render passes by wgpu) or else submitted on device.queue before the
call returns (after the work you submitted before, before the work you submit after). The
same arguments again replay the recorded pass (a render loop's every frame records nothing).
"""
from __future__ import annotations

import operator

import numpy as np

from . import _validate, planner
from .backends import get_device
from .backends.webgpu import TEXTURE_FORMATS, WebGPUDevice, WgpuImage
from .device_plan import DevicePlan, TextureSpectrum, run_once
from .planner import IMAGE_FORMATS, TextureCall
from .plans import TransformPlan

# The GLSL format (planner.IMAGE_FORMATS) of each wgpu texture format a TextureFFT takes.
FORMATS = {v: k for k, v in TEXTURE_FORMATS.items()}
# wgpu's GL backend (wgpu-hal's gles) binds no 2D view of one layer of an array texture, and
# the layers are bound so.
LAYERS_REFUSED = ("OpenGL", "OpenGLES")
# The usage each role needs: "read" textures are sampled, "write" ones storage textures.
TEXTURE_USAGE = {"read": "TEXTURE_BINDING", "write": "STORAGE_BINDING"}


def _wgpu():
    import wgpu  # only once a TextureFFT is made: wgpu is the WebGPU backend's dependency
    return wgpu


class Spectrum(TextureSpectrum):
    __doc__ = TextureSpectrum.__doc__


class TextureFFT:
    """2D FFTs of (height, width) textures of the wgpu GPUDevice `device`, for any size the
    library plans. `norm` as numpy's for forward and inverse; spectrum() and convolve() compute
    numpy's fft2(k) and ifft2(fft2(x) * fft2(k)). Arguments are checked before any GPU work:
    TypeError for what is no texture of a format here, ValueError for a wrong size, missing
    usage flags, a destroyed texture or another device's."""

    def __init__(self, device, shape, norm=None):
        wgpu = _wgpu()
        if len(shape) != 2 or any(int(n) != n or n < 1 for n in shape):
            raise ValueError(f"shape must be (height, width) of positive integers, got {shape!r}")
        if not isinstance(device, wgpu.GPUDevice):
            raise TypeError(f"device must be a wgpu.GPUDevice, not {type(device).__name__}")
        self.shape = (int(shape[0]), int(shape[1]))
        self.size = self.shape[0] * self.shape[1]
        self.norm = _validate.norm(norm)
        self.gpu = device
        self.device = get_device(WebGPUDevice.of(device))  # held to the device profile in force
        side = self.device.info.limits.max_texture_size
        if max(self.shape) > side:
            raise ValueError(f"{self.shape} exceeds this device's largest texture side ({side})")
        self._plans: dict[TextureCall, TransformPlan] = {}
        self._mid: dict[tuple, object] = {}  # (fields, layers) -> convolve's buffer between
        self.calls = DevicePlan(self.device)  # every call's recorded pass, by its textures
        self._last: dict = {}  # tag -> (the last call's arguments, its recording): _replayed

    # -- checks -----------------------------------------------------------------------------

    def _check_open(self) -> None:
        if self._closed:
            raise ValueError(f"this TextureFFT ({self.shape[0]} x {self.shape[1]}) was closed")

    def _format(self, tex, what: str, role: str, layers: int | None = None) -> str:
        """tex's GLSL format, once it is a usable texture of this shape (of `layers` layers
        where given) with the usage `role` ("read", "write") needs."""
        wgpu = _wgpu()
        if not isinstance(tex, wgpu.GPUTexture):
            raise TypeError(f"{what} must be a wgpu.GPUTexture, not {type(tex).__name__}")
        if getattr(tex, "_device", None) is not self.gpu:  # wgpu-py keeps it there
            raise ValueError(f"{what} belongs to another GPUDevice than this TextureFFT's")
        fmt = FORMATS.get(tex.format)
        if fmt is None or tex.dimension != "2d" or tex.sample_count != 1:
            raise TypeError(f"{what} must be a 2D {', '.join(FORMATS)} texture, got a "
                            f"{tex.dimension} {tex.format} one of {tex.sample_count} sample(s)")
        if (tex.height, tex.width) != self.shape:
            raise ValueError(f"{what} is {tex.width} x {tex.height} texels (width x height); "
                             f"this TextureFFT transforms {self.shape[1]} x {self.shape[0]}")
        if layers is not None and tex.depth_or_array_layers != layers:
            raise ValueError(f"{what} has {tex.depth_or_array_layers} layers, src has {layers}")
        flag = TEXTURE_USAGE[role]
        if not tex.usage & getattr(wgpu.TextureUsage, flag):
            raise ValueError(f"{what} needs usage TextureUsage.{flag} ({role}), it has "
                             f"{tex.usage!r}")
        try:  # the one synchronous check wgpu has of a destroyed texture: it refuses a view
            tex.create_view()
        except wgpu.GPUError as e:
            raise ValueError(f"{what} was destroyed") from e
        return fmt

    def _new_texture(self, fmt: str, layers: int):
        """A texture of this shape for results, readable, writable and copyable."""
        wgpu = _wgpu()
        usage = wgpu.TextureUsage
        try:
            return self.gpu.create_texture(
                size=(self.shape[1], self.shape[0], layers), format=TEXTURE_FORMATS[fmt],
                usage=usage.TEXTURE_BINDING | usage.STORAGE_BINDING | usage.COPY_SRC
                | usage.COPY_DST)
        except wgpu.GPUError as e:
            raise TypeError(f"this adapter cannot write {TEXTURE_FORMATS[fmt]} textures from "
                            f"a shader ({str(e).strip().splitlines()[-1]})") from e

    def _groups(self, src, dst, out_format, real_out: bool, spec_fields: int = 0):
        """(groups, dst): each group one set of passes, (src views, dst views, src format, dst
        format, layers, kind); dst a new texture of format out_format(src format) if None."""
        fs = self._format(src, "src", "read")
        layers = src.depth_or_array_layers
        if layers > 1 and self.device.adapter.info["backend_type"] in LAYERS_REFUSED:
            raise ValueError(f"wgpu's {self.device.adapter.info['backend_type']} backend "
                             "binds no single layer of an array texture: transform a texture "
                             "per layer there")
        fd = self._format(dst, "dst", "write", layers) if dst is not None else None
        if fd is not None and (IMAGE_FORMATS[fd].fields != IMAGE_FORMATS[fs].fields
                               or IMAGE_FORMATS[fd].components == 1 and not real_out):
            raise ValueError(f"cannot write the transform of a {src.format} texture into "
                             f"{dst.format}")
        if spec_fields > IMAGE_FORMATS[fs].fields:
            raise ValueError(f"a spectrum of {spec_fields} fields cannot filter a "
                             f"{src.format} texture of {IMAGE_FORMATS[fs].fields}")
        if dst is None:
            fd = out_format(fs)
            dst = self._new_texture(fd, layers)
        if layers == 1:
            return [([WgpuImage(src)], [WgpuImage(dst)], fs, fd, 0, "")], dst
        k = max(1, self.device.image_units)
        groups = [([WgpuImage(src, i) for i in range(lo, min(lo + k, layers))],
                   [WgpuImage(dst, i) for i in range(lo, min(lo + k, layers))],
                   fs, fd, min(k, layers - lo), "list") for lo in range(0, layers, k)]
        return groups, dst

    # -- plans and runs ---------------------------------------------------------------------

    def _plan(self, call: TextureCall) -> TransformPlan:
        """The plan of `call`, made once: planner.texture_plan decides its passes and storage."""
        plan = self._plans.get(call)
        if plan is None:
            made = planner.texture_plan(call, self.device.info.limits)
            plan = self._plans[call] = TransformPlan(made.spec, self.device, made.limits,
                                                     call.norm, storage=made.storage,
                                                     aliases=made.aliases)
        return plan

    @staticmethod
    def _bind(views, kind):
        return views if kind == "list" else views[0]

    def _run(self, tag, objs, build, args, encoder) -> None:
        """Record (once, by the textures `objs`) and run: into `encoder`, else submitted."""
        with self.calls.lock:
            rec = self.calls.recording(objs, build, tag)
            self._last[tag] = (args, rec)
        self._start(rec, encoder)

    def _start(self, rec, encoder) -> None:
        if encoder is not None:
            self.device.encode(rec.submission, encoder)
        else:  # now: the caller's next submission may read the results
            rec.run(wait=False)
            self.device.flush()

    def _replayed(self, tag, args, encoder) -> bool:
        """Run the last call of `tag` again where it had the very same arguments (a render
        loop's every frame), none destroyed since (a texture's size, format and usage are
        fixed, so the other checks still hold)."""
        last = self._last.get(tag)
        if last is None or not all(map(operator.is_, last[0], args)):
            return False
        self._format(args[0], "src", "read")
        self._format(args[-1], "dst", "write")
        self._start(last[1], encoder)
        return True

    def _check_encoder(self, encoder) -> None:
        if encoder is not None and not isinstance(encoder, _wgpu().GPUCommandEncoder):
            raise TypeError(f"encoder must be a wgpu.GPUCommandEncoder, not "
                            f"{type(encoder).__name__}")

    # -- calls ------------------------------------------------------------------------------

    def _transform(self, inverse: bool, src, dst, encoder):
        self._check_open()
        self._check_encoder(encoder)
        if dst is not None and self._replayed(("t", inverse), (src, dst), encoder):
            return dst
        groups, dst = self._groups(src, dst, lambda fs: IMAGE_FORMATS[fs].spectrum,
                                   real_out=inverse)

        def build():
            out = []
            for ins, outs, fs, fd, layers, kind in groups:
                # the passes meet in the plan's buffers: WebGPU lets no pass sample a texture
                # it writes
                plan = self._plan(planner.transform_call(self.shape, inverse, self.norm, fs, fd,
                                                         layers, kind, "buffer", False))
                out += plan.flat_dispatches({"in": self._bind(ins, kind),
                                             "out": self._bind(outs, kind)})
            return out
        self._run(("t", inverse), (src, dst), build, (src, dst), encoder)
        return dst

    def forward(self, src, dst=None, *, encoder=None):
        """fft2 of every field of every layer of `src` into `dst` (default: a new texture of
        src's format; rg32float for r32float; `dst is src` works). Returns dst."""
        return self._transform(False, src, dst, encoder)

    def inverse(self, src, dst=None, *, encoder=None):
        """ifft2 of every field of every layer of `src` into `dst` (default: a new texture of
        src's format; an r32float dst keeps the real part). Returns dst."""
        return self._transform(True, src, dst, encoder)

    def spectrum(self, kernel, *, frequency: bool = False) -> Spectrum:
        """numpy's fft2 of `kernel`, kept on the GPU for convolve(). `kernel`: a (height, width)
        real or complex array (one spectrum for every field), (height, width, 2) complex or
        (height, width, 4) float RGBA (one per field), or a 2D texture with TEXTURE_BINDING (its
        fields). The kernel's origin is element [0, 0] (np.fft.ifftshift a centred one).
        frequency=True: `kernel` already is the spectrum, uploaded as is."""
        self._check_open()
        if isinstance(kernel, _wgpu().GPUTexture):
            if frequency:
                raise TypeError("frequency=True takes a numpy array, not a texture")
            return self._spectrum_of_texture(kernel)
        field = _kernel_field(kernel, self.shape, frequency)
        fields = 2 if field.ndim == 3 else 1
        data = np.ascontiguousarray(field).view(np.float32).ravel()
        buf = self.device.buffer(data.nbytes, data)
        if frequency:
            return Spectrum(self, buf, fields)
        out = self.device.buffer(data.nbytes)
        plan = self._plan(TextureCall(self.shape, False, "backward", fields, None, None))
        run_once(self.device, plan.flat_dispatches({"in": buf, "out": out}))
        self.device.flush()
        return Spectrum(self, out, fields)

    def _spectrum_of_texture(self, tex) -> Spectrum:
        fmt = self._format(tex, "kernel", "read")
        if tex.depth_or_array_layers != 1:
            raise TypeError("kernel must be a texture of one layer")
        fields = IMAGE_FORMATS[fmt].fields
        buf = self.device.buffer(self.size * 8 * fields)
        plan = self._plan(TextureCall(self.shape, False, "backward", fields, fmt, None,
                                      intermediate="buffer"))
        run_once(self.device, plan.flat_dispatches({"in": WgpuImage(tex), "out": buf}))
        self.device.flush()
        return Spectrum(self, buf, fields)

    def convolve(self, src, spectrum: Spectrum, dst=None, *, encoder=None):
        """numpy's ifft2(fft2(src) * spectrum) for every field of every layer of `src`, into
        `dst` (default: a new texture of src's format; `dst is src` works), in one compute pass
        with the multiply fused into the forward transform's last pass. Returns dst."""
        self._check_open()
        self._check_encoder(encoder)
        if not isinstance(spectrum, Spectrum) or spectrum.owner is not self:
            raise TypeError("spectrum must come from this TextureFFT's spectrum()")
        if dst is not None and self._replayed(("c",), (src, spectrum, dst), encoder):
            return dst
        groups, dst = self._groups(src, dst, lambda fs: fs, real_out=True,
                                   spec_fields=spectrum.fields)

        def build():
            out = []
            for ins, outs, fs, fd, layers, kind in groups:
                mid = self._between(IMAGE_FORMATS[fs].fields, max(layers, 1))
                fwd, inv = map(self._plan, planner.convolve_calls(
                    self.shape, fs, fd, spectrum.fields, None, layers, kind, "buffer"))
                out += fwd.flat_dispatches({"in": self._bind(ins, kind), "out": mid,
                                            "spec": spectrum.buffer})
                out += inv.flat_dispatches({"in": mid, "out": self._bind(outs, kind)})
            return out
        self._run(("c",), (src, spectrum, dst), build, (src, spectrum, dst), encoder)
        return dst

    def _between(self, fields: int, layers: int):
        """The buffer convolve's forward half writes and its inverse half reads."""
        got = self._mid.get((fields, layers))
        if got is None:
            got = self._mid[(fields, layers)] = self.device.buffer(self.size * 8 * fields
                                                                   * layers)
        return got

    # -- state ------------------------------------------------------------------------------

    def plans(self) -> list[TransformPlan]:
        """The plans made so far (their repr shows passes, storage and intermediates)."""
        return list(self._plans.values())

    def stats(self) -> dict:
        """plans: made so far; recorded: recorded passes held (a call's, by its textures);
        bytes: device memory held by the plans and convolve's intermediates."""
        mids = sum(b.nbytes for b in self._mid.values())
        return {"plans": len(self._plans), "recorded": len(self.calls.recorded),
                "bytes": sum(p.nbytes for p in self._plans.values()) + mids}

    def __repr__(self):
        return (f"<webgpu.TextureFFT {self.shape[0]} x {self.shape[1]} norm={self.norm} on "
                f"{self.device.info.name}, {len(self._plans)} plan(s)>")

    _closed = False

    def close(self):
        """Release the plans (after the GPU is done with them). Calls afterwards raise
        ValueError; spectra already made keep their data."""
        self._closed = True
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


def _kernel_field(kernel, shape, frequency: bool) -> np.ndarray:
    """A kernel array as complex64 (height, width) or (height, width, 2) (spectrum())."""
    a = np.asarray(kernel)
    if a.dtype.kind not in "biufc":
        raise TypeError(f"kernel must be numeric, not {a.dtype}")
    h, w = shape
    if a.shape == (h, w) or a.shape == (h, w, 2) and (frequency or a.dtype.kind == "c"):
        return np.asarray(a, np.complex64)
    if a.shape == (h, w, 4) and not frequency and a.dtype.kind != "c":
        f = np.asarray(a, np.float32)
        return (f[..., 0::2] + 1j * f[..., 1::2]).astype(np.complex64)
    raise ValueError(f"kernel must have shape {(h, w)}, {(h, w, 2)} (complex) or "
                     f"{(h, w, 4)} (RGBA), got {a.shape}")
