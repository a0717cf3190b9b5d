"""python -m pyfftgl bench: GPU and host time of pyfftgl against the CPU libraries and, where
importable, cuFFT (torch.fft, cupy.fft) and VkFFT (pyvkfft), in one run.

GPU time comes from Vulkan timestamps / GL timer queries around a plan's dispatches (device-resident
data, no transfers); host time is the wall time of one device-resident call, submission and wait
included. The loop (`--loop`, and the loop cases of a full run) is the wall-clock time per call of
many back-to-back device-resident calls ended by one device finish, as a render loop runs them,
next to torch.fft eager running the same loop. GFLOP/s counts 5 N log2 N per transform; GB/s
counts 16 bytes per complex element per pass of the plan (32 in double, `--double`); "% copy"
compares that with the device's copy bandwidth measured first with the same API. Records go to
bench/results/<device-slug>.json (one file per device, merged by case), plots next to it when
matplotlib is installed.

The library never imports this package. Its parts: cases (what is timed), timing (how pyfftgl is
timed), reference (numpy, scipy, torch.fft, cupy), sweep (the run and its results file), plot
(plots and tables), tuner (`bench --tune`), vkfloor and vkstats (Vulkan driver probes in plain
ctypes; `python -m pyfftgl.bench.vkstats` prints what the driver compiled a kernel to).
"""
from __future__ import annotations

import dataclasses
from pathlib import Path

from . import timing, tuner
from .cases import Case, batched_case, case_input, default_cases, loop_cases
from .plot import loop_table, plot, table
from .sweep import run, write
from .timing import (best_of, copy_gbps, loop_us, pass_ms, plan_loop, random_fill,
                     submission_floor_ms)
from .tuner import TILED_GAIN, TUNE_SIZES, TUNE_TILED, tune

__all__ = ["Case", "batched_case", "case_input", "default_cases", "loop_cases", "run", "write",
           "plot", "table", "loop_table", "best_of", "copy_gbps", "loop_us", "pass_ms",
           "plan_loop", "random_fill", "submission_floor_ms", "tune", "TUNE_SIZES", "TUNE_TILED",
           "TILED_GAIN", "timing", "tuner", "select_cases", "cli"]


def select_cases(args) -> tuple[list[Case], set[str]]:
    """The cases a `bench` command line asks for, and the names of those it also loops: a full
    run (no --only) loops the loop cases; --loop runs only those and loops every case it runs."""
    elements = args.elements or (2**20 if args.quick else 2**26)
    looped = loop_cases(elements, args.quick)
    cases = looped if args.loop else default_cases(elements, args.quick)
    if args.only is not None:  # `--only` alone: none of the groups (with --lengths)
        cases = [c for c in cases if c.group in args.only]
    cases += [batched_case(n, elements) for n in args.lengths]
    if getattr(args, "double", False):  # every case in double precision, looped ones included
        cases = [dataclasses.replace(c, double=True) for c in cases]
        looped = [dataclasses.replace(c, double=True) for c in looped]
    if args.loop:
        return cases, {c.name for c in cases}
    return cases, {c.name for c in looped} if args.only is None else set()


def cli(args) -> int:
    """`python -m pyfftgl bench` with the arguments __main__ parsed; 2 when nothing ran."""
    if args.tune is not None:
        sizes = tuple(args.tune) or TUNE_SIZES + TUNE_TILED
        found = tune(sizes, backends=args.backends,
                     elements=args.elements or (2**20 if args.quick else 2**24),
                     save=not args.no_write)
        return 0 if found else 2
    if getattr(args, "dct", False):
        from . import dct_conv
        return dct_conv.cli(args)
    cases, loop = select_cases(args)
    records = run(cases, backends=args.backends, reps=args.repeat, cpu=not args.no_cpu,
                  out_dir=None if args.no_write else Path(args.out), per_pass=args.passes,
                  loop=loop, loop_calls=args.loop_calls)
    return 0 if records else 2
