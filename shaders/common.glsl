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

// PRECISION 64: every value is a double (REAL), a complex value a VEC2 = dvec2, tables included
// (built in float64 on the host); 32: float and vec2. Literals that are not exact in float carry
// the lf suffix in double (the preamble's SCALE, ODD_COS and ODD_SIN do: glslang cannot paste it).
#ifndef PRECISION
#define PRECISION 32
#endif
#if PRECISION == 64
#define REAL double
#define VEC2 dvec2
#define VEC4 dvec4
#define SQRT1_2 0.70710678118654752440lf
#define COS_PI_8 0.92387953251128675613lf
#define SIN_PI_8 0.38268343236508977173lf
#elif PRECISION == 32
#define REAL float
#define VEC2 vec2
#define VEC4 vec4
#define SQRT1_2 0.70710678118654752
#define COS_PI_8 0.92387953251128674
#define SIN_PI_8 0.38268343236508977
#else
#error "PRECISION is 32 or 64"
#endif

// FIELDS = 2: every element is two complex values (vec4: re0, im0, re1, im1; an rgba32f texel),
// transformed in the same butterflies with the same twiddles. CPLX is the element type, RE / IM
// swizzle its real / imaginary parts (a HALF each).
#ifndef FIELDS
#define FIELDS 1
#endif
#if FIELDS == 2
#define CPLX VEC4
#define HALF VEC2
#define RE xz
#define IM yw
#elif FIELDS == 1
#define CPLX VEC2
#define HALF REAL
#define RE x
#define IM y
#else
#error "FIELDS is 1 or 2"
#endif

VEC2 cmul(VEC2 a, VEC2 b) { return VEC2(a.x * b.x - a.y * b.y, a.x * b.y + a.y * b.x); }
VEC4 cmul(VEC4 a, VEC2 w) { return VEC4(cmul(a.xy, w), cmul(a.zw, w)); }
VEC4 cmul(VEC4 a, VEC4 b) { return VEC4(cmul(a.xy, b.xy), cmul(a.zw, b.zw)); }

// Multiply by the transform's i: -i for a forward transform (exp(-2 pi i / 4)), +i for an inverse.
#if INVERSE
VEC2 rot_quarter(VEC2 a) { return VEC2(-a.y, a.x); }
VEC4 rot_quarter(VEC4 a) { return VEC4(-a.y, a.x, -a.w, a.z); }
#else
VEC2 rot_quarter(VEC2 a) { return VEC2(a.y, -a.x); }
VEC4 rot_quarter(VEC4 a) { return VEC4(a.y, -a.x, a.w, -a.z); }
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
