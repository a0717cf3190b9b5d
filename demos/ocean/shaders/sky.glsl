// Shared by the sky, the water and the buoy: one procedural sky, one tone map (linear -> sRGB).
uniform vec3 sun_dir;      // unit vector towards the sun

const vec3 SUN_COLOR = vec3(1.0, 0.86, 0.68);

vec3 sky_color(vec3 d, bool with_sun_disk) {
    float y = d.y;
    float mu = max(dot(d, sun_dir), 0.0);
    vec3 zenith = vec3(0.05, 0.16, 0.46);
    vec3 horizon = vec3(0.42, 0.57, 0.76);
    vec3 col = mix(horizon, zenith, pow(clamp(y, 0.0, 1.0), 0.45));
    // Below the horizon the sky is seen only in reflections of the far haze.
    col = y < 0.0 ? horizon * (0.85 + 0.15 * exp(8.0 * y)) : col;
    col += SUN_COLOR * (0.25 * pow(mu, 8.0) + 0.6 * pow(mu, 64.0));
    if (with_sun_disk) col += SUN_COLOR * 40.0 * smoothstep(0.99975, 0.99990, mu);
    return col;
}

vec3 tonemap(vec3 c) {
    c *= 1.1;
    c = (c * (2.51 * c + 0.03)) / (c * (2.43 * c + 0.59) + 0.14);   // Narkowicz's ACES fit
    return pow(clamp(c, 0.0, 1.0), vec3(1.0 / 2.2));
}
