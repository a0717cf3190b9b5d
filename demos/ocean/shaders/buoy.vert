#version 430
in vec3 in_pos;
in vec3 in_normal;
in vec3 in_color;
uniform mat4 view_proj;
uniform mat4 model;
out vec3 v_normal;
out vec3 v_color;
out vec3 v_world;
void main() {
    vec4 w = model * vec4(in_pos, 1.0);
    v_world = w.xyz;
    v_normal = mat3(model) * in_normal;
    v_color = in_color;
    gl_Position = view_proj * w;
}
