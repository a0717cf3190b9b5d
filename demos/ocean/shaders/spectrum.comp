#version 430
// Per frame and cascade: h(k,t) = h0(k) e^{iwt} + conj(h0(-k)) e^{-iwt} and its derived spectra,
// packed two real fields per complex field (see physics.py for the conventions and the packing).
#ifndef FIELD_FORMAT
#error "FIELD_FORMAT: the field textures' image format (rgba32f, rgba16f), defined by gpu.py"
#endif
layout(local_size_x = 16, local_size_y = 16) in;

layout(binding = 0) uniform sampler2D h0_tex;     // (h0(k), conj(h0(-k))) as rgba
layout(binding = 1) uniform sampler2D omega_tex;  // w(k), already quantised to the repeat time
// The fields' TextureArray: layer layer0 = (Dx + i h, Dz + i Dxz), layer0 + 1 = (sx + i sz, Dxx + i Dzz)
layout(FIELD_FORMAT, binding = 0) writeonly uniform image2DArray fields;
uniform int layer0;

uniform int size;
uniform float patch_size;
uniform float time;
uniform float choppiness;

vec2 cmul(vec2 a, vec2 b) { return vec2(a.x * b.x - a.y * b.y, a.x * b.y + a.y * b.x); }
vec2 times_i(vec2 a) { return vec2(-a.y, a.x); }

void main() {
    ivec2 p = ivec2(gl_GlobalInvocationID.xy);
    if (p.x >= size || p.y >= size) return;
    // Unshifted grid: index i stands for i or i - N cycles per patch.
    ivec2 m = ivec2(p.x < size / 2 ? p.x : p.x - size, p.y < size / 2 ? p.y : p.y - size);
    vec2 k = vec2(m) * (6.283185307179586 / patch_size);
    float klen = length(k);
    float inv_k = klen > 0.0 ? 1.0 / klen : 0.0;

    vec4 h0 = texelFetch(h0_tex, p, 0);
    float w = texelFetch(omega_tex, p, 0).r;
    // The phase reduced to [-pi, pi] first: GPU sin/cos lose accuracy on large arguments.
    float ph = w * time;
    ph -= 6.283185307179586 * floor(ph * 0.15915494309189535 + 0.5);
    vec2 e = vec2(cos(ph), sin(ph));
    vec2 h = cmul(h0.xy, e) + cmul(h0.zw, vec2(e.x, -e.y));

    vec2 ih = times_i(h);
    vec2 dx = ih * (k.x * inv_k * choppiness);
    vec2 dz = ih * (k.y * inv_k * choppiness);
    vec2 sx = ih * k.x;
    vec2 sz = ih * k.y;
    vec2 dxx = h * (-k.x * k.x * inv_k * choppiness);
    vec2 dzz = h * (-k.y * k.y * inv_k * choppiness);
    vec2 dxz = h * (-k.x * k.y * inv_k * choppiness);

    // A + iB for real fields A, B has spectrum A(k) + i B(k).
    imageStore(fields, ivec3(p, layer0), vec4(dx + times_i(h), dz + times_i(dxz)));
    // sx + i sz written out: NVIDIA's GL compiler (580.159) got it wrong from the helper form.
    vec2 slopes = vec2(sx.x - sz.y, sx.y + sz.x);
    imageStore(fields, ivec3(p, layer0 + 1), vec4(slopes, dxx + times_i(dzz)));
}
