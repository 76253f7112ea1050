#!/usr/bin/env python3
"""Registers a thread and workgroups a multiprocessor, for disassembled kernels.

Takes `nvdisasm -b SM90` listings (tools/nvsass/extract.py makes the input). A thread's
registers are taken as the highest R index the listing names, plus one, rounded up to 8 (the
allocation unit); a multiprocessor's 65,536 registers then hold that many workgroups of
--wg invocations (256 unless given), before shared memory or the 32-warp limit are counted.
The instruction mix (HMMA, IDP, LDSM, BAR.SYNC, LDG) tells kernels of one cache apart.
Occupancy decided what two GEMM tiles and two qmv variants measured (docs/matmul.md, "Two
workgroups a multiprocessor").

  tools/nvsass/regs.py --wg 256 /tmp/raw/k*.sass

Development only, like extract.py: the listing is NVIDIA's private machine code.
"""
import re
import sys

REGISTER = re.compile(r"\bR(\d+)\b")
OPS = ("HMMA", "IDP", "LDSM", "BAR.SYNC", "LDG")
REGISTER_FILE = 65536


def summary(path, wg):
    text = open(path).read()
    used = max((int(r) for r in REGISTER.findall(text)), default=-1) + 1
    regs = (used + 7) // 8 * 8
    fit = REGISTER_FILE // (regs * wg) if regs else 0
    counts = " ".join(f"{op}={text.count(op)}" for op in OPS)
    lines = sum(1 for l in text.splitlines() if "/*" in l and "*/" in l)
    return f"{path}: {regs} registers, {fit} workgroups of {wg} a multiprocessor; {lines} lines, {counts}"


def main():
    args = sys.argv[1:]
    wg = 256
    if len(args) >= 2 and args[0] == "--wg":
        wg = int(args[1])
        args = args[2:]
    if not args or wg < 1:
        sys.exit(__doc__)
    for path in args:
        print(summary(path, wg))


if __name__ == "__main__":
    main()
