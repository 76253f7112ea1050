#!/usr/bin/env python3
"""Raw NVIDIA machine code of every pipeline in an mlx-vulkan pipeline cache.

NVIDIA's driver keeps each compiled pipeline in its VkPipelineCache data as a zstd frame
holding an "NVDA" blob; the kernel's SASS sits in that blob at the offset and size given
by the two little-endian u32 at 0x50 and 0x4c (read from driver 580 on an H100/H200: the
code starts 8 bytes after the offset). Writes kNN.raw files that `nvdisasm -b SM90 kNN.raw`
disassembles (the CUDA toolkit's nvdisasm; not needed to build or run mlx-vulkan).

  tools/nvsass/extract.py $MLX_VK_CACHE_DIR/<fingerprint>/pipeline.cache out/

Needs the zstd command. Development only (docs/performance.md, "Reading NVIDIA's machine
code"): the layout is the driver's private format and may change with it.
"""
import os
import struct
import subprocess
import sys

ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"


def frames(data):
    at = data.find(ZSTD_MAGIC)
    while at >= 0:
        nxt = data.find(ZSTD_MAGIC, at + 4)
        yield data[at:nxt if nxt > 0 else len(data)]
        at = nxt


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    data = open(sys.argv[1], "rb").read()
    os.makedirs(sys.argv[2], exist_ok=True)
    count = 0
    for frame in frames(data):
        blob = subprocess.run(["zstd", "-d", "-c"], input=frame, capture_output=True).stdout
        if blob[:4] != b"NVDA" or len(blob) < 0x54:
            continue
        size, offset = struct.unpack_from("<II", blob, 0x4C)
        code = blob[offset + 8:offset + 8 + size]
        if len(code) != size:
            continue
        with open(os.path.join(sys.argv[2], "k%03d.raw" % count), "wb") as out:
            out.write(code)
        count += 1
    print("kernels", count)


if __name__ == "__main__":
    main()
