"""Drawing the ocean: sky, displaced polar grid, floating buoy; camera and matrices (numpy)."""
from __future__ import annotations

import dataclasses
import math

import moderngl
import numpy as np

from .gpu import OceanGPU, fade_distances, shader_source


def perspective(fovy_deg, aspect, near, far):
    f = 1.0 / math.tan(math.radians(fovy_deg) / 2.0)
    m = np.zeros((4, 4))
    m[0, 0] = f / aspect
    m[1, 1] = f
    m[2, 2] = (far + near) / (near - far)
    m[2, 3] = 2.0 * far * near / (near - far)
    m[3, 2] = -1.0
    return m


def look_at(eye, forward, up=(0.0, 1.0, 0.0)):
    f = np.asarray(forward, np.float64)
    f = f / np.linalg.norm(f)
    s = np.cross(f, up)
    s /= np.linalg.norm(s)
    u = np.cross(s, f)
    m = np.eye(4)
    m[0, :3], m[1, :3], m[2, :3] = s, u, -f
    m[:3, 3] = -m[:3, :3] @ np.asarray(eye, np.float64)
    return m


def gl_matrix(m):
    """Column-major float32 bytes, as GLSL's mat4 expects."""
    return np.ascontiguousarray(m.T, np.float32).tobytes()


@dataclasses.dataclass
class Camera:
    position: np.ndarray = dataclasses.field(default_factory=lambda: np.array([0.0, 7.0, 0.0]))
    yaw: float = 0.0      # degrees, 0 looks along +x, 90 along +z
    pitch: float = -8.0   # degrees
    fovy: float = 55.0

    @property
    def forward(self):
        y, p = math.radians(self.yaw), math.radians(self.pitch)
        return np.array([math.cos(p) * math.cos(y), math.sin(p), math.cos(p) * math.sin(y)])

    @property
    def right(self):
        y = math.radians(self.yaw)
        return np.array([-math.sin(y), 0.0, math.cos(y)])

    def view_proj(self, aspect):
        return perspective(self.fovy, aspect, 0.1, 20000.0) @ look_at(self.position, self.forward)


def polar_grid(spokes=512, min_spacing=0.15, radius=9000.0):
    """Vertices (metres from the centre) and triangle indices of rings growing geometrically.

    Spacing is about r * 2 pi / spokes at radius r both ways, so triangles stay near square and
    far ones cover about as many pixels as near ones; rings are added until `radius` is reached.
    """
    q = 2.0 * math.pi / spokes
    # r_i = min_spacing * ((1 + q)^i - 1) / q
    rings = int(math.ceil(math.log(radius * q / min_spacing + 1.0) / math.log(1.0 + q)))
    i = np.arange(rings + 1, dtype=np.float64)
    r = min_spacing * ((1.0 + q) ** i - 1.0) / q
    a = np.arange(spokes) * q
    x = np.outer(r, np.cos(a))
    z = np.outer(r, np.sin(a))
    verts = np.stack([x.ravel(), z.ravel()], axis=-1).astype(np.float32)
    ring = np.arange(rings)[:, None] * spokes
    s0 = np.arange(spokes)[None, :]
    s1 = (s0 + 1) % spokes
    v00, v01, v10, v11 = ring + s0, ring + s1, ring + spokes + s0, ring + spokes + s1
    tris = np.stack([v00, v10, v11, v00, v11, v01], axis=-1).reshape(-1, 3)
    return verts, tris.astype(np.int32), q, min_spacing


def buoy_mesh(half=(0.9, 1.4, 0.9)):
    """A box: (position, normal) per vertex, 36 vertices; the shader paints it by height."""
    faces = [((1, 0, 0), (0, 1, 0)), ((-1, 0, 0), (0, 1, 0)), ((0, 1, 0), (0, 0, 1)),
             ((0, -1, 0), (0, 0, 1)), ((0, 0, 1), (0, 1, 0)), ((0, 0, -1), (0, 1, 0))]
    data = []
    for n, u in faces:
        n, u = np.array(n, float), np.array(u, float)
        v = np.cross(n, u)
        for s, t in ((-1, -1), (1, -1), (1, 1), (-1, -1), (1, 1), (-1, 1)):
            data.append([*((n + s * u + t * v) * np.array(half)), *n])
    return np.array(data, np.float32)


def orientation(normal):
    """Rotation taking +y to `normal` (Rodrigues), for the buoy riding the waves."""
    y = np.array([0.0, 1.0, 0.0])
    n = np.asarray(normal, np.float64) / np.linalg.norm(normal)
    v = np.cross(y, n)
    c = float(np.dot(y, n))
    vx = np.array([[0, -v[2], v[1]], [v[2], 0, -v[0]], [-v[1], v[0], 0]])
    return np.eye(3) + vx + vx @ vx / (1.0 + c)


def grid_spokes(width):
    """Spokes for an image `width` pixels wide: a vertex every 2-3 pixels near the horizon."""
    return int(min(1024, max(128, 2 ** round(math.log2(max(width, 1) / 2.5)))))


class OceanRenderer:
    """Draws into whatever framebuffer is bound; owns no simulation state besides GL objects."""

    def __init__(self, ctx: moderngl.Context, sim: OceanGPU, sun_dir=(0.55, 0.22, 0.25),
                 spokes=512):
        self.ctx = ctx
        self.sim = sim
        sun = np.asarray(sun_dir, np.float64)
        self.sun_dir = sun / np.linalg.norm(sun)
        self.sky_prog = ctx.program(vertex_shader=shader_source("sky.vert"),
                                    fragment_shader=shader_source("sky.frag"))
        self.sky_vao = ctx.vertex_array(self.sky_prog, [])
        self.ocean_prog = ctx.program(vertex_shader=shader_source("ocean.vert"),
                                      fragment_shader=shader_source("ocean.frag"))
        verts, tris, self.angular_step, self.min_spacing = polar_grid(spokes)
        self.grid_vbo = ctx.buffer(verts.tobytes())
        self.grid_ibo = ctx.buffer(tris.tobytes())
        self.grid_vao = ctx.vertex_array(self.ocean_prog, [(self.grid_vbo, "2f", "in_pos")],
                                         self.grid_ibo)
        self.buoy_prog = ctx.program(vertex_shader=shader_source("buoy.vert"),
                                     fragment_shader=shader_source("buoy.frag"))
        self.buoy_vbo = ctx.buffer(buoy_mesh().tobytes())
        self.buoy_vao = ctx.vertex_array(self.buoy_prog,
                                         [(self.buoy_vbo, "3f 3f", "in_pos", "in_normal")])
        self.wireframe = False

    def _set(self, prog, name, value):
        if name in prog:
            prog[name].value = value

    def _ocean_uniforms(self):
        p, sim = self.ocean_prog, self.sim
        patches = [c.patch for c in sim.ocean.cascades]
        pad = lambda xs, fill: list(xs) + [fill] * (4 - len(xs))
        self._set(p, "cascades", sim.cascades)
        self._set(p, "inv_patch", pad([1.0 / x for x in patches], 1.0))
        self._set(p, "size", float(sim.size))
        self._set(p, "angular_step", self.angular_step)
        self._set(p, "min_spacing", self.min_spacing)
        self._set(p, "fade_far", pad([min(f, 1e9) for f in fade_distances(patches)], 1e9))
        self._set(p, "slope_variance", pad(sim.ocean.slope_variances, 0.0))
        self._set(p, "foam_weight", pad([0.8, 0.8, 0.6, 0.4][:len(patches)], 0.0))
        self._set(p, "wave_sigma", max(sim.ocean.significant_wave_height() / 4.0, 1e-3))
        self._set(p, "sun_dir", tuple(self.sun_dir))

    def draw(self, camera: Camera, aspect: float, buoy=None):
        """buoy: (position (3,), unit normal (3,)) from the host height query, or None."""
        stage = self.sim.stage
        vp = camera.view_proj(aspect)
        with stage("sky"):
            self._draw_sky(vp, camera)
        with stage("ocean"):
            self._draw_ocean(vp, camera)
        if buoy is not None:
            with stage("buoy"):
                self._draw_buoy(vp, buoy)

    def _draw_sky(self, vp, camera):
        self.ctx.disable(moderngl.DEPTH_TEST | moderngl.CULL_FACE)
        self.sky_prog["inv_view_proj"].write(gl_matrix(np.linalg.inv(vp)))
        self._set(self.sky_prog, "cam_pos", tuple(camera.position))
        self._set(self.sky_prog, "sun_dir", tuple(self.sun_dir))
        self.sky_vao.render(moderngl.TRIANGLES, vertices=3)

    def _draw_ocean(self, vp, camera):
        ctx = self.ctx
        ctx.enable(moderngl.DEPTH_TEST)
        p = self.ocean_prog
        self._ocean_uniforms()
        n = self.sim.cascades
        self.sim.array.use(0)
        for c in range(n):
            self.sim.foam[c].use(8 + c)
        self._set(p, "fields", 0)
        self._set(p, "foam_tex", [8 + c if c < n else 8 for c in range(4)])
        snap = 1.0
        center = np.round(camera.position[[0, 2]] / snap) * snap
        self._set(p, "center", tuple(center))
        p["view_proj"].write(gl_matrix(vp))
        self._set(p, "cam_pos", tuple(camera.position))
        self._set(p, "wireframe", self.wireframe)
        ctx.wireframe = self.wireframe
        self.grid_vao.render(moderngl.TRIANGLES)
        ctx.wireframe = False

    def _draw_buoy(self, vp, buoy):
        pos, normal = buoy
        model = np.eye(4)
        model[:3, :3] = orientation(normal)
        model[:3, 3] = pos
        self.buoy_prog["view_proj"].write(gl_matrix(vp))
        self.buoy_prog["model"].write(gl_matrix(model))
        self._set(self.buoy_prog, "sun_dir", tuple(self.sun_dir))
        self.buoy_vao.render(moderngl.TRIANGLES)

    def release(self):
        for o in (self.sky_vao, self.sky_prog, self.grid_vao, self.grid_vbo, self.grid_ibo,
                  self.ocean_prog, self.buoy_vao, self.buoy_vbo, self.buoy_prog):
            o.release()
