#version 430
in vec2 v_ndc;
out vec4 frag;
uniform mat4 inv_view_proj;
uniform vec3 cam_pos;
#include "sky.glsl"
void main() {
    vec4 p = inv_view_proj * vec4(v_ndc, 1.0, 1.0);
    vec3 d = normalize(p.xyz / p.w - cam_pos);
    frag = vec4(tonemap(sky_color(d, true)), 1.0);
}
