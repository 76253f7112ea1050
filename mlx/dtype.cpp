#include "mlx/dtype.h"

#include <stdexcept>

namespace mlx::core {

namespace {

using V = Dtype::Val;
constexpr V b_ = V::bool_, u1 = V::uint8, u2 = V::uint16, u4 = V::uint32, u8_ = V::uint64,
            i1 = V::int8, i2 = V::int16, i4 = V::int32, i8_ = V::int64, f2 = V::float16,
            f4 = V::float32, f8 = V::float64, bf = V::bfloat16, c8 = V::complex64;

// MLX's promotion table, rows and columns in Dtype::Val order.
// clang-format off
constexpr V promotion_table[Dtype::num_types][Dtype::num_types] = {
  //  b_  u1  u2  u4  u8  i1  i2  i4  i8  f2  f4  f8  bf  c8
    {b_, u1, u2, u4, u8_, i1, i2, i4, i8_, f2, f4, f8, bf, c8}, // bool
    {u1, u1, u2, u4, u8_, i2, i2, i4, i8_, f2, f4, f8, bf, c8}, // uint8
    {u2, u2, u2, u4, u8_, i4, i4, i4, i8_, f2, f4, f8, bf, c8}, // uint16
    {u4, u4, u4, u4, u8_, i8_, i8_, i8_, i8_, f2, f4, f8, bf, c8}, // uint32
    {u8_, u8_, u8_, u8_, u8_, f4, f4, f4, f4, f2, f4, f8, bf, c8}, // uint64
    {i1, i2, i4, i8_, f4, i1, i2, i4, i8_, f2, f4, f8, bf, c8}, // int8
    {i2, i2, i4, i8_, f4, i2, i2, i4, i8_, f2, f4, f8, bf, c8}, // int16
    {i4, i4, i4, i8_, f4, i4, i4, i4, i8_, f2, f4, f8, bf, c8}, // int32
    {i8_, i8_, i8_, i8_, f4, i8_, i8_, i8_, i8_, f2, f4, f8, bf, c8}, // int64
    {f2, f2, f2, f2, f2, f2, f2, f2, f2, f2, f4, f8, f4, c8}, // float16
    {f4, f4, f4, f4, f4, f4, f4, f4, f4, f4, f4, f8, f4, c8}, // float32
    {f8, f8, f8, f8, f8, f8, f8, f8, f8, f8, f8, f8, f8, c8}, // float64
    {bf, bf, bf, bf, bf, bf, bf, bf, bf, f4, f4, f8, bf, c8}, // bfloat16
    {c8, c8, c8, c8, c8, c8, c8, c8, c8, c8, c8, c8, c8, c8}, // complex64
};
// clang-format on

Dtype from_val(V v) {
  return all_dtypes[static_cast<int>(v)];
}

}  // namespace

Dtype promote_types(const Dtype& t1, const Dtype& t2) {
  return from_val(promotion_table[static_cast<int>(t1.val)][static_cast<int>(t2.val)]);
}

Dtype::Kind kindof(const Dtype& t) {
  switch (t.val) {
    case V::bool_:
      return Dtype::Kind::b;
    case V::uint8:
    case V::uint16:
    case V::uint32:
    case V::uint64:
      return Dtype::Kind::u;
    case V::int8:
    case V::int16:
    case V::int32:
    case V::int64:
      return Dtype::Kind::i;
    case V::float16:
    case V::float32:
    case V::float64:
      return Dtype::Kind::f;
    case V::bfloat16:
      return Dtype::Kind::V;
    case V::complex64:
      return Dtype::Kind::c;
  }
  throw std::invalid_argument("[kindof] unknown dtype.");
}

namespace {

Dtype::Category category_of(const Dtype& t) {
  switch (kindof(t)) {
    case Dtype::Kind::b:
      return Dtype::Category::generic;
    case Dtype::Kind::u:
      return Dtype::Category::unsignedinteger;
    case Dtype::Kind::i:
      return Dtype::Category::signedinteger;
    case Dtype::Kind::f:
    case Dtype::Kind::V:
      return Dtype::Category::floating;
    case Dtype::Kind::c:
      return Dtype::Category::complexfloating;
  }
  return Dtype::Category::generic;
}

// Is category `a` contained in category `b` in MLX's hierarchy?
bool category_within(Dtype::Category a, Dtype::Category b) {
  using C = Dtype::Category;
  if (a == b || b == C::generic) {
    return true;
  }
  switch (a) {
    case C::complexfloating:
    case C::floating:
      return b == C::inexact || b == C::number;
    case C::signedinteger:
    case C::unsignedinteger:
      return b == C::integer || b == C::number;
    case C::inexact:
    case C::integer:
      return b == C::number;
    default:
      return false;
  }
}

}  // namespace

bool issubdtype(const Dtype& a, const Dtype& b) {
  return a == b;
}

bool issubdtype(const Dtype::Category&, const Dtype&) {
  return false;
}

bool issubdtype(const Dtype& a, const Dtype::Category& b) {
  if (a == bool_) {
    return b == Dtype::Category::generic;
  }
  return category_within(category_of(a), b);
}

bool issubdtype(const Dtype::Category& a, const Dtype::Category& b) {
  return category_within(a, b);
}

bool is_floating_point(const Dtype& t) {
  return t == float16 || t == bfloat16 || t == float32 || t == float64;
}
bool is_complex(const Dtype& t) {
  return t == complex64;
}
bool is_integral(const Dtype& t) {
  auto k = kindof(t);
  return k == Dtype::Kind::u || k == Dtype::Kind::i;
}
bool is_unsigned(const Dtype& t) {
  return kindof(t) == Dtype::Kind::u;
}
bool is_signed_integral(const Dtype& t) {
  return kindof(t) == Dtype::Kind::i;
}

Dtype at_least_float(const Dtype& t) {
  return is_floating_point(t) || is_complex(t) ? t : promote_types(t, float32);
}

std::string dtype_to_string(const Dtype& t) {
  static const char* names[Dtype::num_types] = {
      "bool",  "uint8", "uint16",  "uint32",  "uint64",  "int8",     "int16",
      "int32", "int64", "float16", "float32", "float64", "bfloat16", "complex64"};
  return names[static_cast<int>(t.val)];
}

std::ostream& operator<<(std::ostream& os, const Dtype& t) {
  return os << dtype_to_string(t);
}

std::ostream& operator<<(std::ostream& os, const Dtype::Kind& k) {
  static const char* kinds = "buifVc";
  return os << kinds[static_cast<int>(k)];
}

template <>
TypeToDtype<bool>::operator Dtype() {
  return bool_;
}
template <>
TypeToDtype<uint8_t>::operator Dtype() {
  return uint8;
}
template <>
TypeToDtype<uint16_t>::operator Dtype() {
  return uint16;
}
template <>
TypeToDtype<uint32_t>::operator Dtype() {
  return uint32;
}
template <>
TypeToDtype<uint64_t>::operator Dtype() {
  return uint64;
}
template <>
TypeToDtype<int8_t>::operator Dtype() {
  return int8;
}
template <>
TypeToDtype<int16_t>::operator Dtype() {
  return int16;
}
template <>
TypeToDtype<int32_t>::operator Dtype() {
  return int32;
}
template <>
TypeToDtype<int64_t>::operator Dtype() {
  return int64;
}
template <>
TypeToDtype<float16_t>::operator Dtype() {
  return float16;
}
template <>
TypeToDtype<float>::operator Dtype() {
  return float32;
}
template <>
TypeToDtype<double>::operator Dtype() {
  return float32;  // as MLX: C++ doubles make float32 arrays; ask for float64 explicitly
}
template <>
TypeToDtype<bfloat16_t>::operator Dtype() {
  return bfloat16;
}
template <>
TypeToDtype<complex64_t>::operator Dtype() {
  return complex64;
}
template <>
TypeToDtype<std::complex<float>>::operator Dtype() {
  return complex64;
}

}  // namespace mlx::core
