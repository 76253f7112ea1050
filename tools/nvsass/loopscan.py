#!/usr/bin/env python3
"""The main loop of a disassembled kernel, and the copies in it that wait for its loads.

Takes one `nvdisasm -b SM90` listing (tools/nvsass/extract.py makes the input). The main
loop is the backward branch whose body holds the most HMMA (then the most instructions).
Prints the loop's instruction mix, then each MOV that reads a register an LDG of the same
loop wrote earlier, with how many instructions after the load it stands: such a copy
waits for the load there, however far ahead the source meant the load to be. NVIDIA's
compiler makes them when a loop's loads sit under a condition (or are moved above the
stores of the registers they overwrite): docs/performance.md, "Loads under conditions".

  tools/nvsass/loopscan.py k003.txt

Development only, like extract.py: the listing is NVIDIA's private machine code.
"""
import re
import sys

LINE = re.compile(r"\s*/\*([0-9a-f]{4,})\*/\s*(@!?U?P[0-9T]\s+)?([A-Z0-9_]+)")
WIDTH = {".128": 4, ".64": 2}


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    lines = [l for l in open(sys.argv[1]) if LINE.match(l)]
    addr = [int(LINE.match(l).group(1), 16) for l in lines]
    best = None
    for i, l in enumerate(lines):
        m = re.search(r"BRA (0x[0-9a-f]+)", l)
        if not m or int(m.group(1), 16) >= addr[i] or int(m.group(1), 16) not in addr:
            continue
        j = addr.index(int(m.group(1), 16))
        hmma = sum("HMMA" in x for x in lines[j:i + 1])
        if best is None or (hmma, i - j) > (best[0], best[2] - best[1]):
            best = (hmma, j, i)
    if best is None:
        sys.exit("no backward branch: no loop in " + sys.argv[1])
    _, j, i = best
    body = lines[j:i + 1]
    ops = {}
    for x in body:
        op = LINE.match(x).group(3)
        ops[op] = ops.get(op, 0) + 1
    mix = ", ".join(f"{o} {n}" for o, n in sorted(ops.items(), key=lambda a: -a[1])[:14])
    print(f"loop {hex(addr[j])}..{hex(addr[i])}: {len(body)} instructions: {mix}")
    loaded = {}  # register -> index in body of the LDG that wrote it
    copies = 0
    for k, x in enumerate(body):
        m = re.search(r"LDG\.E(\.128|\.64)?[A-Z0-9.]* R(\d+),", x)
        if m:
            for r in range(int(m.group(2)), int(m.group(2)) + WIDTH.get(m.group(1), 1)):
                loaded[r] = k
            continue
        m = re.search(r"MOV(\.U32)? R\d+, (RZ, RZ, )?R(\d+)", x)
        if m and int(m.group(3)) in loaded:
            copies += 1
            print(f"  {k - loaded[int(m.group(3))]:4d} after its load: {x.strip()}")
    print(f"copies of loaded registers: {copies}")


if __name__ == "__main__":
    main()
