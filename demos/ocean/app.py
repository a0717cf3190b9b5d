"""python -m demos.ocean: the Tessendorf ocean in a GLFW window, headless (EGL) or as a benchmark.

Controls (window): mouse drag = look, WASD = move, Q/E = down/up, Shift = faster, Space = pause,
F = wireframe, 1/2 = wind speed -/+, 3/4 = choppiness -/+, 5/6 = wind direction -/+ 15 degrees,
7/8 = swell -/+, R = new random seed, Esc = quit.
"""
from __future__ import annotations

import argparse
import dataclasses
import math
import sys
import time

import moderngl
import numpy as np

from .gpu import OceanGPU
from .physics import Ocean, OceanParams
from .render import Camera, OceanRenderer, grid_spokes

DEFAULT_PATCHES = OceanParams().patch_sizes


class OceanApp:
    """Simulation + renderer + camera + the floating buoy; `frame(dt)` does one frame's GPU work."""

    def __init__(self, ctx, params: OceanParams, width=1280, buoy_xz=(28.0, -4.0), half=False):
        self.ctx = ctx
        self.params = params
        self.ocean = Ocean(params)
        # Software rasterisers (llvmpipe) pay for every anisotropic tap; GPUs barely notice.
        software = "llvmpipe" in ctx.info["GL_RENDERER"] or "softpipe" in ctx.info["GL_RENDERER"]
        self.sim = OceanGPU(ctx, self.ocean, anisotropy=1.0 if software else 8.0, half=half)
        self.renderer = OceanRenderer(ctx, self.sim, spokes=grid_spokes(width))
        self.camera = Camera()
        self.time = 0.0
        self.paused = False
        self.buoy_xz = buoy_xz
        self.buoy = None

    def set_params(self, **changes):
        """A new sea state (new h0 on the host, uploaded once); the FFT size stays."""
        self.params = dataclasses.replace(self.params, **changes)
        self.ocean = Ocean(self.params)
        self.sim.set_ocean(self.ocean)

    def frame(self, dt, aspect, timed=False):
        if not self.paused:
            self.time += dt
        t = self.time
        if self.params.repeat_time > 0:
            t = math.fmod(t, self.params.repeat_time)   # keeps w t small for float32 phases
        self.sim.step(t, 0.0 if self.paused else dt, timed=timed)
        # The buoy: the one host-side query per frame, from the same spectra (no read-back).
        h, n = self.ocean.height_at(np.array(self.buoy_xz[0]), np.array(self.buoy_xz[1]), t)
        # The box's centre 0.4 m above the surface along the normal: it floats two thirds under.
        pos = np.array([self.buoy_xz[0], float(h), self.buoy_xz[1]]) + 0.4 * np.asarray(n)
        self.buoy = (pos, np.asarray(n))
        self.renderer.draw(self.camera, aspect, self.buoy)

    def release(self):
        self.renderer.release()
        self.sim.release()


def parse_args(argv=None):
    ap = argparse.ArgumentParser(prog="python -m demos.ocean", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--headless", action="store_true", help="render through EGL without a window")
    ap.add_argument("--frames", type=int, default=None,
                    help="frames to render, then exit (headless: default 120, each 1/30 s)")
    ap.add_argument("--screenshot", default=None, help="headless: write the last frame to this PNG")
    ap.add_argument("--size", default="1280x720",
                    help="window or image size: WxH or one number for a square")
    ap.add_argument("--fft-size", type=int, default=256, choices=(256, 512, 1024, 2048))
    ap.add_argument("--cascades", type=int, default=4, choices=(1, 2, 3, 4))
    ap.add_argument("--spectrum", default="jonswap", choices=("jonswap", "phillips"))
    ap.add_argument("--wind", type=float, default=OceanParams.wind_speed, help="wind speed, m/s")
    ap.add_argument("--wind-direction", type=float, default=OceanParams.wind_direction,
                    help="degrees")
    ap.add_argument("--fetch", type=float, default=OceanParams.fetch, help="metres")
    ap.add_argument("--depth", type=float, default=OceanParams.depth, help="metres")
    ap.add_argument("--swell", type=float, default=OceanParams.swell, help="0..1")
    ap.add_argument("--choppiness", type=float, default=OceanParams.choppiness)
    ap.add_argument("--patch", default=None,
                    help="patch sizes in metres, comma separated, largest first")
    ap.add_argument("--seed", type=int, default=OceanParams.seed)
    ap.add_argument("--repeat-time", type=float, default=0.0,
                    help="seconds after which the animation loops")
    ap.add_argument("--half", action="store_true",
                    help="keep the spectra and fields the FFT reads and writes in rgba16f "
                         "(half-float) textures instead of rgba32f: half their memory and "
                         "bandwidth; the FFT still computes in float32 (also with --bench)")
    ap.add_argument("--bench", action="store_true",
                    help="time the FFTs, whole frames and each stage of a frame "
                         "(docs/ocean-demo.md)")
    ap.add_argument("--json", default=None, help="--bench: also write the numbers to this file")
    return ap.parse_args(argv)


def image_size(text):
    w, _, h = text.lower().partition("x")
    return int(w), int(h or w)


def params_from(args) -> OceanParams:
    if args.patch:
        patches = tuple(float(p) for p in args.patch.split(","))
    else:
        patches = DEFAULT_PATCHES[:args.cascades]
    return OceanParams(spectrum=args.spectrum, wind_speed=args.wind,
                       wind_direction=args.wind_direction, fetch=args.fetch, depth=args.depth,
                       swell=args.swell, choppiness=args.choppiness, size=args.fft_size,
                       patch_sizes=patches, seed=args.seed, repeat_time=args.repeat_time)


def offscreen(ctx, size):
    return ctx.framebuffer(color_attachments=[ctx.renderbuffer(size, 4)],
                           depth_attachment=ctx.depth_renderbuffer(size))


def read_image(fbo, size):
    """The framebuffer as (H, W, 3) uint8, top row first (GL's rows start at the bottom)."""
    w, h = size
    return np.frombuffer(fbo.read(components=3), np.uint8).reshape(h, w, 3)[::-1]


def run_headless(args):
    size = image_size(args.size)
    ctx = moderngl.create_standalone_context(require=430, backend="egl")
    app = OceanApp(ctx, params_from(args), width=size[0], half=args.half)
    fbo = offscreen(ctx, size)
    fbo.use()
    t0 = time.perf_counter()
    frames = 120 if args.frames is None else args.frames
    for _ in range(frames):
        fbo.clear(0.0, 0.0, 0.0, 1.0, depth=1.0)
        app.frame(1.0 / 30.0, size[0] / size[1])
    ctx.finish()
    elapsed = time.perf_counter() - t0
    print(f"{frames} frames at {size[0]}x{size[1]}, {app.sim.cascades} x {app.params.size}^2: "
          f"{1e3 * elapsed / max(frames, 1):.1f} ms/frame ({ctx.info['GL_RENDERER']})"
          + (f", {app.sim.field_format} fields" if args.half else ""))
    if args.screenshot:
        from PIL import Image
        Image.fromarray(read_image(fbo, size)).save(args.screenshot)
        print(f"wrote {args.screenshot}")
    app.release()
    return 0


def open_window(size):
    """A GLFW window with an OpenGL 4.3 core context made current, or None (said why)."""
    import glfw

    if not glfw.init():
        print("GLFW could not initialise (no display?); try --headless", file=sys.stderr)
        return None
    glfw.window_hint(glfw.CONTEXT_VERSION_MAJOR, 4)
    glfw.window_hint(glfw.CONTEXT_VERSION_MINOR, 3)
    glfw.window_hint(glfw.OPENGL_PROFILE, glfw.OPENGL_CORE_PROFILE)
    window = glfw.create_window(size[0], size[1], "pyfftgl ocean", None, None)
    if not window:
        glfw.terminate()
        print("GLFW could not open an OpenGL 4.3 window; try --headless", file=sys.stderr)
        return None
    glfw.make_context_current(window)
    glfw.swap_interval(1)
    return window


def install_controls(window, app, state):
    """The keyboard and mouse callbacks: sea-state keys, pause, wireframe, drag to look."""
    import glfw

    def on_key(win, key, scancode, action, mods):
        if action != glfw.PRESS:
            return
        p = app.params
        changes = {
            glfw.KEY_1: {"wind_speed": max(1.0, p.wind_speed - 1.0)},
            glfw.KEY_2: {"wind_speed": p.wind_speed + 1.0},
            glfw.KEY_3: {"choppiness": max(0.0, p.choppiness - 0.1)},
            glfw.KEY_4: {"choppiness": p.choppiness + 0.1},
            glfw.KEY_5: {"wind_direction": p.wind_direction - 15.0},
            glfw.KEY_6: {"wind_direction": p.wind_direction + 15.0},
            glfw.KEY_7: {"swell": max(0.0, p.swell - 0.1)},
            glfw.KEY_8: {"swell": min(1.0, p.swell + 0.1)},
            glfw.KEY_R: {"seed": p.seed + 1},
        }
        if key == glfw.KEY_ESCAPE:
            glfw.set_window_should_close(win, True)
        elif key == glfw.KEY_SPACE:
            app.paused = not app.paused
        elif key == glfw.KEY_F:
            app.renderer.wireframe = not app.renderer.wireframe
        elif key in changes:
            app.set_params(**changes[key])

    def on_button(win, button, action, mods):
        state["drag"] = glfw.get_cursor_pos(win) if action == glfw.PRESS else None

    def on_cursor(win, x, y):
        if state["drag"] is not None:
            x0, y0 = state["drag"]
            app.camera.yaw += 0.15 * (x - x0)
            app.camera.pitch = float(np.clip(app.camera.pitch - 0.15 * (y - y0), -89.0, 89.0))
            state["drag"] = (x, y)

    glfw.set_key_callback(window, on_key)
    glfw.set_mouse_button_callback(window, on_button)
    glfw.set_cursor_pos_callback(window, on_cursor)


def move_camera(window, cam, dt):
    """WASD / Q / E move the camera, faster with Shift."""
    import glfw

    speed = 40.0 if glfw.get_key(window, glfw.KEY_LEFT_SHIFT) == glfw.PRESS else 8.0
    up = np.array([0.0, 1.0, 0.0])
    for key, vec in ((glfw.KEY_W, cam.forward), (glfw.KEY_S, -cam.forward),
                     (glfw.KEY_D, cam.right), (glfw.KEY_A, -cam.right),
                     (glfw.KEY_E, up), (glfw.KEY_Q, -up)):
        if glfw.get_key(window, key) == glfw.PRESS:
            cam.position = cam.position + vec * speed * dt


def update_title(window, app, args, state, now):
    """Every half second: FPS, the FFT's GPU time and the sea state in the window's title."""
    import glfw

    if now - state["t_title"] <= 0.5:
        return
    fps = state["n_title"] / (now - state["t_title"])
    p = app.params
    storage = f", {app.sim.field_format}" if args.half else ""
    title = (f"pyfftgl ocean | {fps:.0f} FPS | FFT {app.sim.fft_time_ms():.3f} ms GPU "
             f"({app.sim.cascades} x {p.size}^2 x 4 fields{storage}) | "
             f"U {p.wind_speed:.0f} m/s "
             f"dir {p.wind_direction:.0f} chop {p.choppiness:.1f} swell {p.swell:.1f}")
    glfw.set_window_title(window, title + (" | paused" if app.paused else ""))
    state["t_title"], state["n_title"] = now, 0


def run_window(args, max_frames=None):
    import glfw

    size = image_size(args.size)
    window = open_window(size)
    if window is None:
        return 2
    ctx = moderngl.create_context(require=430)
    app = OceanApp(ctx, params_from(args), width=size[0], half=args.half)
    state = {"drag": None, "frames": 0, "t_title": time.perf_counter(), "n_title": 0}
    install_controls(window, app, state)
    last = time.perf_counter()
    while not glfw.window_should_close(window):
        now = time.perf_counter()
        dt, last = min(now - last, 0.1), now
        move_camera(window, app.camera, dt)
        w, h = glfw.get_framebuffer_size(window)
        ctx.screen.use()
        ctx.viewport = (0, 0, w, h)
        ctx.clear(0.0, 0.0, 0.0, 1.0, depth=1.0)
        app.frame(dt, w / max(h, 1), timed=True)
        glfw.swap_buffers(window)
        glfw.poll_events()
        state["frames"] += 1
        state["n_title"] += 1
        update_title(window, app, args, state, now)
        if max_frames is not None and state["frames"] >= max_frames:
            break
    frames = state["frames"]
    app.release()
    glfw.destroy_window(window)
    glfw.terminate()
    print(f"window closed after {frames} frames")
    return 0


def main(argv=None):
    args = parse_args(argv)
    if args.bench:
        from .bench import run_bench
        return run_bench(args)
    if args.headless:
        return run_headless(args)
    return run_window(args, max_frames=args.frames)

