"""python -m demos.filter: real-time FFT image filtering on GL textures, in a GLFW window or
headless through EGL (--headless), or a benchmark of the filter against torch.fft (--bench)."""
from __future__ import annotations

import argparse
import math
import sys
import time
from dataclasses import dataclass

import numpy as np

from . import filters, images

ORDER = ["none", "bandpass", "blur", "sharpen", "motion", "bloom"]  # keys 1-6


@dataclass(frozen=True)
class Param:
    name: str
    default: float
    low: float
    high: float
    step: float        # added per key press, or the factor per press when `scale`
    scale: bool = False


PARAMS = {
    "none": [],
    "bandpass": [Param("inner", 0.02, 0.0, 0.7, 0.005), Param("outer", 0.2, 0.005, 0.75, 0.005),
                 Param("falloff", 0.02, 0.002, 0.3, 1.2, True)],
    "blur": [Param("sigma", 4.0, 0.3, 200.0, 1.15, True)],
    "sharpen": [Param("amount", 1.5, 0.0, 10.0, 0.25), Param("sigma", 2.0, 0.3, 50.0, 1.15, True)],
    "motion": [Param("length", 24.0, 1.0, 600.0, 1.15, True), Param("angle", 30.0, -1e9, 1e9, 5.0)],
    "bloom": [Param("threshold", 0.75, 0.0, 1.0, 0.02),
              Param("intensity", 1.5, 0.0, 20.0, 1.15, True),
              Param("radius", 1.0, 0.2, 8.0, 1.15, True)],
}
HELP = ("1-6 filter  arrows/wheel adjust  drag: motion angle  I input  space pause  S save  "
        "R reset  Esc quit")


class Controls:
    """The chosen filter and every filter's parameters. Left/right change the first parameter,
    up/down the second, the wheel the third (or the last one a filter has)."""

    def __init__(self, name, shape):
        self.name, self.shape, self.dirty = name, shape, True
        self.values = {n: {p.name: p.default for p in ps} for n, ps in PARAMS.items()}

    def choose(self, name):
        self.name, self.dirty = name, True

    def set(self, key, value):
        if key not in self.values[self.name]:
            raise ValueError(f"{self.name} has no parameter {key!r} "
                             f"(it has {sorted(self.values[self.name])})")
        self.values[self.name][key] = float(value)
        self.dirty = True

    def adjust(self, slot, steps):
        ps = PARAMS[self.name]
        if not ps or steps == 0:
            return
        p = ps[min(slot, len(ps) - 1)]
        v = self.values[self.name][p.name]
        v = v * p.step ** steps if p.scale else v + p.step * steps
        self.values[self.name][p.name] = float(np.clip(v, p.low, p.high))
        self.dirty = True

    def drag(self, dx, dy):
        """Motion blur along a mouse drag (pixels of the picture, y down): length and angle."""
        if self.name == "motion" and math.hypot(dx, dy) >= 2:
            self.values["motion"]["length"] = float(np.clip(math.hypot(dx, dy), 1.0, 600.0))
            self.values["motion"]["angle"] = math.degrees(math.atan2(-dy, dx))
            self.dirty = True

    def reset(self):
        self.values[self.name] = {p.name: p.default for p in PARAMS[self.name]}
        self.dirty = True

    def filter(self):
        self.dirty = False
        return filters.FILTERS[self.name](self.shape, **self.values[self.name])

    def describe(self):
        return "  ".join([self.name] + [f"{k} {v:.3g}" for k, v in self.values[self.name].items()])


def parse_size(text):
    """"1024" -> (1024, 1024); "2048x1152" (width x height, as screens say) -> (1152, 2048)."""
    w, _, h = text.lower().partition("x")
    try:
        w, h = int(w), int(h or w)
    except ValueError:
        raise argparse.ArgumentTypeError(f"size {text!r} is not N or WIDTHxHEIGHT") from None
    if w < 2 or h < 2:
        raise argparse.ArgumentTypeError(f"size {text!r} is too small")
    return h, w


def inputs(args):
    """The FFT shape and the pictures the I key cycles through, all fitted to that shape. An image
    without --size keeps its own size grown to the next 2-3-5-smooth one (1920x1080 stays)."""
    found = []
    if args.image:
        found.append((args.image, images.load(args.image)))
    if args.sample or args.image:
        found.append(("sample.png", images.load(images.SAMPLE)))
    shape = args.size
    if shape is None:
        ih, iw = found[0][1].shape[:2] if found else (1024, 1024)
        shape = images.fast_length(ih), images.fast_length(iw)
    pattern = ("test pattern", images.test_pattern(shape))
    found = found + [pattern] if found else [pattern, ("sample.png", images.load(images.SAMPLE))]
    return shape, [(label, images.fit(a, shape)) for label, a in found]


class Demo:
    """One frame = animate, filter, spectrum, draw, caption; the window and headless loops share
    it."""

    def __init__(self, ctx, shape, pictures, controls, sparkles=6, paused=False, help_line=False,
                 half=False):
        from .render import FilterRenderer, is_software
        self.ctx, self.shape, self.pictures, self.controls = ctx, shape, pictures, controls
        self.renderer = FilterRenderer(ctx, shape, half)
        self.which, self.t, self.paused, self.sparkles = 0, 0.0, paused, sparkles
        self.renderer.set_input(pictures[0][1])
        self.font = images.font(15)
        self.frame_ms, self.caption_at, self.help_line = None, -1.0, help_line
        self.caption_shown = None  # the lines on the caption texture
        self.device = ctx.info["GL_RENDERER"]
        if half:
            self.device += f" ({self.renderer.image_format} storage)"
        self.timing = "wall clock between finishes" if is_software(ctx) else "GL time query"

    def next_input(self):
        self.which = (self.which + 1) % len(self.pictures)
        self.renderer.set_input(self.pictures[self.which][1])

    def caption_lines(self):
        h, w = self.shape
        f, s = self.renderer.filter_timer.last, self.renderer.spectrum_timer.last
        ms = lambda v: "-" if v is None else f"{v:.3f} ms"  # noqa: E731
        paused = "  (paused)" if self.paused else ""
        filtered = ms(f) if self.controls.name != "none" else "-"
        lines = [f"{self.pictures[self.which][0]}: {self.controls.describe()}{paused}",
                 f"{w}x{h}  frame {ms(self.frame_ms)}  filter FFT {filtered}"
                 f"  spectrum FFT {ms(s)}  ({self.timing})",
                 self.device]
        return lines + [HELP] if self.help_line else lines

    def frame(self, fbo, size, dt, now):
        if self.controls.dirty:
            self.renderer.set_filter(self.controls.filter())
            self.caption_at = -1.0
        if not self.paused:
            self.t += dt
        self.renderer.run(self.t, self.sparkles)
        if now - self.caption_at >= 0.5:
            # Drawing the text (Pillow) and uploading it costs more than the filter: only when
            # the text changed, at most twice a second.
            lines = self.caption_lines()
            if lines != self.caption_shown:
                self.renderer.set_caption(lines, self.font)
                self.caption_shown = lines
            self.caption_at = now
        self.renderer.draw(fbo, size)

    def summary(self):
        r = self.renderer
        return (f"{self.shape[1]}x{self.shape[0]} {self.controls.describe()}: "
                f"filter {r.filter_timer.mean:.3f} ms, spectrum {r.spectrum_timer.mean:.3f} ms "
                f"per frame over {r.filter_timer.count} frames "
                f"({self.timing}; {self.device})")


def run_headless(args, shape, pictures, controls):
    import moderngl
    from .render import screenshot
    ctx = moderngl.create_standalone_context(require=430, backend="egl")
    fbo = ctx.simple_framebuffer(args.window, components=4)
    demo = Demo(ctx, shape, pictures, controls, args.sparkles, args.paused, half=args.half)
    last = time.perf_counter()
    for i in range(args.frames):
        # the caption follows the wall clock as in a window (the last frame's is always drawn)
        demo.frame(fbo, None, 1.0 / 60.0, float("inf") if i == args.frames - 1 else last)
        ctx.finish()
        now = time.perf_counter()
        demo.frame_ms, last = (now - last) * 1e3, now
    print(demo.summary())
    if args.screenshot:
        screenshot(fbo, args.screenshot)
        print(f"wrote {args.screenshot}")
    demo.renderer.release()
    return 0


def install_controls(window, demo, controls, shape, state):
    """The keyboard, scroll and mouse callbacks: filter keys, parameter steps, drag, save."""
    import glfw
    from .render import fit_rect

    def on_key(win, key, scancode, action, mods):
        if action not in (glfw.PRESS, glfw.REPEAT):
            return
        if glfw.KEY_1 <= key <= glfw.KEY_6 and action == glfw.PRESS:
            controls.choose(ORDER[key - glfw.KEY_1])
        steps = {glfw.KEY_RIGHT: (0, 1), glfw.KEY_LEFT: (0, -1),
                 glfw.KEY_UP: (1, 1), glfw.KEY_DOWN: (1, -1)}
        if key in steps:
            controls.adjust(*steps[key])
        if action != glfw.PRESS:
            return
        if key == glfw.KEY_SPACE:
            demo.paused = not demo.paused
        elif key == glfw.KEY_S:
            state["save"] = time.strftime("filter-%Y%m%d-%H%M%S.png")
        elif key == glfw.KEY_R:
            controls.reset()
        elif key == glfw.KEY_I:
            demo.next_input()
        elif key == glfw.KEY_ESCAPE:
            glfw.set_window_should_close(win, True)

    def on_scroll(win, dx, dy):
        controls.adjust(2, int(round(dy)) or int(math.copysign(1, dy)) if dy else 0)

    def on_button(win, button, action, mods):
        if button == glfw.MOUSE_BUTTON_LEFT:
            state["press"] = glfw.get_cursor_pos(win) if action == glfw.PRESS else None

    def on_move(win, x, y):
        if state["press"] is not None:
            ww, wh = glfw.get_window_size(win)
            view = fit_rect(0, 0, ww // 2, wh, shape[1] / shape[0])
            scale = shape[1] / view[2]  # picture pixels per window pixel
            controls.drag((x - state["press"][0]) * scale, (y - state["press"][1]) * scale)

    glfw.set_key_callback(window, on_key)
    glfw.set_scroll_callback(window, on_scroll)
    glfw.set_mouse_button_callback(window, on_button)
    glfw.set_cursor_pos_callback(window, on_move)


def run_window(args, shape, pictures, controls):
    import glfw
    import moderngl
    from .render import screenshot
    if not glfw.init():
        print("GLFW cannot open a display here; try --headless", file=sys.stderr)
        return 2
    try:
        for hint, value in ((glfw.CONTEXT_VERSION_MAJOR, 4), (glfw.CONTEXT_VERSION_MINOR, 3),
                            (glfw.OPENGL_PROFILE, glfw.OPENGL_CORE_PROFILE),
                            (glfw.OPENGL_FORWARD_COMPAT, True)):
            glfw.window_hint(hint, value)
        window = glfw.create_window(*args.window, "pyfftgl filter", None, None)
        if not window:
            print("GLFW gave no OpenGL 4.3 core window here; try --headless", file=sys.stderr)
            return 2
        glfw.make_context_current(window)
        glfw.swap_interval(1 if args.vsync else 0)
        ctx = moderngl.create_context(require=430)
        demo = Demo(ctx, shape, pictures, controls, args.sparkles, args.paused, help_line=True,
                    half=args.half)
        state = {"save": None, "press": None}
        install_controls(window, demo, controls, shape, state)
        start = last = time.perf_counter()
        frames, title_at = 0, 0.0
        more = lambda: args.frames is None or frames < args.frames  # noqa: E731
        while not glfw.window_should_close(window) and more():
            glfw.poll_events()
            now = time.perf_counter()
            size = glfw.get_framebuffer_size(window)
            demo.frame(ctx.screen, size, now - last, now - start)
            if frames:
                demo.frame_ms = (now - last) * 1e3
            last = now
            if state["save"] or (args.screenshot and frames + 1 == args.frames):
                path = state["save"] or args.screenshot
                screenshot(ctx.screen, path, size)
                print(f"wrote {path}")
                state["save"] = None
            glfw.swap_buffers(window)
            frames += 1
            if now - title_at > 0.5:
                glfw.set_window_title(window, f"pyfftgl filter: {controls.describe()}  "
                                      f"frame {demo.frame_ms or 0:.1f} ms  filter FFT "
                                      f"{demo.renderer.filter_timer.last or 0:.3f} ms")
                title_at = now
        print(f"{frames} frames in {time.perf_counter() - start:.2f} s; " + demo.summary())
        demo.renderer.release()
        return 0
    finally:
        glfw.terminate()


def parser():
    p = argparse.ArgumentParser(prog="python -m demos.filter", description=__doc__)
    p.add_argument("--filter", choices=ORDER, default="bandpass", help="the filter to start with")
    p.add_argument("--set", action="append", default=[], metavar="NAME=VALUE",
                   help="a parameter of that filter, e.g. --set sigma=8 (repeatable)")
    p.add_argument("--image", metavar="PATH",
                   help="any image Pillow reads (default: the test pattern)")
    p.add_argument("--sample", action="store_true", help="start with the bundled picture")
    p.add_argument("--size", type=parse_size, metavar="N|WxH",
                   help="FFT size; a larger picture is shrunk to fit, a smaller one padded with "
                        "black (default: 1024, or an image's own size grown to the next "
                        "2-3-5-smooth size)")
    p.add_argument("--window", type=lambda s: parse_size(s)[::-1], metavar="WxH",
                   help="window or headless framebuffer size (default 1600 wide, two views of the "
                        "picture's aspect side by side: 1600x800 for a square one)")
    p.add_argument("--headless", action="store_true", help="render through EGL without a window")
    p.add_argument("--frames", type=int, help="frames to render, then exit (headless default 3)")
    p.add_argument("--screenshot", metavar="PNG", help="save the last frame")
    p.add_argument("--paused", action="store_true", help="start paused (space toggles)")
    p.add_argument("--sparkles", type=int, default=6,
                   help="wandering lights of the animation (0: none)")
    p.add_argument("--no-vsync", dest="vsync", action="store_false")
    p.add_argument("--half", action="store_true",
                   help="keep the images and spectra in rgba16f (half-float) textures instead of "
                        "rgba32f: half the texture memory and bandwidth; the FFTs still compute "
                        "in float32 (also with --bench)")
    p.add_argument("--bench", action="store_true",
                   help="time the filter on GL against torch.fft and exit")
    p.add_argument("--bench-shapes", default="1024x1024,2048x1024,1920x1080,2048x1152",
                   metavar="WxH,...")
    p.add_argument("--bench-iters", type=int, default=300)
    p.add_argument("--bench-json", metavar="PATH", help="also write the benchmark as JSON")
    return p


def main(argv=None):
    args = parser().parse_args(argv)
    if args.bench:
        from .bench import run_bench
        shapes = [parse_size(s) for s in args.bench_shapes.split(",")]
        return run_bench(shapes, args.bench_iters, args.bench_json, half=args.half)
    shape, pictures = inputs(args)
    if args.window is None:
        args.window = (1600, max(300, round(800 * shape[0] / shape[1])))
    controls = Controls(args.filter, shape)
    for item in args.set:
        key, _, value = item.partition("=")
        controls.set(key, value)
    if args.headless:
        args.frames = 3 if args.frames is None else args.frames
        return run_headless(args, shape, pictures, controls)
    return run_window(args, shape, pictures, controls)
