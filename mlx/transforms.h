// Graph evaluation.
#pragma once

#include <vector>

#include "mlx/array.h"

namespace mlx::core {

// Evaluates the outputs and everything they depend on, then waits for the results.
void eval(std::vector<array> outputs);

template <typename... Arrays>
  requires(std::is_same_v<std::decay_t<Arrays>, array> && ...)
void eval(Arrays&&... outputs) {
  eval(std::vector<array>{std::forward<Arrays>(outputs)...});
}

// Schedules evaluation and returns without waiting for it; reading an output (item, data,
// a later eval) waits for it. The graph is recorded on the eval thread while the caller
// goes on (mlx/eval_worker.h, docs/eval.md; MLX_EVAL_THREAD=0: on the caller's thread).
void async_eval(std::vector<array> outputs);

template <typename... Arrays>
  requires(std::is_same_v<std::decay_t<Arrays>, array> && ...)
void async_eval(Arrays&&... outputs) {
  async_eval(std::vector<array>{std::forward<Arrays>(outputs)...});
}

} // namespace mlx::core
