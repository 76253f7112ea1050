// The contract between the core's eval loop and a GPU backend, as in MLX.
#pragma once

#include "mlx/array.h"
#include "mlx/stream.h"

namespace mlx::core::gpu {

// Prepares backend state for a stream (a command queue, encoders, ...).
void new_stream(Stream stream);

// Records the work of `arr`'s primitive on its stream (may not run it yet).
void eval(array& arr);

// Submits whatever is recorded on the stream; does not wait.
void finalize(Stream s);

// Waits until everything submitted on the stream has completed.
void synchronize(Stream s);

} // namespace mlx::core::gpu
