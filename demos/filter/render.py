"""The GL side of the filter demo on the caller's ModernGL context: the image in an rgba32f texture
(rgba16f with `half`), the demo's small shaders (animation, bloom's bright pass and composite, the
two views, the caption) and pyfftgl's TextureFFT doing the filtering and the spectrum."""
from __future__ import annotations

import time

import moderngl
import numpy as np
from PIL import Image, ImageDraw

from pyfftgl.gl import TextureFFT

GROUP = 16  # compute workgroup edge of the demo's own passes

# The demo's image formats: (GLSL image format, ModernGL dtype, numpy dtype) by `half`.
FORMATS = {False: ("rgba32f", "f4", np.float32), True: ("rgba16f", "f2", np.float16)}

_COMPUTE = """#version 430
#define IMAGE_FORMAT {image_format}
layout(local_size_x = 16, local_size_y = 16) in;
#define INSIDE(p, img) all(lessThan(p, imageSize(img)))
"""


def compute_source(body, image_format="rgba32f"):
    """One of the demo's compute shaders with its image2D declarations in `image_format`, the
    format of the textures bound to them."""
    return _COMPUTE.format(image_format=image_format) + body


SOURCE = """
layout(IMAGE_FORMAT, binding = 0) uniform readonly image2D base;
layout(IMAGE_FORMAT, binding = 1) uniform writeonly image2D dst;
uniform float time;
uniform int sparkles;   // small bright lights wandering over the picture (the animation)
void main() {
    ivec2 p = ivec2(gl_GlobalInvocationID.xy);
    if (!INSIDE(p, dst)) return;
    vec2 n = vec2(imageSize(dst));
    vec4 c = imageLoad(base, p);
    for (int i = 0; i < sparkles; ++i) {
        float f = float(i);
        vec2 centre = n * (0.5 + 0.42 * vec2(sin(time * (0.29 + 0.07 * f) + 1.7 * f),
                                             cos(time * (0.21 + 0.05 * f) + 2.3 * f)));
        vec2 d = vec2(p) - centre;
        c.rgb += vec3(1.0, 0.9, 0.75) * exp(-dot(d, d) / 4.5);
    }
    imageStore(dst, p, vec4(min(c.rgb, 1.0), c.a));
}
"""

BRIGHT_PASS = """
layout(IMAGE_FORMAT, binding = 0) uniform readonly image2D src;
layout(IMAGE_FORMAT, binding = 1) uniform writeonly image2D dst;
uniform float threshold;
void main() {   // filters.bright_pass
    ivec2 p = ivec2(gl_GlobalInvocationID.xy);
    if (!INSIDE(p, dst)) return;
    vec3 c = imageLoad(src, p).rgb;
    float lum = dot(c, vec3(0.2126, 0.7152, 0.0722));
    float excess = max(lum - threshold, 0.0) / max(1.0 - threshold, 1e-3);
    imageStore(dst, p, vec4(c * (excess / max(lum, 1e-6)), 0.0));
}
"""

COMPOSITE = """
layout(IMAGE_FORMAT, binding = 0) uniform readonly image2D image;
layout(IMAGE_FORMAT, binding = 1) uniform readonly image2D glow;
layout(IMAGE_FORMAT, binding = 2) uniform writeonly image2D dst;
void main() {
    ivec2 p = ivec2(gl_GlobalInvocationID.xy);
    if (!INSIDE(p, dst)) return;
    vec4 c = imageLoad(image, p);
    imageStore(dst, p, vec4(c.rgb + imageLoad(glow, p).rgb, c.a));
}
"""

FULLSCREEN = """#version 430
out vec2 uv;   // 0..1 over the viewport, y up
void main() {
    uv = vec2((gl_VertexID << 1) & 2, gl_VertexID & 2);
    gl_Position = vec4(uv * 2.0 - 1.0, 0.0, 1.0);
}
"""

IMAGE_VIEW = """#version 430
uniform sampler2D tex;
in vec2 uv;
out vec4 colour;
void main() {   // texel row 0 is the top of the picture
    colour = vec4(clamp(texture(tex, vec2(uv.x, 1.0 - uv.y)).rgb, 0.0, 1.0), 1.0);
}
"""

# The colour ramp of the spectrum view; tests/test_filter_demo.py has its numpy twin.
RAMP = """
vec3 ramp(float v) {
    float blue = 0.6 * smoothstep(0.0, 0.3, v) * (1.0 - smoothstep(0.3, 0.6, v));
    return vec3(smoothstep(0.0, 0.55, v), smoothstep(0.35, 0.85, v),
                blue + smoothstep(0.75, 1.0, v));
}
"""

SPECTRUM_VIEW = """#version 430
uniform sampler2D spec;   // fft2 of R + iG in rg, of B + iA in ba
uniform float norm;       // 1 / log(1 + (H W)^2): the largest power an image in [0, 1] can have
uniform float gain;       // H W for an orthonormal spectrum (half storage), else 1
in vec2 uv;
out vec4 colour;
""" + RAMP + """
vec2 conj(vec2 z) { return vec2(z.x, -z.y); }
void main() {
    ivec2 n = textureSize(spec, 0);
    ivec2 p = min(ivec2(vec2(uv.x, 1.0 - uv.y) * vec2(n)), n - 1);
    ivec2 k = (p - n / 2 + n) % n;   // fftshift: the zero frequency in the middle
    vec4 a = texelFetch(spec, k, 0), b = texelFetch(spec, (n - k) % n, 0);
    // Two real fields share one complex one:
    // X(k) = (Z(k) + conj Z(-k)) / 2, Y(k) = (Z(k) - conj Z(-k)) / 2i.
    vec2 r = 0.5 * (a.xy + conj(b.xy));
    vec2 d = 0.5 * (a.xy - conj(b.xy));
    vec2 bl = 0.5 * (a.zw + conj(b.zw));
    vec2 lum = 0.2126 * r + 0.7152 * vec2(d.y, -d.x) + 0.0722 * bl;
    colour = vec4(ramp(log(1.0 + gain * dot(lum, lum)) * norm), 1.0);
}
"""

OVERLAY_VERTEX = """#version 430
uniform vec4 rect;   // x0, y0, x1, y1 in clip space
out vec2 uv;
void main() {
    vec2 c = vec2(gl_VertexID & 1, gl_VertexID >> 1);
    uv = vec2(c.x, 1.0 - c.y);
    gl_Position = vec4(mix(rect.xy, rect.zw, c), 0.0, 1.0);
}
"""

OVERLAY = """#version 430
uniform sampler2D tex;
in vec2 uv;
out vec4 colour;
void main() { colour = texture(tex, uv); }
"""


def is_software(ctx) -> bool:
    renderer = ctx.info["GL_RENDERER"].lower()
    return any(s in renderer for s in ("llvmpipe", "softpipe", "swrast"))


class GpuTimer:
    """Milliseconds of GPU work done inside `with timer:`. A GL time query on a real GPU, read one
    use later so the CPU does not wait for it; on software GL, whose time queries do not cover
    compute dispatches, the wall clock between two finishes."""

    def __init__(self, ctx):
        self.ctx, self.software = ctx, is_software(ctx)
        self.queries = [] if self.software else [ctx.query(time=True) for _ in range(2)]
        self.uses, self.last, self.total, self.count = 0, None, 0.0, 0

    def __enter__(self):
        if self.software:
            self.ctx.finish()
            self.t0 = time.perf_counter()
        else:
            self.queries[self.uses % 2].__enter__()
        return self

    def __exit__(self, *exc):
        if self.software:
            self.ctx.finish()
            self._sample((time.perf_counter() - self.t0) * 1e3)
        else:
            self.queries[self.uses % 2].__exit__(*exc)
        self.uses += 1
        if not self.software and self.uses >= 2:
            self._sample(self.queries[self.uses % 2].elapsed / 1e6)

    def _sample(self, ms):
        self.last = ms
        self.total += ms
        self.count += 1

    @property
    def mean(self):
        return self.total / self.count if self.count else float("nan")

    def reset(self):
        self.total, self.count = 0.0, 0

    def release(self):
        self.queries = []  # ModernGL's Query has no release(): they go with their references


def fit_rect(x, y, w, h, aspect, margin=4):
    """The largest (x, y, w, h) of the given width/height aspect centred in a box, in pixels."""
    w, h = w - 2 * margin, h - 2 * margin
    fw, fh = (w, w / aspect) if w / aspect <= h else (h * aspect, h)
    fw, fh = max(1, int(fw)), max(1, int(fh))
    return x + margin + (w - fw) // 2, y + margin + (h - fh) // 2, fw, fh


def caption_image(lines, font, pad=6):
    """White text on a translucent dark box, as (h, w, 4) uint8, row 0 at the top."""
    heights = [font.getbbox(line or " ")[3] for line in lines]
    width = max(font.getbbox(line or " ")[2] for line in lines) + 2 * pad
    im = Image.new("RGBA", (width, sum(heights) + 2 * pad + 2 * (len(lines) - 1)), (0, 0, 0, 150))
    draw, y = ImageDraw.Draw(im), pad
    for line, h in zip(lines, heights):
        draw.text((pad, y), line, fill=(255, 255, 255, 255), font=font)
        y += h + 2
    return np.asarray(im)


class FilterRenderer:
    """Everything one image size needs on the GPU. Per frame: `run(t)` animates the input and
    filters it, `draw(fbo)` shows the filtered picture (left) and its log power spectrum (right).
    half: every image (and the spectrum) in rgba16f, half the memory and bandwidth of rgba32f; the
    FFTs still compute in float32."""

    def __init__(self, ctx, shape, half=False):
        self.ctx, self.shape, self.half = ctx, tuple(shape), bool(half)
        self.image_format, dtype, self.host_dtype = FORMATS[self.half]
        h, w = self.shape
        # An unscaled spectrum's zero frequency (up to H W) overflows float16 (65504): half
        # storage keeps the orthonormal one and the view scales its power back.
        self.fft = TextureFFT(ctx, self.shape, norm="ortho" if self.half else None)
        rgba = lambda: ctx.texture((w, h), 4, dtype=dtype)  # noqa: E731
        self.base, self.image, self.bright, self.glow, self.output, self.spectrum = (
            rgba() for _ in range(6))
        self.result = self.image
        self.sources = {name: compute_source(body, self.image_format) for name, body in
                        (("source", SOURCE), ("bright", BRIGHT_PASS), ("composite", COMPOSITE))}
        self.source_pass = ctx.compute_shader(self.sources["source"])
        self.bright_pass = ctx.compute_shader(self.sources["bright"])
        self.composite_pass = ctx.compute_shader(self.sources["composite"])
        self.image_view = ctx.program(vertex_shader=FULLSCREEN, fragment_shader=IMAGE_VIEW)
        self.spectrum_view = ctx.program(vertex_shader=FULLSCREEN, fragment_shader=SPECTRUM_VIEW)
        self.overlay = ctx.program(vertex_shader=OVERLAY_VERTEX, fragment_shader=OVERLAY)
        self.spectrum_view["norm"] = 1.0 / np.log1p(float(h * w) ** 2)
        self.spectrum_view["gain"] = float(h * w) if self.half else 1.0
        views = (self.image_view, self.spectrum_view, self.overlay)
        self.vaos = {p: ctx.vertex_array(p, []) for p in views}  # vertices come from gl_VertexID
        self.filter_timer, self.spectrum_timer = GpuTimer(ctx), GpuTimer(ctx)
        self.filter, self.kernel_spectrum, self.caption = None, None, None

    def set_input(self, rgba):
        """The static picture, (H, W, 4) in [0, 1] (rounded to float16 with half)."""
        self.base.write(np.ascontiguousarray(rgba, self.host_dtype).tobytes())

    def set_filter(self, filt):
        """A filters.Filter; its spectrum is computed once, on the GPU. "none" filters nothing."""
        self.filter = filt
        self.kernel_spectrum = None
        if filt is not None and filt.name != "none":
            self.kernel_spectrum = self.fft.spectrum(filt.kernel, frequency=filt.frequency)

    def _dispatch(self, program, textures, **uniforms):
        for unit, tex in enumerate(textures):
            tex.bind_to_image(unit, read=True, write=True)
        for name, value in uniforms.items():
            program[name] = value
        h, w = self.shape
        program.run(-(-w // GROUP), -(-h // GROUP))
        self.ctx.memory_barrier()

    def run(self, t=0.0, sparkles=6):
        """One frame of GPU work: animate, filter, transform the result for the spectrum view."""
        self._dispatch(self.source_pass, [self.base, self.image], time=float(t),
                       sparkles=int(sparkles))
        with self.filter_timer:
            self.result = self._filter()
        with self.spectrum_timer:
            self.fft.forward(self.result, self.spectrum)

    def _filter(self):
        if self.kernel_spectrum is None:
            return self.image
        if self.filter.threshold is None:
            self.fft.convolve(self.image, self.kernel_spectrum, self.output)
            return self.output
        self._dispatch(self.bright_pass, [self.image, self.bright],
                       threshold=float(self.filter.threshold))
        self.fft.convolve(self.bright, self.kernel_spectrum, self.glow)
        # The composite loads the glow as an image: pyfftgl's barrier covers sampling only.
        self.ctx.memory_barrier(moderngl.SHADER_IMAGE_ACCESS_BARRIER_BIT)
        self._dispatch(self.composite_pass, [self.image, self.glow, self.output])
        return self.output

    def set_caption(self, lines, font):
        if self.caption is not None:
            self.caption.release()
        a = caption_image(lines, font)
        self.caption = self.ctx.texture((a.shape[1], a.shape[0]), 4, a.tobytes())

    def draw(self, fbo, size=None):
        """Filtered picture on the left half of fbo, its spectrum on the right, caption on top;
        size: the framebuffer's pixels where fbo.size does not know them (a window's)."""
        ctx = self.ctx
        fbo.use()
        fw, fh = size or fbo.size
        ctx.viewport = (0, 0, fw, fh)
        fbo.clear(0.08, 0.08, 0.09, 1.0)
        h, w = self.shape
        half = fw // 2
        for (x, width), tex, prog in (((0, half), self.result, self.image_view),
                                      ((half, fw - half), self.spectrum, self.spectrum_view)):
            ctx.viewport = fit_rect(x, 0, width, fh, w / h)
            tex.use(0)
            prog["tex" if prog is self.image_view else "spec"] = 0
            self.vaos[prog].render(moderngl.TRIANGLES, vertices=3)
        ctx.viewport = (0, 0, fw, fh)
        if self.caption is not None:
            cw, ch = self.caption.size
            x0, y0, x1, y1 = 8, fh - 8 - ch, 8 + cw, fh - 8
            self.overlay["rect"] = (2 * x0 / fw - 1, 2 * y0 / fh - 1,
                                    2 * x1 / fw - 1, 2 * y1 / fh - 1)
            self.caption.use(0)
            self.overlay["tex"] = 0
            ctx.enable(moderngl.BLEND)
            ctx.blend_func = moderngl.SRC_ALPHA, moderngl.ONE_MINUS_SRC_ALPHA
            self.vaos[self.overlay].render(moderngl.TRIANGLE_STRIP, vertices=4)
            ctx.disable(moderngl.BLEND)

    def read(self, tex):
        """A texture of this size as an (H, W, 4) float32 array (float16 values with half)."""
        h, w = self.shape
        a = np.frombuffer(tex.read(), self.host_dtype).reshape(h, w, 4)
        return a.astype(np.float32, copy=False)

    def release(self):
        for obj in (self.base, self.image, self.bright, self.glow, self.output, self.spectrum,
                    self.caption, self.source_pass, self.bright_pass, self.composite_pass,
                    *self.vaos.values(),
                    self.image_view, self.spectrum_view, self.overlay):
            if obj is not None:
                obj.release()
        self.filter_timer.release()
        self.spectrum_timer.release()
        self.fft.close()


def screenshot(fbo, path, size=None):
    """Saves what fbo shows, right way up (GL rows start at the bottom)."""
    w, h = size or fbo.size
    data = fbo.read(viewport=(0, 0, w, h), components=3, alignment=1)
    rgb = np.frombuffer(data, np.uint8).reshape(h, w, 3)
    Image.fromarray(np.flipud(rgb)).save(path, optimize=True)

