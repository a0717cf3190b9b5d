"""Transform -> list of passes. Pure Python: no GPU, no backend imports (limits come from
pyfftgl.limits).

The planner decides the factorisation of a length into radices, their order, the workgroup shape,
and how many lines a submission may hold. Its parts:
  abi       what the kernels and Python share (push constants, sizes)
  records   typed records crossing modules: Step, table keys, TunedShape
  rules     radices, workgroup shapes, shared-memory sizing, each pass's decisions
  passes    the pass records (StockhamPass, RealPass, Layout) and their preamble
  tables    the contents of the tables the passes name
  storage   buffers or images, precision, fields; emit(): each pass's preamble with its tables
  elements  element passes (one invocation per element: DCT/DST pre/post, windows, products)
  factors   the one-dispatch pass for a length, and how longer axes split (four-step, Bluestein)
  spec      the plan record (TransformSpec, AxisView), norm scaling, buffer naming
  axis      one axis' passes: one pass, a four-step chain, or Bluestein's convolution
  fusion    real pack/unpack fused into FFT passes; row passes handing over in blocks
  dispatch  chunk units per submission; a pass's workgroups split into dispatches
  compose   steps -> the passes of a transform (plan_steps, plan_c2c, plan_fft)
  candidates  the shapes `pyfftgl bench --tune` times
  textures  2D FFTs on textures: their limits and storage layout (TextureCall -> TexturePlan)
Every public name other modules use is importable from here (underscored helpers stay private to
their modules).
"""
from .abi import (COMPLEX64_BYTES, FLOAT_BYTES, FOURSTEP_LO_LEN, MAX_WORKGROUP_INVOCATIONS,
                  PUSH_NAMES, REALFFT_GROUP)
from .compose import bounded_input, plan_c2c, plan_fft, plan_steps, tighter
from .dispatch import dispatch_grids, groups_per_dispatch, split_groups
from .elements import (DFT_ROWS_MAX, ElementPass, blocks_pass, local_size, overlap_add_pass,
                       product_dft_pass, product_pass, window_passes)
from .factors import smooth_length, stockham_pass
from .roots import unit_roots
from .passes import Layout, RealPass, StockhamPass, float_literal, odd_radix_tables
from .records import (BluesteinKernelKey, ChirpKey, FourstepHiKey, FourstepLoKey, StageKey, Step,
                      TunedShape, TwiddleKey, is_real_key, key_length, real_key,
                      tiled_key)
from .rules import (AXIS_TILE_LINES, BLOCK_COLUMNS, BLOCK_ROW_LINES, FOURSTEP_STRIDED_MAX,
                    FOURSTEP_TILE_LINES, MAX_REGISTERS, RADICES, REGISTER_TARGET, SH_PAD,
                    TARGET_INVOCATIONS, TILE_LINES, UNPACK_REGS_MIN_N, UNTILED_AXIS_STAGES,
                    prime_factors, radices_for, register_cap, tuned_shape)
from .storage import (IMAGE_FORMATS, Emitted, ImageFormat, Storage, element_limits, emit,
                      image_format, precision_of)
from .tables import bluestein_chirp, bluestein_kernel, build_table, twiddle_table
from .candidates import shape_candidates
from .spec import AxisView, TransformSpec, assign_buffers, norm_scale
from .textures import (ROW_LINES, TEXTURE_INTERMEDIATES, TEXTURE_KINDS, TWO_FIELD_SHAPES,
                       TextureCall, TexturePlan, between_format, check_texture_overlaps,
                       convolve_calls, texture_limits, texture_plan, texture_sets,
                       texture_storage, transform_call, work_format)
