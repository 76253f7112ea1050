// compile(): MLX's API (mlx/compile.h upstream). A compiled function traces `fun` once per
// input signature into a graph, simplifies it, and on later calls with the same signature
// rebuilds that graph on the new inputs without running `fun` again. docs/compile.md.
#pragma once

#include <functional>
#include <type_traits>
#include <utility>
#include <vector>

#include "mlx/array.h"

namespace mlx::core {

// disabled: compile returns the function itself; no_simplify: trace and replay only;
// no_fuse: also simplify (common subexpressions, equal scalar constants, no-op casts);
// enabled: everything.
enum class CompileMode { disabled, no_simplify, no_fuse, enabled };

// Traces on the first call with given input shapes and dtypes (with shapeless, dtypes and
// ranks only); captured arrays are constants. A function that evaluates an array it
// computes (eval, item) raises MLX's "[eval] Attempting to eval an array during function
// transformations like compile or vmap is not allowed."
std::function<std::vector<array>(const std::vector<array>&)> compile(
    std::function<std::vector<array>(const std::vector<array>&)> fun, bool shapeless = false);

// A function pointer: compiled functions of the same pointer share one trace cache.
std::function<std::vector<array>(const std::vector<array>&)> compile(
    std::vector<array> (*fun)(const std::vector<array>&), bool shapeless = false);

// Capture-less lambdas convert to function pointers (as MLX).
template <typename F,
          typename = std::enable_if_t<std::is_convertible_v<F, decltype(+std::declval<F>())>>>
std::function<std::vector<array>(const std::vector<array>&)> compile(F&& f,
                                                                     bool shapeless = false) {
  return compile(+f, shapeless);
}

// Globally off / on (on overrides the MLX_DISABLE_COMPILE environment variable).
void disable_compile();
void enable_compile();
void set_compile_mode(CompileMode mode);

}  // namespace mlx::core
