#version 430
in vec3 in_pos;
in vec3 in_normal;
uniform mat4 view_proj;
uniform mat4 model;
out vec3 v_normal;
out float v_y;             // height in the buoy's own frame: picks the paint band
void main() {
    v_normal = mat3(model) * in_normal;
    v_y = in_pos.y;
    gl_Position = view_proj * model * vec4(in_pos, 1.0);
}
