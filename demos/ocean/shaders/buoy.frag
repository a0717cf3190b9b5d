#version 430
in vec3 v_normal;
in vec3 v_color;
in vec3 v_world;
out vec4 frag;
uniform vec3 cam_pos;
#include "sky.glsl"
void main() {
    vec3 n = normalize(v_normal);
    vec3 ambient = sky_color(normalize(n + vec3(0.0, 1.0, 0.0)), false) * 0.6;
    vec3 col = v_color * (ambient + SUN_COLOR * 1.2 * max(dot(n, sun_dir), 0.0));
    frag = vec4(tonemap(col), 1.0);
}
