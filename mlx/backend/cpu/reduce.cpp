// Reduce::eval_cpu: sum, prod, max, min, all and any over any set of axes of a strided input.
//
// One pass over the input in its row-major order: every input element is folded into the
// accumulator of its output element (the output index uses stride 0 along reduced axes), so
// any layout, broadcast or transposed, is read once. Adjacent dims are collapsed first and
// the innermost dim runs as a tight loop.
//
// Precision: float sums of every float dtype accumulate in double with Neumaier's
// compensation and round once on store, so the reference is correctly rounded for any
// length a machine can hold (a float32 accumulator, even compensated, stops growing at
// 2^25 when every term is 1: its compensation term saturates too). Other float
// arithmetic runs in the compute type (f32 for 16-bit floats). Integer sums and products
// wrap modulo 2^bits, computed in uint64 to avoid signed overflow.
//
// The op layer casts the input to the output dtype first, so Sum/Prod/Max/Min see
// in.dtype() == out.dtype(); And/Or read any dtype and output bool.
#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <stdexcept>

#include "mlx/backend/common/utils.h"
#include "mlx/primitives.h"

namespace mlx::core {

namespace {

template <typename V>
bool is_nan_value(V v) {
  if constexpr (std::is_floating_point_v<V>) {
    return std::isnan(v);
  } else {
    return false;
  }
}

// Each accumulator defines State, init(), add(State&, T), merge(State&, const State&) and
// finish(State) -> T. merge folds a partial result computed for the same output.

template <typename T>
struct CompensatedSum {
  using Acc = double;
  struct State {
    Acc sum = 0;
    Acc comp = 0;
  };
  static State init() {
    return {};
  }
  static void add_value(State& st, Acc x) {
    Acc t = st.sum + x;
    // Neumaier: recover the low-order bits lost by the larger operand's rounding.
    if (std::abs(st.sum) >= std::abs(x)) {
      st.comp += (st.sum - t) + x;
    } else {
      st.comp += (x - t) + st.sum;
    }
    st.sum = t;
  }
  static void add(State& st, T x) {
    add_value(st, static_cast<Acc>(x));
  }
  static void merge(State& st, const State& other) {
    add_value(st, other.sum);
    st.comp += other.comp;
  }
  // Once the running sum is inf or NaN the compensation is meaningless (inf - inf).
  static T finish(const State& st) {
    return static_cast<T>(std::isfinite(st.sum) ? st.sum + st.comp : st.sum);
  }
};

// Integers (and bool) wrap modulo 2^64 here, which truncates to modulo 2^bits on store.
template <typename T>
struct WrappingSum {
  using State = uint64_t;
  static State init() {
    return 0;
  }
  static void add(State& st, T x) {
    st += static_cast<uint64_t>(x);
  }
  static void merge(State& st, const State& other) {
    st += other;
  }
  static T finish(State st) {
    return static_cast<T>(st);
  }
};

template <typename T>
struct WrappingProd {
  using State = uint64_t;
  static State init() {
    return 1;
  }
  static void add(State& st, T x) {
    st *= static_cast<uint64_t>(x);
  }
  static void merge(State& st, const State& other) {
    st *= other;
  }
  static T finish(State st) {
    return static_cast<T>(st);
  }
};

// Float products in the compute type; complex sums and products in complex<double>, so a
// complex sum keeps growing past 2^24 terms like the real ones.
template <typename T, bool IsProd>
struct PlainArith {
  using State = std::conditional_t<is_complex_v<T>, std::complex<double>, compute_type_t<T>>;
  static State init() {
    return State(IsProd ? 1 : 0);
  }
  static void add(State& st, T x) {
    if constexpr (IsProd) {
      st *= static_cast<State>(x);
    } else {
      st += static_cast<State>(x);
    }
  }
  static void merge(State& st, const State& other) {
    if constexpr (IsProd) {
      st *= other;
    } else {
      st += other;
    }
  }
  static T finish(const State& st) {
    if constexpr (is_complex_v<T>) {
      return T(std::complex<float>(st));
    } else {
      return static_cast<T>(st);
    }
  }
};

// complex64 max/min, as MLX: lexicographic (real part, then imaginary part); a value
// with a NaN part wins and stays. The identity is (+-inf, 0).
template <bool IsMax>
struct ComplexExtremum {
  using State = complex64_t;
  static State init() {
    float inf = std::numeric_limits<float>::infinity();
    return State(IsMax ? -inf : inf, 0.0f);
  }
  static bool has_nan(const State& v) {
    return std::isnan(v.real()) || std::isnan(v.imag());
  }
  static void add(State& st, State x) {
    if (has_nan(st)) {
      return;
    }
    bool greater = x.real() > st.real() || (x.real() == st.real() && x.imag() > st.imag());
    bool less = x.real() < st.real() || (x.real() == st.real() && x.imag() < st.imag());
    if (has_nan(x) || (IsMax ? greater : less)) {
      st = x;
    }
  }
  static void merge(State& st, const State& other) {
    add(st, other);
  }
  static State finish(State st) {
    return st;
  }
};

// max/min propagate NaN: once the state is NaN it stays NaN.
template <typename T, bool IsMax>
struct Extremum {
  using State = compute_type_t<T>;
  static State init() {
    if constexpr (std::numeric_limits<State>::has_infinity) {
      return IsMax ? -std::numeric_limits<State>::infinity()
                   : std::numeric_limits<State>::infinity();
    } else {
      return IsMax ? std::numeric_limits<State>::lowest() : std::numeric_limits<State>::max();
    }
  }
  static void add_value(State& st, State x) {
    bool better = IsMax ? x > st : x < st;
    if (better || is_nan_value(x)) {
      st = x;
    }
  }
  static void add(State& st, T x) {
    add_value(st, static_cast<State>(x));
  }
  static void merge(State& st, const State& other) {
    add_value(st, other);
  }
  static T finish(State st) {
    return static_cast<T>(st);
  }
};

// all/any read any dtype (NaN counts as true) and output bool.
template <typename T, bool IsAnd>
struct Logical {
  using State = bool;
  static State init() {
    return IsAnd;
  }
  static void add(State& st, T x) {
    bool v;
    if constexpr (is_complex_v<T>) {
      v = x.real() != 0.0f || x.imag() != 0.0f;  // a purely imaginary value is true too
    } else {
      v = cast_value<bool>(x);
    }
    st = IsAnd ? (st && v) : (st || v);
  }
  static void merge(State& st, const State& other) {
    st = IsAnd ? (st && other) : (st || other);
  }
  static bool finish(State st) {
    return st;
  }
};

template <typename T, typename Op>
void reduce_strided(const array& in, array& out, const std::vector<int>& axes) {
  using State = typename Op::State;
  using Out = decltype(Op::finish(Op::init()));
  // A plain buffer, not std::vector: vector<bool> has no addressable elements.
  std::unique_ptr<State[]> acc(new State[out.size()]);
  std::fill(acc.get(), acc.get() + out.size(), Op::init());

  if (in.size() > 0) {
    Strides out_strides = row_major_strides(out.shape());
    for (int ax : axes) {
      out_strides[ax] = 0;
    }
    auto [shape, strides] = collapse_contiguous_dims(in.shape(), {in.strides(), out_strides});
    const T* src = in.data<T>();
    if (shape.empty()) {
      Op::add(acc[0], src[0]);  // a single element
    } else {
      int last = static_cast<int>(shape.size()) - 1;
      int64_t n = shape[last];
      int64_t is = strides[0][last];
      int64_t os = strides[1][last];
      Shape outer_shape(shape.begin(), shape.end() - 1);
      Strides in_outer(strides[0].begin(), strides[0].end() - 1);
      Strides out_outer(strides[1].begin(), strides[1].end() - 1);
      StridedIterator in_it(outer_shape, in_outer);
      StridedIterator out_it(outer_shape, out_outer);
      size_t outer = in.size() / static_cast<size_t>(n);
      for (size_t o = 0; o < outer; ++o) {
        const T* p = src + in_it.loc();
        State* q = acc.get() + out_it.loc();
        if (os == 0) {
          // The innermost dim is reduced: fold it into a local state first.
          State local = Op::init();
          for (int64_t j = 0; j < n; ++j) {
            Op::add(local, p[j * is]);
          }
          Op::merge(*q, local);
        } else {
          for (int64_t j = 0; j < n; ++j) {
            Op::add(q[j * os], p[j * is]);
          }
        }
        in_it.step();
        out_it.step();
      }
    }
  }

  out.set_data(allocator::malloc(out.nbytes()));
  Out* dst = out.data<Out>();
  for (size_t i = 0; i < out.size(); ++i) {
    dst[i] = Op::finish(acc[i]);
  }
}

template <typename T>
void reduce_typed(const array& in, array& out, ReduceType type, const std::vector<int>& axes) {
  constexpr bool is_float = std::is_floating_point_v<compute_type_t<T>>;
  switch (type) {
    case ReduceType::Sum:
      if constexpr (is_complex_v<T>) {
        reduce_strided<T, PlainArith<T, false>>(in, out, axes);
      } else if constexpr (is_float) {
        reduce_strided<T, CompensatedSum<T>>(in, out, axes);
      } else {
        reduce_strided<T, WrappingSum<T>>(in, out, axes);
      }
      return;
    case ReduceType::Prod:
      if constexpr (is_float || is_complex_v<T>) {
        reduce_strided<T, PlainArith<T, true>>(in, out, axes);
      } else {
        reduce_strided<T, WrappingProd<T>>(in, out, axes);
      }
      return;
    case ReduceType::Max:
    case ReduceType::Min:
      if constexpr (is_complex_v<T>) {
        if (type == ReduceType::Max) {
          reduce_strided<T, ComplexExtremum<true>>(in, out, axes);
        } else {
          reduce_strided<T, ComplexExtremum<false>>(in, out, axes);
        }
      } else if (type == ReduceType::Max) {
        reduce_strided<T, Extremum<T, true>>(in, out, axes);
      } else {
        reduce_strided<T, Extremum<T, false>>(in, out, axes);
      }
      return;
    case ReduceType::And:
      reduce_strided<T, Logical<T, true>>(in, out, axes);
      return;
    case ReduceType::Or:
      reduce_strided<T, Logical<T, false>>(in, out, axes);
      return;
  }
}

}  // namespace

void Reduce::eval_cpu(const std::vector<array>& inputs, array& out) {
  const auto& in = inputs[0];
  bool logical = type_ == ReduceType::And || type_ == ReduceType::Or;
  if (logical ? out.dtype() != bool_ : out.dtype() != in.dtype()) {
    throw std::invalid_argument(std::string("[") + name() + "] the CPU reduction expects " +
                                (logical ? "a bool output" : "matching input and output dtypes") +
                                ", got " + dtype_to_string(in.dtype()) + " -> " +
                                dtype_to_string(out.dtype()) + ".");
  }
  dispatch_dtype(in.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    reduce_typed<T>(in, out, type_, axes_);
  });
}

}  // namespace mlx::core
