// TEMPORARY placeholders so the library links while reductions, softmax, matmul and random
// are being written. The reductions helper deletes this file when they exist.
#include <stdexcept>

#include "mlx/ops.h"
#include "mlx/primitives.h"
#include "mlx/random.h"

namespace mlx::core {
#define PENDING throw std::runtime_error(std::string("not implemented yet: ") + __func__)
#define PENDING_REDUCTION(name)                                                        \
  array name(const array&, bool, StreamOrDevice) { PENDING; }                          \
  array name(const array&, const std::vector<int>&, bool, StreamOrDevice) { PENDING; } \
  array name(const array&, int, bool, StreamOrDevice) { PENDING; }
PENDING_REDUCTION(sum)
PENDING_REDUCTION(mean)
PENDING_REDUCTION(prod)
PENDING_REDUCTION(max)
PENDING_REDUCTION(min)
PENDING_REDUCTION(all)
PENDING_REDUCTION(any)
PENDING_REDUCTION(logsumexp)
array var(const array&, bool, int, StreamOrDevice) { PENDING; }
array var(const array&, const std::vector<int>&, bool, int, StreamOrDevice) { PENDING; }
array var(const array&, int, bool, int, StreamOrDevice) { PENDING; }
array argmax(const array&, bool, StreamOrDevice) { PENDING; }
array argmax(const array&, int, bool, StreamOrDevice) { PENDING; }
array argmin(const array&, bool, StreamOrDevice) { PENDING; }
array argmin(const array&, int, bool, StreamOrDevice) { PENDING; }
array softmax(const array&, const std::vector<int>&, bool, StreamOrDevice) { PENDING; }
array softmax(const array&, int, bool, StreamOrDevice) { PENDING; }
array softmax(const array&, bool, StreamOrDevice) { PENDING; }
array matmul(const array&, const array&, StreamOrDevice) { PENDING; }
void Reduce::eval_cpu(const std::vector<array>&, array&) { PENDING; }
void ArgReduce::eval_cpu(const std::vector<array>&, array&) { PENDING; }
void Softmax::eval_cpu(const std::vector<array>&, array&) { PENDING; }
void Matmul::eval_cpu(const std::vector<array>&, array&) { PENDING; }
void RandomBits::eval_cpu(const std::vector<array>&, array&) { PENDING; }
namespace random {
array key(uint64_t) { PENDING; }
void seed(uint64_t) { PENDING; }
array split(const array&, int, StreamOrDevice) { PENDING; }
std::pair<array, array> split(const array&, StreamOrDevice) { PENDING; }
array bits(const Shape&, int, const std::optional<array>&, StreamOrDevice) { PENDING; }
array uniform(const array&, const array&, const Shape&, Dtype, const std::optional<array>&, StreamOrDevice) { PENDING; }
array uniform(const Shape&, Dtype, const std::optional<array>&, StreamOrDevice) { PENDING; }
array normal(const Shape&, Dtype, float, float, const std::optional<array>&, StreamOrDevice) { PENDING; }
array randint(const array&, const array&, const Shape&, Dtype, const std::optional<array>&, StreamOrDevice) { PENDING; }
} // namespace random
} // namespace mlx::core
