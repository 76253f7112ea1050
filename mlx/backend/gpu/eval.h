// The contract between the core's eval loop and a GPU backend, as in MLX.
#pragma once

#include <vector>

#include "mlx/array.h"
#include "mlx/stream.h"

namespace mlx::core::gpu {

// Prepares backend state for a stream (a command queue, encoders, ...).
void new_stream(Stream stream);

// Records the work of `arr`'s primitive on its stream (may not run it yet).
void eval(array& arr);

// Submits whatever is recorded on the stream; does not wait.
void finalize(Stream s);

// Called for each array an eval was asked for, before finalize: a backend whose host reads
// need a copy may record it now, in the batch that wrote the array, so reading it later
// does not wait behind work recorded after it (a decode loop's token). May do nothing.
void prefetch_for_host(const array& a);

// The tape an eval is about to run, in order: a backend may look ahead in it while it
// records the nodes (the Vulkan backend brings the next quantized product's weights into
// L2 during the one before). The tape outlives every gpu::eval of its nodes until
// end_tape, which is called however the run ends. May do nothing.
void begin_tape(const std::vector<array>& tape);
void end_tape();

// Waits until everything submitted on the stream has completed.
void synchronize(Stream s);

// Whether the GPU work that wrote `a`'s data has completed (never blocks): MLX's event
// check behind array::is_available(). A view shares its producer's buffer, so this holds
// for views evaluated on another stream too.
bool is_ready(const array& a);
// Blocks until is_ready(a), whichever stream wrote the data: for the work up to the write,
// not for work recorded after it.
void wait_ready(const array& a);

}  // namespace mlx::core::gpu
