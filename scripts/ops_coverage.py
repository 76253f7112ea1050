#!/usr/bin/env python3
"""Coverage of MLX's op list (docs/src/python/ops.rst at the reference commit of
docs/compatibility.md) by this library, printed as the markdown table of docs/ops.md.

For each op: whether the C++ API declares it here (found in the public headers), and how a
GPU stream runs it: a kernel family of its own, a composition of ops that have kernels, a
view (no data moves unless a later op needs it dense), host I/O, or not yet. The GPU
column comes from the tables below, kept by hand next to the kernel families
(docs/architecture.md); the script checks every op it lists is declared.

Usage: scripts/ops_coverage.py  (from the repository root)
"""
import re
import sys
from pathlib import Path

# MLX's op list (names only), as its documentation lists them.
MLX_OPS = """abs add addmm all allclose any arange arccos arccosh arcsin arcsinh arctan arctan2 arctanh
argmax argmin argpartition argsort array_equal asarray as_strided astype atleast_1d atleast_2d
atleast_3d bartlett bitwise_and bitwise_invert bitwise_or bitwise_xor blackman block_masked_mm
broadcast_arrays broadcast_shapes broadcast_to can_cast ceil clip concat concatenate contiguous
conj conjugate convolve conv1d conv2d conv3d conv_transpose1d conv_transpose2d conv_transpose3d
conv_general cos cosh cummax cummin cumprod cumsum count_nonzero degrees depends dequantize
diag diagonal diff divide divmod einsum einsum_path equal erf erfinv exp expm1 expand_dims eye
flatten flip floor floor_divide full from_dlpack full_like from_fp8 gather_mm gather_qmm
greater greater_equal hadamard_transform hamming hanning identity imag inner isdtype isfinite
isclose isinf isnan isneginf isposinf issubdtype kron left_shift less less_equal linspace load
log log2 log10 log1p logaddexp logcumsumexp logical_not logical_and logical_or logical_xor
logsumexp matmul max maximum mean median meshgrid min minimum moveaxis multiply nan_to_num
negative not_equal ones ones_like outer partition pad permute_dims positive power prod
put_along_axis quantize quantized_matmul qqmm radians real reciprocal remainder repeat reshape
result_type right_shift roll round rsqrt save savez savez_compressed save_gguf save_safetensors
searchsorted sigmoid sign sin sinh slice slice_update segmented_mm softmax sort split sqrt
square squeeze stack std stop_gradient subtract sum swapaxes take take_along_axis tan tanh
tensordot tile topk to_fp8 trace transpose tri tril triu trunc unflatten unstack vecdot var
view where zeros zeros_like""".split()

ELEMENTWISE = """abs add arccos arccosh arcsin arcsinh arctan arctan2 arctanh astype bitwise_and
bitwise_invert bitwise_or bitwise_xor ceil cos cosh divide divmod equal erf erfinv exp expm1
floor floor_divide greater greater_equal isinf isnan left_shift less less_equal log log2 log10
log1p logaddexp logical_not logical_and logical_or maximum minimum multiply negative not_equal
power remainder right_shift round rsqrt sigmoid sign sin sinh sqrt square subtract tan tanh
where contiguous full ones zeros concatenate""".split()
KERNELS = {
    "elementwise / copy": ELEMENTWISE,
    "reduce": "all any max min prod sum".split(),
    "arg_reduce": "argmax argmin".split(),
    "scan": "cummax cummin cumprod cumsum logcumsumexp".split(),
    "norm (softmax)": ["softmax"],
    "sort": "sort argsort partition argpartition".split(),
    "gemm / gemv": "matmul addmm".split(),
    "quant / qmm / qmv": "quantize dequantize quantized_matmul".split(),
    "gather / scatter": "take take_along_axis put_along_axis".split(),
    "arange": ["arange"],
}
VIEWS = """as_strided broadcast_arrays broadcast_to expand_dims flatten moveaxis reshape squeeze
swapaxes transpose split unflatten atleast_1d atleast_2d atleast_3d""".split()
COMPOSED = """allclose array_equal clip count_nonzero degrees diag diagonal diff eye flip identity inner
isclose isfinite isneginf isposinf kron linspace logical_xor logsumexp mean median meshgrid
nan_to_num ones_like zeros_like outer pad positive radians reciprocal repeat roll stack std
stop_gradient tensordot tile topk trace tri tril triu trunc unstack var""".split()
# Ops whose GPU route depends on the form called (static bounds, or a start held in an
# array): their class (counted) and how each form runs.
FORMS = {
    "slice": ("view", "copy kernel when made dense; an array start: gather kernel"),
    "slice_update": ("kernel", "copy into the window; an array start: scatter kernel"),
}
# Not device work: shapes, dtypes and files.
HOST = "broadcast_shapes issubdtype result_type save_safetensors".split()
# Python-only names (no C++ function in MLX).
PYTHON_ONLY = "asarray concat from_dlpack isdtype permute_dims".split()


def declared_names(root):
    text = ""
    for h in ["mlx/ops.h", "mlx/random.h", "mlx/fast.h", "mlx/io.h", "mlx/dtype.h", "mlx/utils.h"]:
        text += (root / h).read_text()
    names = set(re.findall(r"\b([a-z_0-9]+)\(", text))
    # Reductions are declared through a macro.
    names |= set(re.findall(r"MLX_DECLARE_REDUCTION\((\w+)\)", text))
    return names


def main():
    root = Path(__file__).resolve().parent.parent
    declared = declared_names(root)
    gpu = {}
    for family, ops in KERNELS.items():
        for op in ops:
            gpu[op] = "kernel (" + family + ")"
    for op in VIEWS:
        gpu[op] = "view (copy kernel when made dense)"
    for op in COMPOSED:
        gpu.setdefault(op, "composition")
    for op in HOST:
        gpu[op] = "host (no device work)"
    for op, (kind, detail) in FORMS.items():
        gpu[op] = f"{kind} ({detail})"
    rows, counts = [], {}
    for op in MLX_OPS:
        if op in PYTHON_ONLY:
            status, how = "Python only in MLX", "-"
        elif op in declared:
            how = gpu.get(op)
            if how is None:
                print(f"ops_coverage: {op} is declared but not classified", file=sys.stderr)
                return 1
            status = "yes"
        else:
            status, how = "not yet", "-"
        key = how.split(" (")[0] if status == "yes" else status
        counts[key] = counts.get(key, 0) + 1
        rows.append(f"| `{op}` | {status} | {how} |")
    print(f"{len(MLX_OPS)} ops in MLX's list: " +
          ", ".join(f"{v} {k}" for k, v in sorted(counts.items(), key=lambda kv: -kv[1])) + ".")
    print()
    print("| op | here | GPU |")
    print("|---|---|---|")
    print("\n".join(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
