// Small helpers shared by ops: axis normalization, printing.
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include "mlx/array.h"

namespace mlx::core {

// Maps a possibly negative axis into [0, ndim); throws "[op] ..." when out of range.
int normalize_axis(int axis, int ndim, const char* op);
// Normalizes, sorts and rejects duplicates.
std::vector<int> normalize_axes(const std::vector<int>& axes, int ndim, const char* op);

std::string shape_to_string(const Shape& shape);  // "(2,3)"

// `n` as one dimension; throws "[op] ..." when it exceeds what a dimension holds (2^31 - 1).
ShapeElem checked_dim(int64_t n, const char* op);

// Prints the values (evaluating the array first), as MLX does.
std::ostream& operator<<(std::ostream& os, array a);
std::ostream& operator<<(std::ostream& os, const Shape& s);

}  // namespace mlx::core
