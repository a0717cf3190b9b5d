#version 430
in vec2 v_xz;
in vec3 v_world;
in float v_height;
out vec4 frag;

uniform vec3 cam_pos;
uniform int cascades;
uniform float inv_patch[4];
uniform float size;
uniform float fade_far[4];       // distance where a cascade's detail has faded out
uniform float slope_variance[4]; // each cascade's mean square slope: faded detail becomes roughness
uniform float foam_weight[4];
uniform float wave_sigma;        // standard deviation of the height, metres
uniform sampler2DArray fields;   // cascade c: layers 2c (Dx, h, Dz, Dxz), 2c + 1 (sx, sz, Dxx, Dzz)
uniform sampler2D foam_tex[4];
uniform bool wireframe;
#include "sky.glsl"

const vec3 DEEP = vec3(0.004, 0.018, 0.040);
const vec3 SCATTER = vec3(0.020, 0.120, 0.120);

void main() {
    if (wireframe) { frag = vec4(0.05, 0.2, 0.35, 1.0); return; }   // dark lines over the sky
    float dist = length(v_world - cam_pos);
    vec2 s = vec2(0.0);
    float dxx = 0.0, dzz = 0.0, dxz = 0.0, foam = 0.0, lost = 0.0;
    for (int c = 0; c < 4; ++c) {
        if (c >= cascades) break;
        // Small cascades fade with distance, which also hides their tiling.
        float w = c == 0 ? 1.0 : 1.0 - smoothstep(0.25 * fade_far[c], fade_far[c], dist);
        vec2 uv = v_xz * inv_patch[c] + 0.5 / size;
        vec4 f1 = texture(fields, vec3(uv, 2 * c + 1));
        s += w * f1.xy;
        dxx += w * f1.z;
        dzz += w * f1.w;
        dxz += w * texture(fields, vec3(uv, 2 * c)).w;
        foam += w * foam_weight[c] * texture(foam_tex[c], uv).r;
        lost += (1.0 - w) * slope_variance[c];
    }
    // Normal of the displaced surface: cross(dP/dz, dP/dx), dP/dx = (1 + Dxx, sx, Dxz),
    // dP/dz = (Dxz, sz, 1 + Dzz).
    float jac = (1.0 + dxx) * (1.0 + dzz) - dxz * dxz;
    vec3 n = normalize(vec3(s.y * dxz - (1.0 + dzz) * s.x, max(jac, 0.05),
                            dxz * s.x - s.y * (1.0 + dxx)));
    foam = smoothstep(0.3, 0.9, foam);   // crisp edges: whitecaps, not haze

    vec3 v = normalize(cam_pos - v_world);
    vec3 l = sun_dir;
    float ndv = max(dot(n, v), 1e-3);
    float ndl = max(dot(n, l), 0.0);
    // Roughness: calm water, the slopes that faded cascades and mip levels no longer show, foam.
    float alpha2 = 0.0025 + 0.5 * lost + 4e-7 * dist + 0.3 * foam;
    float alpha = sqrt(alpha2);

    vec3 r = reflect(-v, n);
    r.y = abs(r.y);
    float fresnel = 0.02 + 0.98 * pow(1.0 - ndv, 5.0) / (1.0 + 6.0 * alpha);
    vec3 reflection = sky_color(r, false);

    // Subsurface: light through the thin crests facing away from the sun (Atlas-style terms).
    float crest = clamp(v_height / (2.0 * wave_sigma) + 0.5, 0.0, 2.0);
    float back = pow(max(dot(v, -l), 0.0), 4.0) * pow(0.5 - 0.5 * dot(l, n), 3.0);
    vec3 body = DEEP * (0.4 + 0.6 * max(l.y, 0.0)) + SCATTER * (0.12 * crest + 2.5 * back * crest)
              + SCATTER * 0.15 * pow(max(dot(v, n), 0.0), 2.0) * max(l.y, 0.0);

    // Sun: GGX distribution with Schlick's Fresnel.
    vec3 hv = normalize(l + v);
    float ndh = max(dot(n, hv), 0.0);
    float dd = ndh * ndh * (alpha2 - 1.0) + 1.0;
    float ggx = alpha2 / (3.14159265 * dd * dd);
    float fs = 0.02 + 0.98 * pow(1.0 - max(dot(hv, v), 0.0), 5.0);
    vec3 spec = SUN_COLOR * 6.0 * ggx * fs * ndl / (4.0 * ndv + 1e-3);

    vec3 col = mix(body, reflection, fresnel) + spec * (1.0 - foam);
    vec3 foam_col = vec3(0.85, 0.9, 0.92) * (0.35 + 0.65 * ndl)
                  * (0.5 + 0.5 * sky_color(vec3(0, 1, 0), false));
    col = mix(col, foam_col, foam);

    // Aerial perspective towards the horizon haze.
    vec3 view_dir = -v;
    vec3 haze = sky_color(normalize(vec3(view_dir.x, max(view_dir.y, 0.0), view_dir.z)), false);
    col = mix(col, haze, 1.0 - exp(-dist / 6000.0));
    frag = vec4(tonemap(col), 1.0);
}
