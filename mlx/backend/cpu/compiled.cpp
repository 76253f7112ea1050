// Compiled::eval_cpu: a fused group in one loop over the elements (docs/compile.md), with no
// intermediate arrays. The output is walked in rows (as the separate ops walk it) and each
// row in blocks of kBlock elements; a block runs the tape in order, each node writing its
// values into a small scratch block of its own dtype, and then the outputs' blocks are
// copied out. Every node uses the separate op's own expression (cpu/elementwise_ops.h,
// cast_value) and stores into its dtype, so each value is rounded exactly as the unfused
// op's output would be and the results equal the unfused CPU ops bit for bit.
#include <cstring>
#include <string>
#include <unordered_map>

#include "mlx/backend/common/utils.h"
#include "mlx/backend/cpu/elementwise_dispatch.h"
#include "mlx/backend/cpu/elementwise_loops.h"
#include "mlx/backend/cpu/elementwise_ops.h"
#include "mlx/primitives.h"

namespace mlx::core {

namespace {

namespace ew = cpu::elementwise;

// Elements per block: every node's block of values stays in L1 for the next node.
constexpr size_t kBlock = 256;

// Where a node reads one argument in the current block: element t at p[t * inc] (elements
// of the argument's type; inc is 0 for a broadcast scalar, 1 for a scratch block).
struct Operand {
  const char* p;
  int64_t inc;
};

using NodeFn = void (*)(const Operand* args, char* out, size_t n);



// The per-node loops: the separate ops' expressions (cpu/unary.cpp, binary.cpp, select.cpp,
// copy.cpp), writing the node's storage type.
template <typename T, typename Op>
void unary_node(const Operand* a, char* out, size_t n) {
  using C = compute_type_t<T>;
  using Out = std::conditional_t<std::is_same_v<decltype(Op{}(C{})), bool>, bool, T>;
  const T* x = reinterpret_cast<const T*>(a[0].p);
  Out* y = reinterpret_cast<Out*>(out);
  Op op;
  if (a[0].inc == 1) {
    for (size_t t = 0; t < n; ++t) {
      y[t] = Out(op(C(x[t])));
    }
  } else {
    for (size_t t = 0; t < n; ++t) {
      y[t] = Out(op(C(x[static_cast<int64_t>(t) * a[0].inc])));
    }
  }
}

template <typename T, typename Op>
void binary_node(const Operand* a, char* out, size_t n) {
  using C = compute_type_t<T>;
  using Out = std::conditional_t<std::is_same_v<decltype(Op{}(C{}, C{})), bool>, bool, T>;
  const T* x = reinterpret_cast<const T*>(a[0].p);
  const T* y = reinterpret_cast<const T*>(a[1].p);
  Out* z = reinterpret_cast<Out*>(out);
  Op op;
  if (a[0].inc == 1 && a[1].inc == 1) {
    for (size_t t = 0; t < n; ++t) {
      z[t] = Out(op(C(x[t]), C(y[t])));
    }
  } else if (a[0].inc == 0 && a[1].inc == 1) {
    C xs = C(x[0]);
    for (size_t t = 0; t < n; ++t) {
      z[t] = Out(op(xs, C(y[t])));
    }
  } else if (a[0].inc == 1 && a[1].inc == 0) {
    C ys = C(y[0]);
    for (size_t t = 0; t < n; ++t) {
      z[t] = Out(op(C(x[t]), ys));
    }
  } else {
    for (size_t t = 0; t < n; ++t) {
      auto i = static_cast<int64_t>(t);
      z[t] = Out(op(C(x[i * a[0].inc]), C(y[i * a[1].inc])));
    }
  }
}

template <typename T>
void select_node(const Operand* a, char* out, size_t n) {
  const bool* c = reinterpret_cast<const bool*>(a[0].p);
  const T* x = reinterpret_cast<const T*>(a[1].p);
  const T* y = reinterpret_cast<const T*>(a[2].p);
  T* o = reinterpret_cast<T*>(out);
  for (size_t t = 0; t < n; ++t) {
    auto i = static_cast<int64_t>(t);
    o[t] = c[i * a[0].inc] ? x[i * a[1].inc] : y[i * a[2].inc];
  }
}

template <typename In, typename Out>
void astype_node(const Operand* a, char* out, size_t n) {
  const In* x = reinterpret_cast<const In*>(a[0].p);
  Out* o = reinterpret_cast<Out*>(out);
  for (size_t t = 0; t < n; ++t) {
    o[t] = cast_value<Out>(x[static_cast<int64_t>(t) * a[0].inc]);
  }
}

std::string not_supported(const Primitive& p, Dtype dt) {
  return std::string("[") + p.name() + "] does not support " + dtype_to_string(dt) + " inputs.";
}

// The loop of one tape node, checked against the node's dtypes as the separate op checks
// them. `ins` are the node's inputs (for their dtypes), `out` the node.
NodeFn node_fn(const array& node) {
  Primitive& p = node.primitive();
  const auto& ins = node.inputs();
  NodeFn fn = nullptr;
  bool out_ok = false;
  if (auto* u = dynamic_cast<Unary*>(&p)) {
    dispatch_dtype(ins[0].dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      ew::dispatch_unary_op(u->op(), "Compiled", [&](auto op) {
        using Op = decltype(op);
        if constexpr (Op::template accepts<compute_type_t<T>>) {
          bool pred = std::is_same_v<decltype(op(compute_type_t<T>{})), bool>;
          fn = &unary_node<T, Op>;
          out_ok = node.dtype() == (pred ? bool_ : ins[0].dtype());
        }
      });
    });
  } else if (auto* b = dynamic_cast<Binary*>(&p)) {
    if (ins[1].dtype() != ins[0].dtype()) {
      throw std::invalid_argument(std::string("[") + p.name() + "] inputs must share one dtype.");
    }
    dispatch_dtype(ins[0].dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      ew::dispatch_binary_op(b->op(), "Compiled", [&](auto op) {
        using Op = decltype(op);
        using C = compute_type_t<T>;
        if constexpr (Op::template accepts<C>) {
          bool pred = std::is_same_v<decltype(op(C{}, C{})), bool>;
          fn = &binary_node<T, Op>;
          out_ok = node.dtype() == (pred ? bool_ : ins[0].dtype());
        }
      });
    });
  } else if (dynamic_cast<Select*>(&p)) {
    if (ins[0].dtype() != bool_) {
      throw std::invalid_argument("[Select] the condition must be bool, got " +
                                  dtype_to_string(ins[0].dtype()) + ".");
    }
    dispatch_dtype(node.dtype(),
                   [&](auto tag) { fn = &select_node<typename decltype(tag)::type>; });
    out_ok = ins[1].dtype() == node.dtype() && ins[2].dtype() == node.dtype();
  } else if (dynamic_cast<AsType*>(&p)) {
    dispatch_dtype(ins[0].dtype(), [&](auto in_tag) {
      dispatch_dtype(node.dtype(), [&](auto out_tag) {
        fn = &astype_node<typename decltype(in_tag)::type, typename decltype(out_tag)::type>;
      });
    });
    out_ok = true;
  } else {
    throw std::invalid_argument(std::string("[Compiled] cannot run ") + p.name() +
                                " in a fused loop.");
  }
  if (!fn) {
    throw std::invalid_argument(not_supported(p, ins.back().dtype()));
  }
  if (!out_ok) {
    throw std::invalid_argument(std::string("[") + p.name() + "] output dtype " +
                                dtype_to_string(node.dtype()) + " does not match its inputs.");
  }
  return fn;
}

// for_each_row (cpu/elementwise_loops.h) over any number of operands.
template <typename RowFn>
void for_each_row(const std::vector<const array*>& ins, const Shape& shape, RowFn&& row) {
  size_t n = 1;
  for (auto d : shape) {
    n *= static_cast<size_t>(d);
  }
  if (n == 0) {
    return;
  }
  size_t m = ins.size();
  std::vector<int64_t> base(m, 0), inc(m, 0);
  bool flat = true;
  for (size_t k = 0; k < m; ++k) {
    bool scalar = cpu::is_scalar_view(*ins[k]);
    flat = flat && (scalar || ins[k]->flags().row_contiguous);
    inc[k] = scalar ? 0 : 1;
  }
  if (flat) {
    row(base, inc, size_t(0), n);
    return;
  }
  std::vector<Strides> strides{row_major_strides(shape)};
  for (auto* in : ins) {
    strides.push_back(in->strides());
  }
  auto [cshape, cstrides] = collapse_contiguous_dims(shape, strides);
  if (cshape.empty()) {
    row(base, inc, size_t(0), size_t(1));
    return;
  }
  size_t last = cshape.size() - 1;
  size_t len = static_cast<size_t>(cshape[last]);
  Shape outer(cshape.begin(), cshape.begin() + last);
  std::vector<StridedIterator> its;
  its.reserve(m);
  for (size_t k = 0; k < m; ++k) {
    inc[k] = cstrides[k + 1][last];
    its.emplace_back(outer, Strides(cstrides[k + 1].begin(), cstrides[k + 1].begin() + last));
  }
  size_t rows = n / len;
  for (size_t r = 0; r < rows; ++r) {
    for (size_t k = 0; k < m; ++k) {
      base[k] = its[k].loc();
      its[k].step();
    }
    row(base, inc, r * len, len);
  }
}

struct Step {
  NodeFn fn;
  std::vector<int> args;  // >= 0: operand k; < 0: node -(arg + 1)
};

}  // namespace

void Compiled::eval_cpu(const std::vector<array>& inputs, std::vector<array>& outputs) {
  // Operands: the group's inputs, then any constant a node reads directly.
  std::vector<const array*> operands;
  std::unordered_map<std::uintptr_t, int> slot;
  for (size_t i = 0; i < inputs.size(); ++i) {
    slot.emplace(inner_inputs_[i].id(), static_cast<int>(i));
    operands.push_back(&inputs[i]);
  }
  std::vector<Step> steps;
  std::vector<size_t> node_size;
  for (size_t k = 0; k < tape_.size(); ++k) {
    const array& node = tape_[k];
    Step s{node_fn(node), {}};
    for (const auto& in : node.inputs()) {
      auto it = slot.find(in.id());
      if (it == slot.end()) {
        it = slot.emplace(in.id(), static_cast<int>(operands.size())).first;
        operands.push_back(&in);
      }
      s.args.push_back(it->second);
    }
    steps.push_back(std::move(s));
    node_size.push_back(node.itemsize());
    slot.emplace(node.id(), -static_cast<int>(k) - 1);
  }
  const Shape& shape = outputs[0].shape();
  bool one_shape = true;
  for (auto* a : operands) {
    one_shape = one_shape && a->shape() == shape;
  }
  if (!one_shape) {
    // Not a group compile() makes (its operands all have the output's shape).
    run_tape(inputs, outputs,
             [](Primitive& p, const std::vector<array>& ins, std::vector<array>& outs) {
               p.eval_cpu(ins, outs);
             });
    return;
  }
  std::vector<int> out_node;
  for (size_t j = 0; j < outputs.size(); ++j) {
    out_node.push_back(-slot.at(inner_outputs_[j].id()) - 1);
  }

  // An input may give its buffer to an output: a block reads all its inputs before any of
  // its outputs is written, and a donor has the output's layout, so no value is read after
  // it was overwritten.
  std::vector<const array*> donors;
  for (auto& in : inputs) {
    donors.push_back(&in);
  }
  for (auto& o : outputs) {
    bool given = false;
    for (auto* d : donors) {
      if (!given && d->is_donatable() && d->flags().row_contiguous && d->shape() == o.shape() &&
          d->itemsize() == o.itemsize() && d->data_size() == o.size()) {
        o.copy_shared_buffer(*d);
        given = true;
      }
    }
    if (!given) {
      o.set_data(allocator::malloc(o.nbytes()));
    }
  }
  if (outputs[0].size() == 0) {
    return;
  }

  std::vector<const char*> data;
  std::vector<size_t> item;
  for (auto* a : operands) {
    data.push_back(a->data<char>());
    item.push_back(a->itemsize());
  }
  std::vector<char*> out_data;
  for (auto& o : outputs) {
    out_data.push_back(o.data<char>());
  }
  // One scratch block per node, 8-byte aligned (the widest element is 8 bytes).
  std::vector<uint64_t> scratch(steps.size() * kBlock);
  auto block_of = [&](size_t k) { return reinterpret_cast<char*>(scratch.data() + k * kBlock); };
  std::vector<Operand> args;
  for_each_row(operands, shape, [&](const auto& base, const auto& inc, size_t o, size_t len) {
    for (size_t s = 0; s < len; s += kBlock) {
      size_t n = std::min(kBlock, len - s);
      for (size_t k = 0; k < steps.size(); ++k) {
        args.clear();
        for (int a : steps[k].args) {
          if (a < 0) {
            args.push_back({block_of(static_cast<size_t>(-a - 1)), 1});
          } else {
            auto i = static_cast<size_t>(a);
            int64_t at = base[i] + static_cast<int64_t>(s) * inc[i];
            args.push_back({data[i] + at * static_cast<int64_t>(item[i]), inc[i]});
          }
        }
        steps[k].fn(args.data(), block_of(k), n);
      }
      for (size_t j = 0; j < outputs.size(); ++j) {
        size_t sz = node_size[out_node[j]];
        std::memcpy(out_data[j] + (o + s) * sz, block_of(out_node[j]), n * sz);
      }
    }
  });
}

}  // namespace mlx::core
