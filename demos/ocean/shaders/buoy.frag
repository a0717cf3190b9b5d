#version 430
in vec3 v_normal;
in float v_y;
out vec4 frag;
#include "sky.glsl"
void main() {
    vec3 n = normalize(v_normal);
    vec3 paint = (v_y > 0.55 && v_y < 0.95) ? vec3(0.9, 0.9, 0.85) : vec3(0.8, 0.06, 0.02);
    // Ambient: half sky, half grey, so the sky's blue does not turn the red hull purple.
    vec3 ambient = 0.35 * (0.5 * sky_color(normalize(n + vec3(0.0, 1.0, 0.0)), false) + vec3(0.25));
    vec3 col = paint * (ambient + SUN_COLOR * 1.5 * max(dot(n, sun_dir), 0.0));
    frag = vec4(tonemap(col), 1.0);
}
