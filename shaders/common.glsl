// Shared by every pyfftgl kernel. The preamble (pyfftgl/shaders.py) has already defined API_VULKAN or
// not, and each kernel's size parameters.

// Loops over registers must be unrolled, or the register arrays they index go to local memory.
// Vulkan: the SPIR-V Unroll loop control (GL_EXT_control_flow_attributes); GL: NVIDIA's pragma
// (other GL compilers ignore it and unroll constant-trip loops by themselves).
#ifdef API_VULKAN
#extension GL_EXT_control_flow_attributes : require
#define UNROLL [[unroll]]
#else
#pragma optionNV(unroll all)
#define UNROLL
#endif

// Push constants: Vulkan push constants, or a uniform struct on GL (its members are set by name,
// "pc.<member>", by the GL backend). Members are uint32 in declaration order.
#ifdef API_VULKAN
#define PUSH_CONSTANTS(members) layout(push_constant) uniform PushBlock { members } pc;
#else
#define PUSH_CONSTANTS(members) struct PushBlock { members }; uniform PushBlock pc;
#endif

// FIELDS = 2: every element is two complex values (vec4: re0, im0, re1, im1; an rgba32f texel),
// transformed in the same butterflies with the same twiddles. CPLX is the element type, RE / IM
// swizzle its real / imaginary parts (a HALF each).
#ifndef FIELDS
#define FIELDS 1
#endif
#if FIELDS == 2
#define CPLX vec4
#define HALF vec2
#define RE xz
#define IM yw
#elif FIELDS == 1
#define CPLX vec2
#define HALF float
#define RE x
#define IM y
#else
#error "FIELDS is 1 or 2"
#endif

vec2 cmul(vec2 a, vec2 b) { return vec2(a.x * b.x - a.y * b.y, a.x * b.y + a.y * b.x); }
vec4 cmul(vec4 a, vec2 w) { return vec4(cmul(a.xy, w), cmul(a.zw, w)); }
vec4 cmul(vec4 a, vec4 b) { return vec4(cmul(a.xy, b.xy), cmul(a.zw, b.zw)); }

// Multiply by the transform's i: -i for a forward transform (exp(-2 pi i / 4)), +i for an inverse.
#if INVERSE
vec2 rot_quarter(vec2 a) { return vec2(-a.y, a.x); }
vec4 rot_quarter(vec4 a) { return vec4(-a.y, a.x, -a.w, a.z); }
#else
vec2 rot_quarter(vec2 a) { return vec2(a.y, -a.x); }
vec4 rot_quarter(vec4 a) { return vec4(a.y, -a.x, a.w, -a.z); }
#endif

// The workgroup's number in a grid split into (base, gx, gy) dispatches (planner.split_groups).
uint flat_group_id(uint base) { return base + gl_WorkGroupID.x + gl_WorkGroupID.y * gl_NumWorkGroups.x; }

// Where element s of a buffer of images of R rows of C values (s = image R C + row C + column)
// lives when each row's columns are stored in blocks of B, the rows of a block neighbours: a
// workgroup writing B-aligned columns of neighbouring rows, or reading B neighbouring columns
// of all rows, then moves runs of B values or more (planner.Layout.blocked).
#define BLOCKED_ADDR(s, B, R, C) \
    ((s) / ((R) * (C)) * ((R) * (C)) + (s) % (C) / (B) * ((B) * (R)) \
     + (s) / (C) % (R) * (B) + (s) % (B))
