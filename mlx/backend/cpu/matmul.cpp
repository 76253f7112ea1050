// Matmul::eval_cpu and AddMM::eval_cpu: (..., M, K) x (..., K, N) for float dtypes, any
// strides; AddMM adds beta * C before the one rounding.
//
// The op broadcasts both operands to the output's batch shape (as views), so batch strides
// may be 0. Per batch, B is packed into a dense K x N matrix of the accumulation type and
// C is formed row by row with an i-k-j loop, whose inner loop streams contiguous memory.
// Every float dtype accumulates in double and rounds once on store, so a dot product of
// 2e7 ones is exact (a float32 accumulator stops at 2^24); B is packed in its compute type
// (exact), which keeps the scratch at K x N floats.
#include <stdexcept>

#include "mlx/backend/common/utils.h"
#include "mlx/primitives.h"

namespace mlx::core {

namespace {

// With `c` (AddMM), out = alpha * (a x b) + beta * c, formed in double; c is not read when
// beta is 0 (BLAS's rule).
template <typename T>
void matmul_strided(const array& a, const array& b, array& out, const array* c_in = nullptr,
                    double alpha = 1.0, double beta = 0.0) {
  using Acc = double;                // row sums
  using Packed = compute_type_t<T>;  // B as packed: exact for every float dtype
  int nd = static_cast<int>(out.ndim());
  int64_t M = out.shape(-2);
  int64_t N = out.shape(-1);
  int64_t K = a.shape(-1);
  int64_t a_rs = a.strides(-2), a_cs = a.strides(-1);
  int64_t b_rs = b.strides(-2), b_cs = b.strides(-1);

  Shape batch_shape(out.shape().begin(), out.shape().end() - 2);
  Strides a_batch(a.strides().begin(), a.strides().begin() + (nd - 2));
  Strides b_batch(b.strides().begin(), b.strides().begin() + (nd - 2));
  size_t batches = M * N == 0 ? 0 : out.size() / static_cast<size_t>(M * N);
  StridedIterator a_it(batch_shape, a_batch);
  StridedIterator b_it(batch_shape, b_batch);
  bool add_c = c_in != nullptr && beta != 0.0;
  Strides c_batch = add_c ? Strides(c_in->strides().begin(), c_in->strides().begin() + (nd - 2))
                          : Strides(nd - 2, 0);
  StridedIterator c_it(batch_shape, c_batch);
  int64_t c_rs = add_c ? c_in->strides(-2) : 0, c_cs = add_c ? c_in->strides(-1) : 0;

  T* c = out.data<T>();
  std::vector<Packed> packed(static_cast<size_t>(K * N));
  std::vector<Acc> row(static_cast<size_t>(N));
  for (size_t batch = 0; batch < batches; ++batch, a_it.step(), b_it.step(), c_it.step()) {
    const T* A = a.data<T>() + a_it.loc();
    const T* B = b.data<T>() + b_it.loc();
    for (int64_t k = 0; k < K; ++k) {
      for (int64_t j = 0; j < N; ++j) {
        packed[k * N + j] = static_cast<Packed>(B[k * b_rs + j * b_cs]);
      }
    }
    for (int64_t i = 0; i < M; ++i) {
      std::fill(row.begin(), row.end(), Acc(0));
      for (int64_t k = 0; k < K; ++k) {
        Acc aik = static_cast<Acc>(A[i * a_rs + k * a_cs]);
        const Packed* bk = packed.data() + k * N;
        for (int64_t j = 0; j < N; ++j) {
          row[j] += aik * bk[j];
        }
      }
      T* ci = c + (batch * M + i) * N;
      if (c_in == nullptr) {
        for (int64_t j = 0; j < N; ++j) {
          ci[j] = static_cast<T>(row[j]);
        }
      } else if (!add_c) {
        for (int64_t j = 0; j < N; ++j) {
          ci[j] = static_cast<T>(alpha * row[j]);
        }
      } else {
        const T* C = c_in->data<T>() + c_it.loc() + i * c_rs;
        for (int64_t j = 0; j < N; ++j) {
          ci[j] = static_cast<T>(alpha * row[j] + beta * static_cast<Acc>(C[j * c_cs]));
        }
      }
    }
  }
}

}  // namespace

void Matmul::eval_cpu(const std::vector<array>& inputs, array& out) {
  const auto& a = inputs[0];
  const auto& b = inputs[1];
  if (a.dtype() != out.dtype() || b.dtype() != out.dtype() || a.ndim() != out.ndim() ||
      b.ndim() != out.ndim() || out.ndim() < 2) {
    throw std::invalid_argument(
        "[Matmul] expects operands of the output's dtype and rank (>= 2), broadcast to its "
        "batch shape.");
  }
  out.set_data(allocator::malloc(out.nbytes()));
  dispatch_dtype(out.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_floating_point_v<compute_type_t<T>>) {
      matmul_strided<T>(a, b, out);
    } else {
      throw std::invalid_argument("[matmul] only floating point types are supported, got " +
                                  dtype_to_string(out.dtype()) + ".");
    }
  });
}

void AddMM::eval_cpu(const std::vector<array>& inputs, array& out) {
  const auto& a = inputs[0];
  const auto& b = inputs[1];
  const auto& c = inputs[2];
  if (a.dtype() != out.dtype() || b.dtype() != out.dtype() || c.dtype() != out.dtype() ||
      a.ndim() != out.ndim() || b.ndim() != out.ndim() || c.shape() != out.shape() ||
      out.ndim() < 2) {
    throw std::invalid_argument(
        "[AddMM] expects a and b of the output's dtype and rank (>= 2), broadcast to its batch "
        "shape, and c broadcast to its shape.");
  }
  out.set_data(allocator::malloc(out.nbytes()));
  dispatch_dtype(out.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_floating_point_v<compute_type_t<T>>) {
      matmul_strided<T>(a, b, out, &c, alpha_, beta_);
    } else {
      throw std::invalid_argument("[addmm] only floating point types are supported, got " +
                                  dtype_to_string(out.dtype()) + ".");
    }
  });
}

}  // namespace mlx::core
