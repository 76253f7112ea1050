"""The one precondition every peer script shares: PyTorch with a CUDA device."""


def cuda_torch(script):
    """torch when it is installed and sees a CUDA device; else None, after saying why (the
    peers run only on the GPU machine and exit 0 elsewhere)."""
    try:
        import torch
    except ImportError:
        print(f"{script}: torch is not installed; nothing to measure")
        return None
    if not torch.cuda.is_available():
        print(f"{script}: no CUDA device; nothing to measure")
        return None
    return torch
