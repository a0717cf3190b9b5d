// Copy lines_total vec4s from binding 0 to binding 1: the device's copy bandwidth, measured with
// the same API, timers and buffers as the FFT kernels, as the benchmark's reference.

#include "common.glsl"

layout(local_size_x = 256, local_size_y = 1, local_size_z = 1) in;

layout(std430, binding = 0) readonly buffer Src { vec4 src[]; };
layout(std430, binding = 1) writeonly buffer Dst { vec4 dst[]; };

PUSH_CONSTANTS(uint lines_total; uint group_base; uint in_len; uint in_batch; uint out_len;
               uint out_batch;)

void main() {
    uint i = flat_group_id(pc.group_base) * 256u + gl_LocalInvocationID.x;
    if (i < pc.lines_total) dst[i] = src[i];
}
