// TEMPORARY placeholders so the library links while shape/creation ops are being written.
// The shape-ops helper deletes this file when the real definitions exist.
#include <stdexcept>

#include "mlx/ops.h"
#include "mlx/primitives.h"

namespace mlx::core {
#define PENDING throw std::runtime_error(std::string("not implemented yet: ") + __func__)
array arange(double, double, double, Dtype, StreamOrDevice) { PENDING; }
array arange(double, double, double, StreamOrDevice) { PENDING; }
array arange(double, double, Dtype, StreamOrDevice) { PENDING; }
array arange(double, double, StreamOrDevice) { PENDING; }
array arange(double, Dtype, StreamOrDevice) { PENDING; }
array arange(double, StreamOrDevice) { PENDING; }
array arange(int, int, int, StreamOrDevice) { PENDING; }
array arange(int, int, StreamOrDevice) { PENDING; }
array arange(int, StreamOrDevice) { PENDING; }
array eye(int, int, int, Dtype, StreamOrDevice) { PENDING; }
array identity(int, Dtype, StreamOrDevice) { PENDING; }
array flatten(const array&, int, int, StreamOrDevice) { PENDING; }
array flatten(const array&, StreamOrDevice) { PENDING; }
array transpose(const array&, std::vector<int>, StreamOrDevice) { PENDING; }
array transpose(const array&, StreamOrDevice) { PENDING; }
array swapaxes(const array&, int, int, StreamOrDevice) { PENDING; }
array moveaxis(const array&, int, int, StreamOrDevice) { PENDING; }
array squeeze(const array&, const std::vector<int>&, StreamOrDevice) { PENDING; }
array squeeze(const array&, int, StreamOrDevice) { PENDING; }
array squeeze(const array&, StreamOrDevice) { PENDING; }
array expand_dims(const array&, const std::vector<int>&, StreamOrDevice) { PENDING; }
array expand_dims(const array&, int, StreamOrDevice) { PENDING; }
array slice(const array&, Shape, Shape, Shape, StreamOrDevice) { PENDING; }
array slice(const array&, Shape, Shape, StreamOrDevice) { PENDING; }
array slice_update(const array&, const array&, Shape, Shape, Shape, StreamOrDevice) { PENDING; }
array slice_update(const array&, const array&, Shape, Shape, StreamOrDevice) { PENDING; }
array concatenate(std::vector<array>, int, StreamOrDevice) { PENDING; }
array concatenate(std::vector<array>, StreamOrDevice) { PENDING; }
array stack(const std::vector<array>&, int, StreamOrDevice) { PENDING; }
array stack(const std::vector<array>&, StreamOrDevice) { PENDING; }
std::vector<array> split(const array&, int, int, StreamOrDevice) { PENDING; }
std::vector<array> split(const array&, int, StreamOrDevice) { PENDING; }
std::vector<array> split(const array&, const Shape&, int, StreamOrDevice) { PENDING; }
std::vector<array> split(const array&, const Shape&, StreamOrDevice) { PENDING; }
array take(const array&, const array&, int, StreamOrDevice) { PENDING; }
array take(const array&, int, int, StreamOrDevice) { PENDING; }
array take(const array&, const array&, StreamOrDevice) { PENDING; }
array take(const array&, int, StreamOrDevice) { PENDING; }
array take_along_axis(const array&, const array&, int, StreamOrDevice) { PENDING; }
void Arange::eval_cpu(const std::vector<array>&, array&) { PENDING; }
void Transpose::eval_cpu(const std::vector<array>&, array&) { PENDING; }
void Slice::eval_cpu(const std::vector<array>&, array&) { PENDING; }
void SliceUpdate::eval_cpu(const std::vector<array>&, array&) { PENDING; }
void Concatenate::eval_cpu(const std::vector<array>&, array&) { PENDING; }
void Take::eval_cpu(const std::vector<array>&, array&) { PENDING; }
void TakeAlongAxis::eval_cpu(const std::vector<array>&, array&) { PENDING; }
void AsStrided::eval_cpu(const std::vector<array>&, array&) { PENDING; }
} // namespace mlx::core
