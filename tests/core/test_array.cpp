// The array type itself: construction, metadata, item, eval, views and memory.
#include <doctest/doctest.h>

#include "mlx/mlx.h"

namespace mx = mlx::core;

TEST_CASE("scalar arrays hold one value of their C++ type") {
  mx::array a(3.5f);
  CHECK(a.dtype() == mx::float32);
  CHECK(a.ndim() == 0);
  CHECK(a.size() == 1);
  CHECK(a.item<float>() == 3.5f);
  mx::array b(7);
  CHECK(b.dtype() == mx::int32);
  CHECK(b.item<int>() == 7);
  mx::array c(true);
  CHECK(c.dtype() == mx::bool_);
  CHECK(c.item<bool>());
}
