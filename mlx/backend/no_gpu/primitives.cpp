// Without a GPU backend every primitive's eval_gpu reports that clearly.
#include <stdexcept>

#include "mlx/fast_primitives.h"
#include "mlx/primitives.h"

namespace mlx::core {

#define NO_GPU(P)                                                                         \
  void P::eval_gpu(const std::vector<array>&, array&) {                                   \
    throw std::runtime_error(std::string("[") + name() + "] has no GPU implementation."); \
  }
#define NO_GPU_MULTI(P)                                                                   \
  void P::eval_gpu(const std::vector<array>&, std::vector<array>&) {                      \
    throw std::runtime_error(std::string("[") + name() + "] has no GPU implementation."); \
  }

NO_GPU(Unary)
NO_GPU(Binary)
NO_GPU_MULTI(DivMod)
NO_GPU_MULTI(Compiled)
NO_GPU(Select)
NO_GPU(AsType)
NO_GPU(Copy)
NO_GPU(Full)
NO_GPU(Contiguous)
NO_GPU(Arange)
NO_GPU(RandomBits)
NO_GPU(Reshape)
NO_GPU(Transpose)
NO_GPU(Broadcast)
NO_GPU(Slice)
NO_GPU(SliceUpdate)
NO_GPU(Concatenate)
NO_GPU(Take)
NO_GPU(TakeAlongAxis)
NO_GPU(AsStrided)
NO_GPU(Reduce)
NO_GPU(ArgReduce)
NO_GPU(Softmax)
NO_GPU(fast::RMSNorm)
NO_GPU(fast::LayerNorm)
NO_GPU(fast::RoPE)
NO_GPU(fast::ScaledDotProductAttention)
NO_GPU_MULTI(fast::DecodeAttention)
NO_GPU(Matmul)
NO_GPU(Scan)
NO_GPU(Sort)
NO_GPU(ArgSort)
NO_GPU(Partition)
NO_GPU(ArgPartition)
NO_GPU(AddMM)
NO_GPU_MULTI(AffineQuantize)
NO_GPU(Dequantize)
NO_GPU(QuantizedMatmul)
NO_GPU(Gather)
NO_GPU(Scatter)
NO_GPU(ScatterAxis)
NO_GPU(DynamicSlice)
NO_GPU(DynamicSliceUpdate)

}  // namespace mlx::core
