"""The kernel shapes `pyfftgl bench --tune` times for a length (pyfftgl/bench/tuner.py's tune)."""
from __future__ import annotations

from .records import TunedShape
from .rules import (REGISTER_TARGET, ODD_PRIMES, ODD_SQUARES, stage_registers, register_cap,
                    prime_factors)


def _two_power_splits(k: int, max_stages: int = 5) -> list[tuple[int, ...]]:
    """2^k as radices from 16, 8, 4, 2 (at most one 2), largest first, at most max_stages."""
    out = []

    def rec(left, top, acc):
        if left == 0:
            out.append(tuple(1 << e for e in acc))
            return
        if len(acc) == max_stages:
            return
        for e in range(min(top, left), 0, -1):
            if e == 1 and 1 in acc:
                continue
            rec(left - e, e, acc + [e])
    rec(k, 4, [])
    return out


def odd_groupings(odd: tuple[int, ...]) -> list[tuple[int, ...]]:
    """The odd prime factors as radices, with each pair of an equal prime that has a square radix
    kept as two stages or merged into one: (3, 3, 3) gives (3, 3, 3) and (9, 3)."""
    out: list[tuple[int, ...]] = [()]
    for p in sorted(set(odd)):
        c, sq = odd.count(p), p * p
        pairs = c // 2 if sq in ODD_SQUARES else 0
        out = [a + (sq,) * q + (p,) * (c - 2 * q) for a in out for q in range(pairs + 1)]
    return out


def shape_candidates(n: int, limits) -> list[TunedShape]:
    """Kernel shapes worth timing for length n, as Limits.tuned entries for contiguous lines
    (dataclasses.replace(shape, tiled=True) for strided passes). Radix sets of 16/8/4/2 and of
    the odd primes or their squares, each largest-first and smallest-first, odd radices first or
    last; threads from one or two butterflies of the largest radix per invocation (a radix-49
    stage's one only: 49 values is over REGISTER_TARGET); shared memory padded or not (even n:
    padding is against the bank conflicts of power-of-two strides); the default lines per
    workgroup. (Fewer invocations per line and wider workgroups never won.)"""
    factors = prime_factors(n)
    if any(p not in (2,) + ODD_PRIMES for p in factors):
        return []
    odd = tuple(p for p in ODD_PRIMES for _ in range(factors.get(p, 0)))
    cap = min(limits.max_invocations, limits.max_group_size[0])
    out = []
    k = factors.get(2, 0)
    for two in _two_power_splits(k, 4) or _two_power_splits(k, 6) or [()]:
        orders = set()
        for group in odd_groupings(odd):
            for o in (tuple(sorted(group, reverse=True)), tuple(sorted(group))):
                orders |= {o + two, o + two[::-1], two + o, two[::-1] + o}
        for radices in sorted(orders):
            span = n // max(radices, default=1)  # butterflies of the largest radix
            for b in (1, 2):
                threads = -(-span // b)
                regs = stage_registers(n, radices, threads)
                if threads > cap or regs > (register_cap(radices) if b == 1 else REGISTER_TARGET):
                    continue
                for pad in (False, True) if n % 2 == 0 else (False,):
                    cand = TunedShape(n, radices, threads, 0, pad)
                    if cand not in out:
                        out.append(cand)
    return out
