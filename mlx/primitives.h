// Graph nodes. Each primitive computes its outputs from its inputs on a stream, through
// eval_cpu (the reference backend) or eval_gpu (the GPU backend), as in MLX.
//
// Elementwise families are one primitive with an op enum (Unary, Binary) rather than one
// class per op: a GPU backend then maps an enum value to one line of kernel source, and
// name() still reports the MLX op name ("Add", "Exp", ...).
#pragma once

#include <mutex>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "mlx/array.h"
#include "mlx/stream.h"

namespace mlx::core {

class Primitive {
 public:
  explicit Primitive(Stream stream) : stream_(stream) {}
  Primitive(const Primitive&) = delete;
  Primitive& operator=(const Primitive&) = delete;
  virtual ~Primitive() = default;

  const Stream& stream() const {
    return stream_;
  }
  const Device& device() const {
    return stream_.device;
  }

  // Outputs arrive with shape and dtype set and no data; the primitive gives them data.
  virtual void eval_cpu(const std::vector<array>& inputs, std::vector<array>& outputs) = 0;
  virtual void eval_gpu(const std::vector<array>& inputs, std::vector<array>& outputs) = 0;

  virtual const char* name() const = 0;
  virtual void print(std::ostream& os) {
    os << name();
  }
  virtual bool is_equivalent(const Primitive&) const {
    return false;
  }

  // Output shapes for the given inputs, for primitives whose shapes follow from inputs.
  virtual std::vector<Shape> output_shapes(const std::vector<array>& inputs);

 private:
  Stream stream_;
};

// A primitive with exactly one output.
class UnaryPrimitive : public Primitive {
 public:
  using Primitive::Primitive;
  virtual void eval_cpu(const std::vector<array>& inputs, array& out) = 0;
  virtual void eval_gpu(const std::vector<array>& inputs, array& out) = 0;
  void eval_cpu(const std::vector<array>& inputs, std::vector<array>& outputs) override {
    eval_cpu(inputs, outputs[0]);
  }
  void eval_gpu(const std::vector<array>& inputs, std::vector<array>& outputs) override {
    eval_gpu(inputs, outputs[0]);
  }
};

#define MLX_DECLARE_UNARY_EVAL                                          \
  void eval_cpu(const std::vector<array>& inputs, array& out) override; \
  void eval_gpu(const std::vector<array>& inputs, array& out) override;

#define MLX_DECLARE_MULTI_EVAL                                                           \
  void eval_cpu(const std::vector<array>& inputs, std::vector<array>& outputs) override; \
  void eval_gpu(const std::vector<array>& inputs, std::vector<array>& outputs) override;

// ---------------------------------------------------------------------------------------
// Elementwise

enum class UnaryOp {
  Abs,
  Negative,
  Sign,
  Sqrt,
  Rsqrt,
  Square,
  Exp,
  Expm1,
  Log,
  Log1p,
  Log2,
  Log10,
  Sin,
  Cos,
  Tan,
  ArcSin,
  ArcCos,
  ArcTan,
  Sinh,
  Cosh,
  Tanh,
  ArcSinh,
  ArcCosh,
  ArcTanh,
  Sigmoid,
  Erf,
  ErfInv,
  Floor,
  Ceil,
  Round,
  LogicalNot,
  BitwiseInvert,
  IsNan,
  IsInf,
};
const char* unary_op_name(UnaryOp op);

enum class BinaryOp {
  Add,
  Subtract,
  Multiply,
  Divide,
  FloorDivide,
  Remainder,
  Power,
  Maximum,
  Minimum,
  Equal,
  NotEqual,
  Less,
  LessEqual,
  Greater,
  GreaterEqual,
  LogicalAnd,
  LogicalOr,
  LogAddExp,
  ArcTan2,
  BitwiseAnd,
  BitwiseOr,
  BitwiseXor,
  LeftShift,
  RightShift,
  NaNEqual,  // equal, with NaN == NaN (array_equal(..., equal_nan=true))
};
const char* binary_op_name(BinaryOp op);
// Comparison and logical ops produce bool.
bool binary_op_is_predicate(BinaryOp op);

class Unary final : public UnaryPrimitive {
 public:
  Unary(Stream s, UnaryOp op) : UnaryPrimitive(s), op_(op) {}
  MLX_DECLARE_UNARY_EVAL
  const char* name() const override {
    return unary_op_name(op_);
  }
  bool is_equivalent(const Primitive& other) const override;
  std::vector<Shape> output_shapes(const std::vector<array>& inputs) override;
  UnaryOp op() const {
    return op_;
  }

 private:
  UnaryOp op_;
};

// Inputs are broadcast to the output shape and share the output's compute dtype
// (the op casts them first); predicates output bool.
class Binary final : public UnaryPrimitive {
 public:
  Binary(Stream s, BinaryOp op) : UnaryPrimitive(s), op_(op) {}
  MLX_DECLARE_UNARY_EVAL
  const char* name() const override {
    return binary_op_name(op_);
  }
  bool is_equivalent(const Primitive& other) const override;
  std::vector<Shape> output_shapes(const std::vector<array>& inputs) override;
  BinaryOp op() const {
    return op_;
  }

 private:
  BinaryOp op_;
};

// A group of elementwise ops fused by compile() (mlx/compile.cpp, docs/compile.md): its
// inputs are the group's inputs, its outputs the group's values used outside it, all of one
// shape. `tape` holds the group's nodes as traced (each after its inputs; their inputs are
// other tape nodes or entries of `inner_inputs`, the traced arrays standing for this
// primitive's inputs in order); `inner_outputs` are the tape nodes behind its outputs.
class Compiled final : public Primitive {
 public:
  // `constants`: per inner input, when it is a scalar constant known at trace time, its
  // value's bits as stored (zero-extended; a backend may write it into the kernel), else
  // nullopt.
  Compiled(Stream s, std::vector<array> inner_inputs, std::vector<array> inner_outputs,
           std::vector<array> tape, std::vector<std::optional<uint64_t>> constants = {})
      : Primitive(s),
        inner_inputs_(std::move(inner_inputs)),
        inner_outputs_(std::move(inner_outputs)),
        tape_(std::move(tape)),
        constants_(std::move(constants)) {}
  MLX_DECLARE_MULTI_EVAL
  const char* name() const override {
    return "Compiled";
  }
  std::vector<Shape> output_shapes(const std::vector<array>& inputs) override;
  const std::vector<array>& tape() const {
    return tape_;
  }
  const std::vector<array>& inner_inputs() const {
    return inner_inputs_;
  }
  const std::vector<array>& inner_outputs() const {
    return inner_outputs_;
  }
  const std::vector<std::optional<uint64_t>>& constants() const {
    return constants_;
  }
  // Runs the tape on `inputs` node by node with `run` (a primitive's eval on one device),
  // making each node's result with the shapes its inputs give; fills `outputs` (sharing
  // the results' buffers) and returns every intermediate result.
  using RunNode = void (*)(Primitive&, const std::vector<array>&, std::vector<array>&);
  std::vector<array> run_tape(const std::vector<array>& inputs, std::vector<array>& outputs,
                              RunNode run) const;
  // What a backend derived from the tape once (a compiled function's replays share this
  // primitive, so the derivation is not redone per call); opaque to the core.
  std::shared_ptr<void>& backend_cache() const {
    return backend_cache_;
  }

 private:
  std::vector<array> inner_inputs_;
  std::vector<array> inner_outputs_;
  std::vector<array> tape_;
  std::vector<std::optional<uint64_t>> constants_;
  mutable std::shared_ptr<void> backend_cache_;
  // The last call's shapes (output_shapes), guarded: replays may run on several threads.
  std::mutex shapes_mtx_;
  bool have_shapes_ = false;
  std::vector<Shape> last_input_shapes_, last_output_shapes_;
};

// Two outputs: floor_divide and remainder, computed together.
class DivMod : public Primitive {
 public:
  explicit DivMod(Stream s) : Primitive(s) {}
  MLX_DECLARE_MULTI_EVAL
  const char* name() const override {
    return "DivMod";
  }
};

// where(condition, x, y); inputs broadcast to the output shape, x and y share its dtype.
class Select : public UnaryPrimitive {
 public:
  explicit Select(Stream s) : UnaryPrimitive(s) {}
  MLX_DECLARE_UNARY_EVAL
  const char* name() const override {
    return "Select";
  }
  bool is_equivalent(const Primitive& other) const override {
    return dynamic_cast<const Select*>(&other) != nullptr;
  }
  std::vector<Shape> output_shapes(const std::vector<array>& inputs) override;
};

class AsType : public UnaryPrimitive {
 public:
  AsType(Stream s, Dtype dtype) : UnaryPrimitive(s), dtype_(dtype) {}
  MLX_DECLARE_UNARY_EVAL
  const char* name() const override {
    return "AsType";
  }
  bool is_equivalent(const Primitive& other) const override {
    auto* o = dynamic_cast<const AsType*>(&other);
    return o && o->dtype_ == dtype_;
  }
  std::vector<Shape> output_shapes(const std::vector<array>& inputs) override {
    return {inputs[0].shape()};
  }
  Dtype dtype() const {
    return dtype_;
  }

 private:
  Dtype dtype_;
};

// A fresh row-contiguous copy.
class Copy : public UnaryPrimitive {
 public:
  explicit Copy(Stream s) : UnaryPrimitive(s) {}
  MLX_DECLARE_UNARY_EVAL
  const char* name() const override {
    return "Copy";
  }
};

// full(): materializes its (broadcast) input into a fresh row-contiguous array, as MLX's
// Full does, so ones({10, 10}) owns 100 elements rather than being a stride-0 view.
class Full : public UnaryPrimitive {
 public:
  explicit Full(Stream s) : UnaryPrimitive(s) {}
  MLX_DECLARE_UNARY_EVAL
  const char* name() const override {
    return "Full";
  }
};

// A view when the input is already contiguous in the allowed order, else a copy.
class Contiguous : public UnaryPrimitive {
 public:
  Contiguous(Stream s, bool allow_col_major)
      : UnaryPrimitive(s), allow_col_major_(allow_col_major) {}
  MLX_DECLARE_UNARY_EVAL
  const char* name() const override {
    return "Contiguous";
  }
  bool allow_col_major() const {
    return allow_col_major_;
  }

 private:
  bool allow_col_major_;
};

// ---------------------------------------------------------------------------------------
// Creation

class Arange : public UnaryPrimitive {
 public:
  Arange(Stream s, double start, double stop, double step)
      : UnaryPrimitive(s), start_(start), stop_(stop), step_(step) {}
  MLX_DECLARE_UNARY_EVAL
  const char* name() const override {
    return "Arange";
  }
  double start() const {
    return start_;
  }
  double step() const {
    return step_;
  }

 private:
  double start_, stop_, step_;
};

// Counter-based random bits (Threefry-2x32-20) from a uint32 key of shape (2,).
// The output is uint32 (or uint8/uint16 for width 1/2) of the requested shape; the bits of
// element i depend only on the key and i, so results are reproducible everywhere.
class RandomBits : public UnaryPrimitive {
 public:
  RandomBits(Stream s, Shape shape, int width)
      : UnaryPrimitive(s), shape_(std::move(shape)), width_(width) {}
  MLX_DECLARE_UNARY_EVAL
  const char* name() const override {
    return "RandomBits";
  }
  int width() const {
    return width_;
  }

 private:
  Shape shape_;
  int width_;
};

// ---------------------------------------------------------------------------------------
// Shapes and views. Views share the input's buffer; no data moves.

class Reshape final : public UnaryPrimitive {
 public:
  Reshape(Stream s, Shape shape) : UnaryPrimitive(s), shape_(std::move(shape)) {}
  MLX_DECLARE_UNARY_EVAL
  const char* name() const override {
    return "Reshape";
  }
  bool is_equivalent(const Primitive& other) const override {
    auto* o = dynamic_cast<const Reshape*>(&other);
    return o && o->shape_ == shape_;
  }
  const Shape& shape() const {
    return shape_;
  }

 private:
  Shape shape_;
};

class Transpose : public UnaryPrimitive {
 public:
  Transpose(Stream s, std::vector<int> axes) : UnaryPrimitive(s), axes_(std::move(axes)) {}
  MLX_DECLARE_UNARY_EVAL
  const char* name() const override {
    return "Transpose";
  }
  bool is_equivalent(const Primitive& other) const override {
    auto* o = dynamic_cast<const Transpose*>(&other);
    return o && o->axes_ == axes_;
  }
  const std::vector<int>& axes() const {
    return axes_;
  }

 private:
  std::vector<int> axes_;
};

class Broadcast : public UnaryPrimitive {
 public:
  Broadcast(Stream s, Shape shape) : UnaryPrimitive(s), shape_(std::move(shape)) {}
  MLX_DECLARE_UNARY_EVAL
  bool is_equivalent(const Primitive& other) const override {
    auto* o = dynamic_cast<const Broadcast*>(&other);
    return o && o->shape_ == shape_;
  }
  const char* name() const override {
    return "Broadcast";
  }
  const Shape& shape() const {
    return shape_;
  }

 private:
  Shape shape_;
};

// start/stop/strides are normalized by the op: 0 <= start, and stop is exclusive; a
// negative stride walks backwards from start.
class Slice final : public UnaryPrimitive {
 public:
  Slice(Stream s, Shape start, Shape stop, Shape strides)
      : UnaryPrimitive(s),
        start_(std::move(start)),
        stop_(std::move(stop)),
        strides_(std::move(strides)) {}
  MLX_DECLARE_UNARY_EVAL
  const char* name() const override {
    return "Slice";
  }
  const Shape& start() const {
    return start_;
  }
  const Shape& stop() const {
    return stop_;
  }
  const Shape& strides() const {
    return strides_;
  }

 private:
  Shape start_, stop_, strides_;
};

// inputs: {src, update}; writes update into a copy of src at the (normalized) slice.
class SliceUpdate : public UnaryPrimitive {
 public:
  SliceUpdate(Stream s, Shape start, Shape stop, Shape strides)
      : UnaryPrimitive(s),
        start_(std::move(start)),
        stop_(std::move(stop)),
        strides_(std::move(strides)) {}
  MLX_DECLARE_UNARY_EVAL
  const char* name() const override {
    return "SliceUpdate";
  }
  const Shape& start() const {
    return start_;
  }
  const Shape& stop() const {
    return stop_;
  }
  const Shape& strides() const {
    return strides_;
  }

 private:
  Shape start_, stop_, strides_;
};

class Concatenate : public UnaryPrimitive {
 public:
  Concatenate(Stream s, int axis) : UnaryPrimitive(s), axis_(axis) {}
  MLX_DECLARE_UNARY_EVAL
  const char* name() const override {
    return "Concatenate";
  }
  int axis() const {
    return axis_;
  }

 private:
  int axis_;
};

// inputs: {a, indices}; out = a.shape[:axis] + indices.shape + a.shape[axis+1:].
// Negative indices count from the end; indices out of range raise at eval on the CPU and
// read zeros on the GPU (docs/indexing.md).
class Take final : public UnaryPrimitive {
 public:
  Take(Stream s, int axis) : UnaryPrimitive(s), axis_(axis) {}
  MLX_DECLARE_UNARY_EVAL
  const char* name() const override {
    return "Take";
  }
  int axis() const {
    return axis_;
  }

 private:
  int axis_;
};

// inputs: {a, indices} already broadcast against each other except along axis.
class TakeAlongAxis : public UnaryPrimitive {
 public:
  TakeAlongAxis(Stream s, int axis) : UnaryPrimitive(s), axis_(axis) {}
  MLX_DECLARE_UNARY_EVAL
  const char* name() const override {
    return "TakeAlongAxis";
  }
  int axis() const {
    return axis_;
  }

 private:
  int axis_;
};

class AsStrided : public UnaryPrimitive {
 public:
  AsStrided(Stream s, Shape shape, Strides strides, size_t offset)
      : UnaryPrimitive(s),
        shape_(std::move(shape)),
        strides_(std::move(strides)),
        offset_(offset) {}
  MLX_DECLARE_UNARY_EVAL
  const char* name() const override {
    return "AsStrided";
  }

 private:
  Shape shape_;
  Strides strides_;
  size_t offset_;
};

// ---------------------------------------------------------------------------------------
// Reductions. Outputs keep reduced axes with size 1; ops squeeze them unless keepdims.

enum class ReduceType { Sum, Prod, Max, Min, And, Or };

class Reduce : public UnaryPrimitive {
 public:
  // MLX spells these Reduce::Sum, Reduce::ReduceType, ...
  using ReduceType = mlx::core::ReduceType;
  static constexpr ReduceType And = ReduceType::And, Or = ReduceType::Or, Sum = ReduceType::Sum,
                              Prod = ReduceType::Prod, Min = ReduceType::Min, Max = ReduceType::Max;
  Reduce(Stream s, ReduceType type, std::vector<int> axes)
      : UnaryPrimitive(s), type_(type), axes_(std::move(axes)) {}
  MLX_DECLARE_UNARY_EVAL
  const char* name() const override;
  ReduceType type() const {
    return type_;
  }
  const std::vector<int>& axes() const {
    return axes_;
  }

 private:
  ReduceType type_;
  std::vector<int> axes_;
};

enum class ArgReduceType { ArgMax, ArgMin };

// uint32 indices of the first max/min along one axis (NaN counts as the extreme).
class ArgReduce : public UnaryPrimitive {
 public:
  // MLX spells these ArgReduce::ArgMax, ArgReduce::ReduceType.
  using ReduceType = ArgReduceType;
  static constexpr ReduceType ArgMin = ReduceType::ArgMin, ArgMax = ReduceType::ArgMax;
  ArgReduce(Stream s, ArgReduceType type, int axis) : UnaryPrimitive(s), type_(type), axis_(axis) {}
  MLX_DECLARE_UNARY_EVAL
  const char* name() const override {
    return type_ == ArgReduceType::ArgMax ? "ArgMax" : "ArgMin";
  }
  ArgReduceType type() const {
    return type_;
  }
  int axis() const {
    return axis_;
  }

 private:
  ArgReduceType type_;
  int axis_;
};

// Sorting along one axis (mlx/ops_sort.cpp, docs/sort.md): ascending, stable, NaN last
// (MLX's comparator). ArgSort and ArgPartition give uint32 indices. Partition and
// ArgPartition put the kth element in its sorted place, smaller (or equal) ones before it
// and the rest after; both devices give a fully sorted row, which is one such arrangement.
class Sort : public UnaryPrimitive {
 public:
  Sort(Stream s, int axis) : UnaryPrimitive(s), axis_(axis) {}
  MLX_DECLARE_UNARY_EVAL
  const char* name() const override {
    return "Sort";
  }
  int axis() const {
    return axis_;
  }

 private:
  int axis_;
};

class ArgSort : public UnaryPrimitive {
 public:
  ArgSort(Stream s, int axis) : UnaryPrimitive(s), axis_(axis) {}
  MLX_DECLARE_UNARY_EVAL
  const char* name() const override {
    return "ArgSort";
  }
  int axis() const {
    return axis_;
  }

 private:
  int axis_;
};

class Partition : public UnaryPrimitive {
 public:
  Partition(Stream s, int kth, int axis) : UnaryPrimitive(s), kth_(kth), axis_(axis) {}
  MLX_DECLARE_UNARY_EVAL
  const char* name() const override {
    return "Partition";
  }
  int kth() const {
    return kth_;
  }
  int axis() const {
    return axis_;
  }

 private:
  int kth_;
  int axis_;
};

class ArgPartition : public UnaryPrimitive {
 public:
  ArgPartition(Stream s, int kth, int axis) : UnaryPrimitive(s), kth_(kth), axis_(axis) {}
  MLX_DECLARE_UNARY_EVAL
  const char* name() const override {
    return "ArgPartition";
  }
  int kth() const {
    return kth_;
  }
  int axis() const {
    return axis_;
  }

 private:
  int kth_;
  int axis_;
};

// Cumulative sum / product / max / min along one axis (MLX's Scan): `reverse` scans from the
// end, an exclusive scan starts from the identity and leaves out the element itself.
class Scan : public UnaryPrimitive {
 public:
  enum ReduceType { Max, Min, Sum, Prod, LogAddExp };
  Scan(Stream s, ReduceType type, int axis, bool reverse, bool inclusive)
      : UnaryPrimitive(s), type_(type), axis_(axis), reverse_(reverse), inclusive_(inclusive) {}
  MLX_DECLARE_UNARY_EVAL
  const char* name() const override {
    return type_ == Sum         ? "CumSum"
           : type_ == Prod      ? "CumProd"
           : type_ == Max       ? "CumMax"
           : type_ == Min       ? "CumMin"
                                : "CumLogAddExp";
  }
  ReduceType type() const {
    return type_;
  }
  int axis() const {
    return axis_;
  }
  bool reverse() const {
    return reverse_;
  }
  bool inclusive() const {
    return inclusive_;
  }

 private:
  ReduceType type_;
  int axis_;
  bool reverse_;
  bool inclusive_;
};

// Softmax over the last axis, accumulated in float32 for 16-bit inputs.
class Softmax : public UnaryPrimitive {
 public:
  Softmax(Stream s, bool precise) : UnaryPrimitive(s), precise_(precise) {}
  MLX_DECLARE_UNARY_EVAL
  const char* name() const override {
    return "Softmax";
  }
  bool precise() const {
    return precise_;
  }

 private:
  bool precise_;
};

// ---------------------------------------------------------------------------------------
// Linear algebra

// inputs: {a (..., M, K), b (..., K, N)} broadcast over batch dims; float dtypes.
class Matmul : public UnaryPrimitive {
 public:
  explicit Matmul(Stream s) : UnaryPrimitive(s) {}
  MLX_DECLARE_UNARY_EVAL
  const char* name() const override {
    return "Matmul";
  }
};

// out = alpha * (a @ b) + beta * c (MLX's AddMM). inputs: {a (..., M, K), b (..., K, N),
// c (..., M, N)}, all of the output's float dtype and shape-compatible with it: a and b
// broadcast to the output's batch shape, c to its whole shape (views; strides may be 0).
// With beta == 0, c is not read (BLAS's rule, so a NaN in c does not show).
class AddMM : public UnaryPrimitive {
 public:
  AddMM(Stream s, float alpha, float beta) : UnaryPrimitive(s), alpha_(alpha), beta_(beta) {}
  MLX_DECLARE_UNARY_EVAL
  const char* name() const override {
    return "AddMM";
  }
  bool is_equivalent(const Primitive& other) const override {
    auto* o = dynamic_cast<const AddMM*>(&other);
    return o && o->alpha_ == alpha_ && o->beta_ == beta_;
  }
  float alpha() const {
    return alpha_;
  }
  float beta() const {
    return beta_;
  }

 private:
  float alpha_;
  float beta_;
};

// ---------------------------------------------------------------------------------------
// Affine quantization in MLX's format (docs/quantization.md). group_size is 32, 64 or 128
// and bits 2, 3, 4, 5, 6 or 8; the ops check both, and the shapes, before making a node.
// Along the last axis of K elements, element e of a row occupies bits [e*bits, (e+1)*bits)
// of the row's little-endian bit stream of K*bits/32 uint32 words; one (scale, bias) pair
// per group of group_size elements; the value is scale * q + bias.

// quantize(). inputs: {w (..., K) float16, bfloat16 or float32, any strides}. outputs,
// row-contiguous: {w_q uint32 (..., K*bits/32), scales (..., K/group_size) and biases (same
// shape), both in w's dtype}.
class AffineQuantize : public Primitive {
 public:
  AffineQuantize(Stream s, int group_size, int bits)
      : Primitive(s), group_size_(group_size), bits_(bits) {}
  MLX_DECLARE_MULTI_EVAL
  const char* name() const override {
    return "AffineQuantize";
  }
  bool is_equivalent(const Primitive& other) const override {
    auto* o = dynamic_cast<const AffineQuantize*>(&other);
    return o && o->group_size_ == group_size_ && o->bits_ == bits_;
  }
  int group_size() const {
    return group_size_;
  }
  int bits() const {
    return bits_;
  }

 private:
  int group_size_;
  int bits_;
};

// dequantize(). inputs: {w_q uint32 (..., K*bits/32), scales (..., K/group_size), biases
// (scales' shape and dtype)}, any strides; scales' dtype is the output's (float16,
// bfloat16, float32; float64 too, which MLX's CPU backend also takes). out
// (..., K) = T(T(scale * q) + bias) with T the output dtype: the product is rounded to T
// before the add, as MLX computes it (multiply, then add).
// With `rows`, inputs {w, scales, biases, ids}: the rows of 2-d w, scales and biases that
// take(., ids, 0) would pick, dequantized (mlx/fusion.h: a quantized embedding's lookup).
class Dequantize : public UnaryPrimitive {
 public:
  Dequantize(Stream s, int group_size, int bits, bool rows = false)
      : UnaryPrimitive(s), group_size_(group_size), bits_(bits), rows_(rows) {}
  MLX_DECLARE_UNARY_EVAL
  const char* name() const override {
    return "Dequantize";
  }
  bool is_equivalent(const Primitive& other) const override {
    auto* o = dynamic_cast<const Dequantize*>(&other);
    return o && o->group_size_ == group_size_ && o->bits_ == bits_ && o->rows_ == rows_;
  }
  int group_size() const {
    return group_size_;
  }
  int bits() const {
    return bits_;
  }
  bool rows() const {
    return rows_;
  }

 private:
  int group_size_;
  int bits_;
  bool rows_;
};

// quantized_matmul(). inputs: {x (..., M, K), w uint32, scales, biases}; x, scales and
// biases share the output's dtype (float16, bfloat16 or float32). transpose: w is
// (..., N, K*bits/32) and out = x @ dequantize(w).T; else w is (..., K, N*bits/32) and
// out = x @ dequantize(w). w, scales and biases (scales: w's shape with a last dim of
// K/group_size or N/group_size) are either 2-d, or have x's rank and x's batch dims
// (broadcast views whose batch strides may be 0). out: x.shape[:-1] + (N,).
// Whether AsType from `from` to `to` keeps every bit pattern: integer types (not bool) of
// one width, where the conversion wraps. Such an AsType shares its input's buffer.
bool reinterprets_bits(Dtype from, Dtype to);

// The two halves of a product's last axis as views (a GLU's gate and up), made by Slice's
// eval on the GPU or the CPU: QuantizedMatmul with glu runs its activation on them when its
// kernel cannot (mlx/backend/vulkan/quantized.cpp).
std::vector<array> glu_halves(const array& product, Stream s, bool gpu);

class QuantizedMatmul final : public UnaryPrimitive {
 public:
  // inputs: {x, w, scales, biases}, then with norm_eps the weight of an rms_norm applied to
  // x's rows first, then with residual an array of the output's shape and dtype added to
  // the product (mlx/fusion.h: the product of an rms_norm's output reads its input, and
  // the sum of a product and an array is one op). With glu (a compiled SwiGLU, mlx/fusion.h)
  // the output is glu(P[..., :N/2], P[..., N/2:]) of the product P, N/2 columns.
  QuantizedMatmul(Stream s, int group_size, int bits, bool transpose,
                  std::optional<float> norm_eps = std::nullopt, bool residual = false,
                  std::shared_ptr<Primitive> glu = nullptr)
      : UnaryPrimitive(s),
        group_size_(group_size),
        bits_(bits),
        transpose_(transpose),
        norm_eps_(norm_eps),
        residual_(residual),
        glu_(std::move(glu)) {}
  MLX_DECLARE_UNARY_EVAL
  const char* name() const override {
    return "QuantizedMatmul";
  }
  bool is_equivalent(const Primitive& other) const override {
    auto* o = dynamic_cast<const QuantizedMatmul*>(&other);
    return o && o->group_size_ == group_size_ && o->bits_ == bits_ &&
           o->transpose_ == transpose_ && o->norm_eps_ == norm_eps_ && o->residual_ == residual_ &&
           o->glu_ == glu_;
  }
  int group_size() const {
    return group_size_;
  }
  int bits() const {
    return bits_;
  }
  bool transpose() const {
    return transpose_;
  }
  // The absorbed rms_norm's eps; its weight is inputs[4].
  const std::optional<float>& norm_eps() const {
    return norm_eps_;
  }
  // Whether inputs.back() is added to the product.
  bool residual() const {
    return residual_;
  }
  // The elementwise group applied to the product's two halves, or nullptr.
  const std::shared_ptr<Primitive>& glu() const {
    return glu_;
  }

 private:
  int group_size_;
  int bits_;
  bool transpose_;
  std::optional<float> norm_eps_;
  bool residual_;
  std::shared_ptr<Primitive> glu_;
};

// ---------------------------------------------------------------------------------------
// Indexing with index arrays and dynamic slicing (mlx/ops_indexing.cpp, docs/indexing.md),
// MLX's Gather, Scatter, ScatterAxis, DynamicSlice and DynamicSliceUpdate. Index arrays have
// one integer dtype; a negative index counts from the end of its axis. An index whose
// window leaves the axis raises "[op] ... out of bounds" at eval on the CPU (MLX does not
// check); GPU kernels cannot raise, so there a gather reads zeros and a scatter drops the
// update. Dynamic starts are clamped so the window fits (on both devices).

// gather(). inputs: {a, idx_0, ..., idx_{n-1}}, the index arrays broadcast to one shape I.
// out = I + slice_sizes: out[i, s] = a at coordinate idx_k[i] + s[axes[k]] on axes[k] and
// s[d] on the other axes.
class Gather : public UnaryPrimitive {
 public:
  Gather(Stream s, std::vector<int> axes, Shape slice_sizes)
      : UnaryPrimitive(s), axes_(std::move(axes)), slice_sizes_(std::move(slice_sizes)) {}
  MLX_DECLARE_UNARY_EVAL
  const char* name() const override {
    return "Gather";
  }
  bool is_equivalent(const Primitive& other) const override {
    auto* o = dynamic_cast<const Gather*>(&other);
    return o && o->axes_ == axes_ && o->slice_sizes_ == slice_sizes_;
  }
  const std::vector<int>& axes() const {
    return axes_;
  }
  const Shape& slice_sizes() const {
    return slice_sizes_;
  }

 private:
  std::vector<int> axes_;
  Shape slice_sizes_;
};

// scatter() and scatter_add/prod/max/min(). inputs: {a, idx_0, ..., idx_{n-1}, updates},
// the index arrays broadcast to one shape I, updates of shape I + (a window no larger than
// a, of a's rank) and a's dtype. out = a with window i of updates combined into a at
// coordinate idx_k[i] on axes[k] and 0 on the other axes, in order of i (a later duplicate
// overwrites for None).
class Scatter : public UnaryPrimitive {
 public:
  enum ReduceType { None, Sum, Prod, Max, Min };
  Scatter(Stream s, ReduceType reduce_type, std::vector<int> axes)
      : UnaryPrimitive(s), reduce_type_(reduce_type), axes_(std::move(axes)) {}
  MLX_DECLARE_UNARY_EVAL
  const char* name() const override;
  bool is_equivalent(const Primitive& other) const override {
    auto* o = dynamic_cast<const Scatter*>(&other);
    return o && o->reduce_type_ == reduce_type_ && o->axes_ == axes_;
  }
  ReduceType reduce_type() const {
    return reduce_type_;
  }
  const std::vector<int>& axes() const {
    return axes_;
  }

 private:
  ReduceType reduce_type_;
  std::vector<int> axes_;
};

// put_along_axis (None) and scatter_add_axis (Sum). inputs: {a, indices, values}, all of
// a's shape except along `axis`, where indices and values share their own extent; values
// in a's dtype. out[..., indices[..., j, ...], ...] (op)= values[..., j, ...].
class ScatterAxis : public UnaryPrimitive {
 public:
  enum ReduceType { None, Sum };
  ScatterAxis(Stream s, ReduceType reduce_type, int axis)
      : UnaryPrimitive(s), reduce_type_(reduce_type), axis_(axis) {}
  MLX_DECLARE_UNARY_EVAL
  const char* name() const override {
    return reduce_type_ == None ? "PutAlongAxis" : "ScatterAddAxis";
  }
  bool is_equivalent(const Primitive& other) const override {
    auto* o = dynamic_cast<const ScatterAxis*>(&other);
    return o && o->reduce_type_ == reduce_type_ && o->axis_ == axis_;
  }
  ReduceType reduce_type() const {
    return reduce_type_;
  }
  int axis() const {
    return axis_;
  }

 private:
  ReduceType reduce_type_;
  int axis_;
};

// slice(a, start, axes, slice_size). inputs: {a, start (0-d or 1-d, one integer per axis)}.
// out (slice_size) = a's window at start[k] on axes[k] (clamped to [0, shape - size]) and 0
// on the other axes. The start is read where the op runs (on the GPU: by the kernel).
class DynamicSlice : public UnaryPrimitive {
 public:
  DynamicSlice(Stream s, std::vector<int> axes, Shape slice_size)
      : UnaryPrimitive(s), axes_(std::move(axes)), slice_size_(std::move(slice_size)) {}
  MLX_DECLARE_UNARY_EVAL
  const char* name() const override {
    return "DynamicSlice";
  }
  bool is_equivalent(const Primitive& other) const override {
    auto* o = dynamic_cast<const DynamicSlice*>(&other);
    return o && o->axes_ == axes_ && o->slice_size_ == slice_size_;
  }
  const std::vector<int>& axes() const {
    return axes_;
  }
  const Shape& slice_size() const {
    return slice_size_;
  }

 private:
  std::vector<int> axes_;
  Shape slice_size_;
};

// slice_update(src, update, start, axes). inputs: {src, update (src's rank and dtype, no
// larger), start}. out = src with update written at start[k] on axes[k] (clamped to
// [0, shape - update extent]) and 0 on the other axes; in place when src is donated.
class DynamicSliceUpdate final : public UnaryPrimitive {
 public:
  DynamicSliceUpdate(Stream s, std::vector<int> axes) : UnaryPrimitive(s), axes_(std::move(axes)) {}
  MLX_DECLARE_UNARY_EVAL
  const char* name() const override {
    return "DynamicSliceUpdate";
  }
  bool is_equivalent(const Primitive& other) const override {
    auto* o = dynamic_cast<const DynamicSliceUpdate*>(&other);
    return o && o->axes_ == axes_;
  }
  const std::vector<int>& axes() const {
    return axes_;
  }

 private:
  std::vector<int> axes_;
};

}  // namespace mlx::core
