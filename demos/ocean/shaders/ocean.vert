#version 430
// A polar grid around the camera, displaced by the sum of every cascade's (Dx, h, Dz).
in vec2 in_pos;            // metres from the grid centre
uniform vec2 center;       // the camera's x, z snapped to a fixed step
uniform mat4 view_proj;
uniform int cascades;
uniform float inv_patch[4];
uniform float size;        // N
uniform float angular_step;// the grid's angle between spokes, radians
uniform float min_spacing; // the grid's spacing at its centre, metres
uniform sampler2DArray fields;  // cascade c: layers 2c (Dx, h, Dz, Dxz), 2c + 1

out vec2 v_xz;             // undisplaced point: where the fragment looks up slopes and foam
out vec3 v_world;
out float v_height;

void main() {
    vec2 xz = center + in_pos;
    // Far vertices are sparse: read the mip level whose texels match their spacing (no aliasing).
    float spacing = max(length(in_pos) * angular_step, min_spacing);
    vec3 d = vec3(0.0);
    for (int c = 0; c < 4; ++c) {
        if (c >= cascades) break;
        float lod = max(0.0, log2(spacing * size * inv_patch[c]));
        d += textureLod(fields, vec3(xz * inv_patch[c] + 0.5 / size, 2 * c), lod).xyz;
    }
    v_xz = xz;
    v_world = vec3(xz.x + d.x, d.y, xz.y + d.z);
    v_height = d.y;
    gl_Position = view_proj * vec4(v_world, 1.0);
}
