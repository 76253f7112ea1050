// The primitives behind mlx/fast.h. Inputs arrive already validated and cast by the ops
// (mlx/fast.cpp), so each eval sees one float dtype for x, weights and output.
#pragma once

#include "mlx/primitives.h"

namespace mlx::core::fast {

// inputs: {x, weight}; weight is 1-d of x.shape(-1), or a scalar 1 when the op had none.
class RMSNorm : public UnaryPrimitive {
 public:
  RMSNorm(Stream s, float eps) : UnaryPrimitive(s), eps_(eps) {}
  MLX_DECLARE_UNARY_EVAL
  const char* name() const override {
    return "RMSNorm";
  }
  bool is_equivalent(const Primitive& other) const override;
  float eps() const {
    return eps_;
  }

 private:
  float eps_;
};

// inputs: {x, weight, bias}; weight/bias are 1-d of x.shape(-1), or scalars 1 and 0.
class LayerNorm : public UnaryPrimitive {
 public:
  LayerNorm(Stream s, float eps) : UnaryPrimitive(s), eps_(eps) {}
  MLX_DECLARE_UNARY_EVAL
  const char* name() const override {
    return "LayerNorm";
  }
  bool is_equivalent(const Primitive& other) const override;
  float eps() const {
    return eps_;
  }

 private:
  float eps_;
};

// inputs: {x, offset (int32, 1 or B values)} and optionally freqs (float32, dims/2 values).
class RoPE : public UnaryPrimitive {
 public:
  RoPE(Stream s, int dims, bool traditional, float base, float scale)
      : UnaryPrimitive(s), dims_(dims), traditional_(traditional), base_(base), scale_(scale) {}
  MLX_DECLARE_UNARY_EVAL
  const char* name() const override {
    return "RoPE";
  }
  bool is_equivalent(const Primitive& other) const override;
  int dims() const {
    return dims_;
  }
  bool traditional() const {
    return traditional_;
  }
  float base() const {
    return base_;
  }
  float scale() const {
    return scale_;
  }

 private:
  int dims_;
  bool traditional_;
  float base_;  // unused when freqs is an input
  float scale_;
};

}  // namespace mlx::core::fast
