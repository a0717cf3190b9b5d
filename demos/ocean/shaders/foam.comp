#version 430
// Foam of one cascade: where its surface folds (Jacobian below a bias) foam is injected, and all
// foam decays exponentially. Each texel reads and writes only itself, so one texture is updated in
// place instead of ping-ponging two.
layout(local_size_x = 16, local_size_y = 16) in;

layout(binding = 0) uniform sampler2DArray fields;  // layer0: (Dx, h, Dz, Dxz); +1: (sx, sz, Dxx, Dzz)
uniform int layer0;
layout(r32f, binding = 0) uniform image2D foam;

uniform int size;
uniform float decay;        // fraction of the foam left after one second
uniform float bias;         // Jacobian below which foam forms
uniform float gain;         // foam injected per second per unit of (bias - J)
uniform float dt;

void main() {
    ivec2 p = ivec2(gl_GlobalInvocationID.xy);
    if (p.x >= size || p.y >= size) return;
    float dxz = texelFetch(fields, ivec3(p, layer0), 0).w;
    vec2 d = texelFetch(fields, ivec3(p, layer0 + 1), 0).zw;
    float jac = (1.0 + d.x) * (1.0 + d.y) - dxz * dxz;
    float f = imageLoad(foam, p).r * pow(decay, dt) + gain * dt * max(bias - jac, 0.0);
    imageStore(foam, p, vec4(min(f, 4.0)));
}
