// dtypes: sizes, kinds, categories and MLX's type promotion.
#include <doctest/doctest.h>

#include "mlx/mlx.h"

namespace mx = mlx::core;

TEST_CASE("dtype sizes and names") {
  CHECK(mx::size_of(mx::bool_) == 1);
  CHECK(mx::size_of(mx::uint16) == 2);
  CHECK(mx::size_of(mx::int64) == 8);
  CHECK(mx::size_of(mx::float16) == 2);
  CHECK(mx::size_of(mx::bfloat16) == 2);
  CHECK(mx::size_of(mx::float64) == 8);
  CHECK(mx::size_of(mx::complex64) == 8);
  CHECK(mx::dtype_to_string(mx::bfloat16) == "bfloat16");
  std::ostringstream os;
  os << mx::uint32;
  CHECK(os.str() == "uint32");
}

TEST_CASE("dtype categories follow MLX's hierarchy") {
  CHECK(mx::issubdtype(mx::float16, mx::floating));
  CHECK(mx::issubdtype(mx::bfloat16, mx::inexact));
  CHECK(mx::issubdtype(mx::complex64, mx::inexact));
  CHECK_FALSE(mx::issubdtype(mx::complex64, mx::floating));
  CHECK(mx::issubdtype(mx::int8, mx::signedinteger));
  CHECK(mx::issubdtype(mx::uint8, mx::integer));
  CHECK(mx::issubdtype(mx::uint8, mx::number));
  CHECK_FALSE(mx::issubdtype(mx::uint8, mx::signedinteger));
  CHECK_FALSE(mx::issubdtype(mx::bool_, mx::number));
  CHECK(mx::issubdtype(mx::bool_, mx::generic));
  CHECK(mx::issubdtype(mx::floating, mx::inexact));
  CHECK(mx::kindof(mx::bfloat16) == mx::Dtype::Kind::V);
}

TEST_CASE("type promotion matches MLX's table") {
  using mx::promote_types;
  // Same kind: the wider type.
  CHECK(promote_types(mx::uint8, mx::uint32) == mx::uint32);
  CHECK(promote_types(mx::int16, mx::int64) == mx::int64);
  CHECK(promote_types(mx::float16, mx::float32) == mx::float32);
  // bool yields to anything.
  for (auto t : mx::all_dtypes) {
    CHECK(promote_types(mx::bool_, t) == t);
    CHECK(promote_types(t, mx::bool_) == t);
    CHECK(promote_types(t, t) == t);
  }
  // Signed with unsigned: the next signed type that holds both.
  CHECK(promote_types(mx::uint8, mx::int8) == mx::int16);
  CHECK(promote_types(mx::uint16, mx::int8) == mx::int32);
  CHECK(promote_types(mx::uint32, mx::int32) == mx::int64);
  CHECK(promote_types(mx::uint64, mx::int8) == mx::float32);
  // Integers with floats: the float type.
  CHECK(promote_types(mx::int64, mx::float16) == mx::float16);
  CHECK(promote_types(mx::uint32, mx::bfloat16) == mx::bfloat16);
  // The two 16-bit floats meet at float32.
  CHECK(promote_types(mx::float16, mx::bfloat16) == mx::float32);
  CHECK(promote_types(mx::float64, mx::bfloat16) == mx::float64);
  CHECK(promote_types(mx::float64, mx::complex64) == mx::complex64);
  // Symmetric everywhere.
  for (auto a : mx::all_dtypes) {
    for (auto b : mx::all_dtypes) {
      CHECK(promote_types(a, b) == promote_types(b, a));
    }
  }
}

TEST_CASE("at_least_float promotes integers to float32 and keeps floats") {
  CHECK(mx::at_least_float(mx::int8) == mx::float32);
  CHECK(mx::at_least_float(mx::bool_) == mx::float32);
  CHECK(mx::at_least_float(mx::float16) == mx::float16);
  CHECK(mx::at_least_float(mx::bfloat16) == mx::bfloat16);
}
