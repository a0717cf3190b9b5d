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

vec2 cmul(vec2 a, vec2 b) { return vec2(a.x * b.x - a.y * b.y, a.x * b.y + a.y * b.x); }

// Multiply by the transform's i: -i for a forward transform (exp(-2 pi i / 4)), +i for an inverse.
#if INVERSE
vec2 rot_quarter(vec2 a) { return vec2(-a.y, a.x); }
#else
vec2 rot_quarter(vec2 a) { return vec2(a.y, -a.x); }
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
