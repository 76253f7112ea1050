// compile(): tracing, the trace cache, simplification and replay (docs/compile.md).
//
// A call looks up the function's traces by input signature (shapes and dtypes, or ranks
// and dtypes when shapeless). On a miss, the function runs once on placeholder inputs
// (arrays with no data and no primitive, marked as tracers) and the graph between them and
// the outputs becomes the trace's tape. Every call then rebuilds the tape's nodes on the
// real inputs, sharing the traced primitives, so `fun` runs once per signature.
#include "mlx/compile.h"

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <stdexcept>
#include <typeinfo>
#include <unordered_map>
#include <unordered_set>

#include "mlx/device.h"
#include "mlx/primitives.h"
#include "mlx/stream.h"
#include "mlx/transforms_impl.h"

namespace mlx::core {

namespace {

using ArrayFn = std::function<std::vector<array>(const std::vector<array>&)>;

std::atomic<CompileMode>& compile_mode() {
  static std::atomic<CompileMode> mode{std::getenv("MLX_DISABLE_COMPILE") ? CompileMode::disabled
                                                                          : CompileMode::enabled};
  return mode;
}

struct Trace {
  bool shapeless = false;
  Stream stream{0, Device::cpu};  // the default stream when traced: fun's ops run on it
  std::vector<Shape> shapes;      // the signature (ranks only matter when shapeless)
  std::vector<Dtype> dtypes;
  std::vector<array> inputs;  // placeholders
  std::vector<array> outputs;
  std::vector<array> tape;  // nodes between them, each after its inputs
};

bool matches(const Trace& t, const std::vector<array>& inputs, bool shapeless) {
  if (t.shapeless != shapeless || t.shapes.size() != inputs.size() ||
      t.stream != default_stream(default_device())) {
    return false;
  }
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (inputs[i].dtype() != t.dtypes[i]) {
      return false;
    }
    bool same =
        shapeless ? inputs[i].ndim() == t.shapes[i].size() : inputs[i].shape() == t.shapes[i];
    if (!same) {
      return false;
    }
  }
  return true;
}

// The traces of each compiled function, most recent first. A function called with ever new
// shapes keeps only its latest kMaxTraces traces.
class TraceCache {
 public:
  static constexpr size_t kMaxTraces = 64;

  std::shared_ptr<Trace> find(std::uintptr_t fun, const std::vector<array>& inputs,
                              bool shapeless) {
    std::lock_guard lk(mtx_);
    auto it = traces_.find(fun);
    if (it == traces_.end()) {
      return nullptr;
    }
    for (auto& t : it->second) {
      if (matches(*t, inputs, shapeless)) {
        return t;
      }
    }
    return nullptr;
  }
  void insert(std::uintptr_t fun, std::shared_ptr<Trace> t) {
    std::lock_guard lk(mtx_);
    auto& list = traces_[fun];
    list.push_front(std::move(t));
    if (list.size() > kMaxTraces) {
      list.pop_back();
    }
  }
  void erase(std::uintptr_t fun) {
    std::lock_guard lk(mtx_);
    traces_.erase(fun);
  }

 private:
  std::mutex mtx_;
  std::unordered_map<std::uintptr_t, std::deque<std::shared_ptr<Trace>>> traces_;
};

TraceCache& trace_cache() {
  static TraceCache cache;
  return cache;
}

// The nodes between the placeholders and the outputs, each after its inputs. Evaluated
// arrays (captured constants) are leaves; an array with no primitive that is not one of
// this trace's placeholders was captured from outside the function's inputs.
std::vector<array> build_tape(const Trace& t) {
  std::unordered_set<std::uintptr_t> placeholders, visited;
  for (auto& in : t.inputs) {
    placeholders.insert(in.id());
  }
  std::vector<array> tape;
  struct Frame {
    array node;
    size_t next;
  };
  std::vector<Frame> stack;
  auto leaf = [&](const array& a) {
    if (placeholders.count(a.id()) || a.status() != array::Status::unscheduled) {
      return true;
    }
    if (!a.has_primitive()) {
      throw std::invalid_argument(
          "[compile] Attempting to compile a function with uncaptured inputs is not allowed.");
    }
    return false;
  };
  for (auto& out : t.outputs) {
    if (leaf(out) || visited.count(out.id())) {
      continue;
    }
    visited.insert(out.id());
    stack.push_back({out, 0});
    while (!stack.empty()) {
      auto& top = stack.back();
      if (top.next < top.node.inputs().size()) {
        array in = top.node.inputs()[top.next++];
        if (!leaf(in) && !visited.count(in.id())) {
          visited.insert(in.id());
          stack.push_back({std::move(in), 0});
        }
        continue;
      }
      for (auto& s : top.node.siblings()) {
        visited.insert(s.id());
      }
      tape.push_back(std::move(top.node));
      stack.pop_back();
    }
  }
  return tape;
}

// A 0-d evaluated array's value as bytes, for merging equal scalar constants.
bool scalar_constant(const array& a) {
  return a.ndim() == 0 && a.status() == array::Status::available && a.has_data();
}
bool same_scalar(const array& a, const array& b) {
  return a.dtype() == b.dtype() && std::memcmp(a.data<char>(), b.data<char>(), a.itemsize()) == 0;
}

// Common subexpressions (the same single-output primitive, equivalent, on the same inputs,
// to the same shape and dtype), equal scalar constants, casts to the same dtype and
// reshapes to the same shape all collapse onto one node. Rewrites inputs in place.
void simplify(Trace& t) {
  std::unordered_map<std::uintptr_t, array> replaced;
  auto resolve = [&](const array& a) -> array {
    auto it = replaced.find(a.id());
    return it == replaced.end() ? a : it->second;
  };
  std::vector<array> scalars;
  auto dedup_scalar = [&](const array& a) -> array {
    if (!scalar_constant(a)) {
      return a;
    }
    for (auto& s : scalars) {
      if (same_scalar(s, a)) {
        return s;
      }
    }
    scalars.push_back(a);
    return a;
  };
  // Nodes by (primitive type, input ids) for CSE.
  std::multimap<std::string, array> seen;
  std::vector<array> kept;
  for (auto& node : t.tape) {
    for (auto& in : node.inputs()) {
      in = dedup_scalar(resolve(in));
    }
    if (!node.siblings().empty()) {
      kept.push_back(node);
      continue;
    }
    Primitive& p = node.primitive();
    bool noop = node.inputs().size() == 1 && node.inputs()[0].shape() == node.shape() &&
                node.inputs()[0].dtype() == node.dtype() &&
                (dynamic_cast<AsType*>(&p) || dynamic_cast<Reshape*>(&p));
    if (noop) {
      replaced.emplace(node.id(), node.inputs()[0]);
      continue;
    }
    std::string sig = typeid(p).name();
    for (auto& in : node.inputs()) {
      sig.append(":").append(std::to_string(in.id()));
    }
    bool merged = false;
    auto range = seen.equal_range(sig);
    for (auto it = range.first; it != range.second; ++it) {
      const array& other = it->second;
      if (other.shape() == node.shape() && other.dtype() == node.dtype() &&
          other.primitive().is_equivalent(p)) {
        replaced.emplace(node.id(), other);
        merged = true;
        break;
      }
    }
    if (!merged) {
      seen.emplace(sig, node);
      kept.push_back(node);
    }
  }
  t.tape = std::move(kept);
  for (auto& o : t.outputs) {
    o = dedup_scalar(resolve(o));
  }
}

// The elementwise primitives a group may hold (one output, inputs of the output's shape).
bool fusable(const array& node) {
  if (!node.siblings().empty()) {
    return false;
  }
  Primitive& p = node.primitive();
  if (!dynamic_cast<Unary*>(&p) && !dynamic_cast<Binary*>(&p) && !dynamic_cast<Select*>(&p) &&
      !dynamic_cast<AsType*>(&p)) {
    return false;
  }
  for (auto& in : node.inputs()) {
    if (in.shape() != node.shape()) {
      return false;
    }
  }
  return true;
}

// Groups runs of elementwise ops into Compiled primitives (docs/compile.md, "Fusion").
// Walking the tape in order, a fusable node joins the group of one of its inputs when that
// keeps the graph acyclic (no other input depends on the group through a node outside it)
// and the group stays within kMaxInputs inputs and kMaxOutputs members that may be outputs
// (the fused kernel's bindings: codegen/fused.h); otherwise it starts a group. Groups of one
// node stay as they are.
void fuse(Trace& t) {
  constexpr size_t kMaxInputs = 11, kMaxOutputs = 4;
  // Who reads each node (a trace output counts as a reader outside every group).
  std::unordered_map<std::uintptr_t, std::vector<std::uintptr_t>> readers;
  for (auto& node : t.tape) {
    for (auto& in : node.inputs()) {
      readers[in.id()].push_back(node.id());
    }
  }
  for (auto& o : t.outputs) {
    readers[o.id()].push_back(0);
  }
  std::unordered_map<std::uintptr_t, int> group_of;
  std::unordered_set<std::uintptr_t> on_tape;
  std::vector<std::vector<array>> groups;
  // Whether `a` depends on group g through nodes outside it. A group runs as one node, so
  // reaching any member of a group reaches all of their inputs: the groups grow after their
  // first members were placed, and what a member depended on then is not the whole story.
  auto reaches = [&](const array& a, int g) {
    std::vector<array> stack{a};
    std::unordered_set<std::uintptr_t> seen{a.id()};
    std::unordered_set<int> expanded;
    auto push = [&](const array& x) {
      if (on_tape.count(x.id()) && seen.insert(x.id()).second) {
        stack.push_back(x);
      }
    };
    while (!stack.empty()) {
      array x = stack.back();
      stack.pop_back();
      auto gx = group_of.find(x.id());
      if (gx != group_of.end()) {
        if (gx->second == g) {
          return true;
        }
        if (expanded.insert(gx->second).second) {
          for (auto& m : groups[gx->second]) {
            push(m);
          }
        }
      }
      for (auto& in : x.inputs()) {
        push(in);
      }
    }
    return false;
  };
  // Whether member n may be an output of a group with these members: unless it has readers
  // and all are members (a trace output counts as a reader outside every group).
  auto read_outside = [&](const array& n, const std::unordered_set<std::uintptr_t>& members) {
    auto it = readers.find(n.id());
    if (it == readers.end()) {
      return true;
    }
    return std::any_of(it->second.begin(), it->second.end(),
                       [&](std::uintptr_t r) { return members.count(r) == 0; });
  };
  auto fits = [&](int g, const array& extra) {
    std::unordered_set<std::uintptr_t> members, ins;
    for (auto& n : groups[g]) {
      members.insert(n.id());
    }
    members.insert(extra.id());
    for (auto& n : groups[g]) {
      for (auto& in : n.inputs()) {
        if (!members.count(in.id()))
          ins.insert(in.id());
      }
    }
    for (auto& in : extra.inputs()) {
      if (!members.count(in.id()))
        ins.insert(in.id());
    }
    // A member may be an output unless every reader is a member; the new node may always be
    // (its readers come later): a bound, not an exact count.
    size_t outs = 1;
    for (auto& n : groups[g]) {
      outs += read_outside(n, members) ? 1 : 0;
    }
    return ins.size() <= kMaxInputs && outs <= kMaxOutputs;
  };
  // Whether groups a and b may become one: no value from outside both reaches either of
  // them (that would be a path from one through outside nodes into the other: a cycle once
  // they run as one kernel), and the union stays within the kernel's bindings.
  auto mergeable = [&](int a, int b) {
    std::unordered_set<std::uintptr_t> members, ins;
    for (int g : {a, b}) {
      for (auto& n : groups[g]) {
        members.insert(n.id());
      }
    }
    for (int g : {a, b}) {
      for (auto& n : groups[g]) {
        for (auto& in : n.inputs()) {
          if (members.count(in.id()) || !ins.insert(in.id()).second) {
            continue;
          }
          if (reaches(in, a) || reaches(in, b)) {
            return false;
          }
        }
      }
    }
    size_t outs = 0;
    for (int g : {a, b}) {
      for (auto& n : groups[g]) {
        outs += read_outside(n, members) ? 1 : 0;
      }
    }
    return ins.size() <= kMaxInputs && outs <= kMaxOutputs;
  };
  std::unordered_map<std::uintptr_t, size_t> position;
  for (auto& node : t.tape) {
    position[node.id()] = position.size();
  }
  for (auto& node : t.tape) {
    on_tape.insert(node.id());
    if (!fusable(node)) {
      continue;
    }
    int chosen = -1;
    for (auto& in : node.inputs()) {
      auto g = group_of.find(in.id());
      if (g == group_of.end()) {
        continue;
      }
      bool acyclic = true;
      for (auto& other : node.inputs()) {
        auto og = group_of.find(other.id());
        bool inside = og != group_of.end() && og->second == g->second;
        if (!inside && reaches(other, g->second)) {
          acyclic = false;
        }
      }
      if (acyclic && fits(g->second, node)) {
        chosen = g->second;
        break;
      }
    }
    if (chosen < 0) {
      chosen = static_cast<int>(groups.size());
      groups.emplace_back();
    }
    groups[chosen].push_back(node);
    group_of[node.id()] = chosen;
    // The node also reads other groups: take them in where that stays acyclic and fits, so
    // a group that started on its own (all its inputs outside every group) is not left as a
    // dispatch of its own when its consumer's group could hold it.
    for (auto& in : node.inputs()) {
      auto g = group_of.find(in.id());
      if (g == group_of.end() || g->second == chosen || !mergeable(chosen, g->second)) {
        continue;
      }
      int from = g->second;
      for (auto& m : groups[from]) {
        group_of[m.id()] = chosen;
        groups[chosen].push_back(m);
      }
      groups[from].clear();
      std::sort(groups[chosen].begin(), groups[chosen].end(), [&](const array& x, const array& y) {
        return position[x.id()] < position[y.id()];
      });
    }
  }

  // Who uses each value outside its group (other nodes or the trace's outputs).
  std::unordered_map<std::uintptr_t, bool> used_outside;
  for (auto& node : t.tape) {
    auto ng = group_of.find(node.id());
    for (auto& in : node.inputs()) {
      auto ig = group_of.find(in.id());
      if (ig != group_of.end() && (ng == group_of.end() || ng->second != ig->second)) {
        used_outside[in.id()] = true;
      }
    }
  }
  for (auto& o : t.outputs) {
    used_outside[o.id()] = true;
  }

  std::unordered_map<std::uintptr_t, array> replaced;
  for (auto& members : groups) {
    if (members.size() < 2) {
      continue;
    }
    std::unordered_set<std::uintptr_t> ids;
    for (auto& n : members) {
      ids.insert(n.id());
    }
    std::vector<array> inner_inputs, inner_outputs;
    std::unordered_set<std::uintptr_t> seen;
    for (auto& n : members) {
      for (auto& in : n.inputs()) {
        if (!ids.count(in.id()) && seen.insert(in.id()).second) {
          inner_inputs.push_back(in);
        }
      }
      if (used_outside.count(n.id())) {
        inner_outputs.push_back(n);
      }
    }
    std::vector<Shape> shapes;
    std::vector<Dtype> dtypes;
    for (auto& o : inner_outputs) {
      shapes.push_back(o.shape());
      dtypes.push_back(o.dtype());
    }
    // Scalar constants go to the primitive by value: a backend may write them into its
    // kernel (an exact x * 0.5 for x / 2, constant folding).
    std::vector<std::optional<uint64_t>> constants;
    for (auto& input : inner_inputs) {
      // An op broadcasts its scalar operands: look through views of one value.
      array in = input;
      while (in.status() == array::Status::unscheduled && in.has_primitive() &&
             in.inputs().size() == 1 &&
             (std::strcmp(in.primitive().name(), "Broadcast") == 0 ||
              std::strcmp(in.primitive().name(), "Reshape") == 0)) {
        array up = in.inputs()[0];
        in = up;
      }
      std::optional<uint64_t> v;
      if (scalar_constant(in) && in.itemsize() <= sizeof(uint64_t)) {
        uint64_t bits = 0;
        std::memcpy(&bits, in.data<char>(), in.itemsize());
        v = bits;
      }
      constants.push_back(v);
    }
    // The fused node takes the group's inputs; inside, the tape keeps the traced arrays.
    auto prim = std::make_shared<Compiled>(members.back().primitive().stream(), inner_inputs,
                                           inner_outputs, members, std::move(constants));
    auto outs = array::make_arrays(shapes, dtypes, prim, inner_inputs);
    for (size_t i = 0; i < outs.size(); ++i) {
      replaced.emplace(inner_outputs[i].id(), outs[i]);
    }
  }
  if (replaced.empty()) {
    return;
  }
  // Consumers outside the groups now read the fused outputs. Group members keep their
  // traced inputs (the Compiled tape refers to them).
  auto swap_in = [&](array& a) {
    auto it = replaced.find(a.id());
    if (it != replaced.end()) {
      a = it->second;
    }
  };
  for (auto& node : t.tape) {
    if (group_of.count(node.id()) && groups[group_of.at(node.id())].size() >= 2) {
      continue;
    }
    for (auto& in : node.inputs()) {
      swap_in(in);
    }
  }
  for (auto& [id, fused] : replaced) {
    (void)id;
    for (auto& in : fused.inputs()) {
      swap_in(in);
    }
  }
  for (auto& o : t.outputs) {
    swap_in(o);
  }
  t.tape = build_tape(t);
}

std::shared_ptr<Trace> trace(const ArrayFn& fun, const std::vector<array>& inputs, bool shapeless) {
  auto t = std::make_shared<Trace>();
  t->shapeless = shapeless;
  t->stream = default_stream(default_device());
  {
    detail::InTracing tracing;
    for (auto& in : inputs) {
      t->shapes.push_back(in.shape());
      t->dtypes.push_back(in.dtype());
      array p(in.shape(), in.dtype(), nullptr, {});
      p.set_tracer(true);
      t->inputs.push_back(std::move(p));
    }
    t->outputs = fun(t->inputs);
  }
  t->tape = build_tape(*t);
  if (compile_mode() != CompileMode::no_simplify) {
    simplify(*t);
  }
  if (compile_mode() == CompileMode::enabled) {
    fuse(*t);
  }
  if (shapeless) {
    // Every node must derive its shape from its inputs.
    for (auto& node : t->tape) {
      try {
        node.primitive().output_shapes(node.inputs());
      } catch (const std::invalid_argument&) {
        throw std::invalid_argument(std::string("[compile] Cannot compile a function with "
                                                "shapeless=true: the primitive ") +
                                    node.primitive().name() +
                                    " cannot infer its output shapes from its inputs.");
      }
    }
  }
  return t;
}

// The trace's nodes rebuilt on `inputs`.
std::vector<array> replay(const Trace& t, const std::vector<array>& inputs) {
  std::unordered_map<std::uintptr_t, array> map;
  for (size_t i = 0; i < inputs.size(); ++i) {
    map.emplace(t.inputs[i].id(), inputs[i]);
  }
  auto lookup = [&](const array& a) -> array {
    auto it = map.find(a.id());
    return it == map.end() ? a : it->second;
  };
  for (auto& node : t.tape) {
    if (map.count(node.id())) {
      continue;  // made with a sibling
    }
    if (node.status() != array::Status::unscheduled) {
      // A node from outside the function that it captured, evaluated (or queued on the
      // eval thread, which then owns its graph) since the trace: its value, not its graph.
      map.emplace(node.id(), node);
      continue;
    }
    std::vector<array> ins;
    ins.reserve(node.inputs().size());
    for (auto& in : node.inputs()) {
      ins.push_back(lookup(in));
    }
    auto outs = node.outputs();
    std::vector<Shape> shapes;
    std::vector<Dtype> dtypes;
    if (t.shapeless) {
      shapes = node.primitive().output_shapes(ins);
    }
    for (auto& o : outs) {
      if (!t.shapeless) {
        shapes.push_back(o.shape());
      }
      dtypes.push_back(o.dtype());
    }
    auto made = array::make_arrays(std::move(shapes), dtypes, node.primitive_ptr(), ins);
    for (size_t i = 0; i < outs.size(); ++i) {
      map.emplace(outs[i].id(), made[i]);
    }
  }
  std::vector<array> outputs;
  for (auto& o : t.outputs) {
    outputs.push_back(lookup(o));
  }
  return outputs;
}

ArrayFn compiled(ArrayFn fun, std::uintptr_t id, bool shapeless, std::shared_ptr<void> keep_alive) {
  return [fun = std::move(fun), id, shapeless,
          keep_alive = std::move(keep_alive)](const std::vector<array>& inputs) {
    if (compile_mode() == CompileMode::disabled) {
      return fun(inputs);
    }
    auto t = trace_cache().find(id, inputs, shapeless);
    if (!t) {
      t = trace(fun, inputs, shapeless);
      trace_cache().insert(id, t);
    }
    return replay(*t, inputs);
  };
}

// Erases a compiled std::function's traces when the last copy of the compiled function goes.
struct TraceOwner {
  std::uintptr_t id;
  ~TraceOwner() {
    trace_cache().erase(id);
  }
};

}  // namespace

std::function<std::vector<array>(const std::vector<array>&)> compile(ArrayFn fun, bool shapeless) {
  if (!fun) {
    throw std::invalid_argument("[compile] Cannot compile a function without a target.");
  }
  if (compile_mode() == CompileMode::disabled) {
    return fun;
  }
  // Each compile of a std::function gets its own traces, keyed by an owner object's address.
  auto owner = std::make_shared<TraceOwner>();
  owner->id = reinterpret_cast<std::uintptr_t>(owner.get());
  std::uintptr_t id = owner->id;
  return compiled(std::move(fun), id, shapeless, std::move(owner));
}

std::function<std::vector<array>(const std::vector<array>&)> compile(
    std::vector<array> (*fun)(const std::vector<array>&), bool shapeless) {
  if (fun == nullptr) {
    throw std::invalid_argument("[compile] Cannot compile a function without a target.");
  }
  if (compile_mode() == CompileMode::disabled) {
    return fun;
  }
  return compiled(fun, reinterpret_cast<std::uintptr_t>(fun), shapeless, nullptr);
}

void disable_compile() {
  compile_mode() = CompileMode::disabled;
}

void enable_compile() {
  compile_mode() = CompileMode::enabled;
}

void set_compile_mode(CompileMode mode) {
  compile_mode() = mode;
}

}  // namespace mlx::core
