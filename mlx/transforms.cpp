#include "mlx/transforms.h"

#include <algorithm>
#include <atomic>
#include <cstdint>

#include "mlx/backend/gpu/eval.h"
#include "mlx/eval_worker.h"
#include "mlx/primitives.h"
#include "mlx/transforms_impl.h"

namespace mlx::core {

namespace detail {

namespace {
std::atomic<int> tracing_depth{0};

}  // namespace

bool in_tracing() {
  return tracing_depth.load(std::memory_order_relaxed) > 0;
}
InTracing::InTracing() {
  ++tracing_depth;
}
InTracing::~InTracing() {
  --tracing_depth;
}

}  // namespace detail

namespace {

// The ids of the nodes a graph walk has reached: open addressing in a power-of-two table
// that is reused from one walk to the next (only the slots a walk filled are cleared), so
// marking a node allocates nothing, where a hash set allocated a node per insert.
class IdSet {
 public:
  // Whether `id` (never 0) was absent; it is present afterwards.
  bool insert(std::uintptr_t id) {
    if ((filled_.size() + 1) * 2 > slots_.size()) {
      grow();
    }
    size_t mask = slots_.size() - 1;
    for (size_t i = slot(id, mask);; i = (i + 1) & mask) {
      if (slots_[i] == id) {
        return false;
      }
      if (slots_[i] == 0) {
        slots_[i] = id;
        filled_.push_back(i);
        return true;
      }
    }
  }
  void clear() {
    for (size_t i : filled_) {
      slots_[i] = 0;
    }
    filled_.clear();
  }

 private:
  static size_t slot(std::uintptr_t id, size_t mask) {
    // Ids are heap addresses: drop the alignment bits, then mix.
    return static_cast<size_t>(((id >> 4) * 0x9E3779B97F4A7C15ull) >> 20) & mask;
  }
  void grow() {
    std::vector<std::uintptr_t> old;
    old.reserve(filled_.size());
    for (size_t i : filled_) {
      old.push_back(slots_[i]);
    }
    slots_.assign(std::max<size_t>(64, slots_.size() * 2), 0);
    filled_.clear();
    for (auto id : old) {
      insert(id);
    }
  }
  std::vector<std::uintptr_t> slots_;
  std::vector<size_t> filled_;
};

// Orders the unevaluated part of the graph so that every array comes after its inputs.
// Iterative depth-first search: a 100k-node chain must not overflow the stack.
std::vector<array> build_tape(const std::vector<array>& outputs) {
  std::vector<array> tape;
  // Per thread and reused; the walk calls nothing that could walk again.
  thread_local IdSet visited;
  visited.clear();
  struct Frame {
    array node;
    size_t next_input;
  };
  std::vector<Frame> stack;
  for (auto& out : outputs) {
    if (out.status() != array::Status::unscheduled || !visited.insert(out.id())) {
      continue;
    }
    stack.push_back({out, 0});
    while (!stack.empty()) {
      auto& top = stack.back();
      auto& inputs = top.node.inputs();
      if (top.next_input < inputs.size()) {
        const array& in = inputs[top.next_input++];
        if (in.status() == array::Status::unscheduled && visited.insert(in.id())) {
          // Siblings are produced by the same primitive: mark them visited too.
          for (auto& s : in.siblings()) {
            visited.insert(s.id());
          }
          stack.push_back({in, 0});  // `in` lives in a node the stack holds
        }
        continue;
      }
      tape.push_back(std::move(top.node));
      stack.pop_back();
    }
    for (auto& s : out.siblings()) {
      visited.insert(s.id());
    }
  }
  return tape;
}

// Throws, before anything is marked, for a node eval cannot run.
void check_runnable(const array& arr) {
  if (arr.has_primitive()) {
    return;
  }
  // A compile placeholder (or an array built without a graph) has nothing to run.
  if (arr.is_tracer()) {
    throw std::invalid_argument(
        "[eval] Attempting to eval an array during function transformations like compile "
        "or vmap is not allowed.");
  }
  throw std::runtime_error(
      "[eval] Attempting to eval an array without a primitive. If you are compiling a "
      "function, make sure all the inputs and outputs are captured.");
}

// Runs the tape's nodes that still have status `expected` (unscheduled inline, scheduled
// on the eval thread), then submits each GPU stream's open batch. On a failure, `failed`
// is the index of the node that threw (the tape holds it again, and it and every later
// node are as they were), or tape.size() when the submission threw. `remains` (the eval
// thread): the last references to finished nodes go there instead of being dropped
// (array::Remains).
void run_tape(std::vector<array>& tape, const std::vector<array>& outputs, array::Status expected,
              size_t& failed, array::Remains* remains) {
  // The backend may look ahead in the tape while it records (gpu::begin_tape).
  struct TapeScope {
    explicit TapeScope(const std::vector<array>& t) {
      gpu::begin_tape(t);
    }
    ~TapeScope() {
      gpu::end_tape();
    }
  } scope(tape);
  std::vector<int> gpu_streams;
  for (size_t i = 0; i < tape.size(); ++i) {
    // Each entry is moved out of the tape when it runs, so the tape never keeps a finished
    // node (and the memory behind it) alive.
    array arr = std::move(tape[i]);
    if (arr.status() != expected) {
      if (remains) {
        array::release_into(std::move(arr), *remains);
      }
      continue;  // evaluated as a sibling of an earlier node
    }
    try {
      check_runnable(arr);
    } catch (...) {
      tape[i] = std::move(arr);
      failed = i;
      throw;
    }
    auto stream = arr.primitive().stream();
    // Siblings hold copies of this node's inputs, and only this node's list reaches the
    // eval: dropping theirs lets a multi-output op take an input's buffer that nothing
    // else holds (a decode step updating its KV caches in place, mlx/fusion.h).
    if (!arr.is_tracer()) {
      for (auto& s : arr.siblings()) {
        s.inputs().clear();
      }
    }
    try {
      // Inputs computed on another stream's GPU must be complete before the CPU reads them.
      for (auto& in : arr.inputs()) {
        if (in.status() == array::Status::evaluated && stream.device == Device::cpu) {
          in.wait();
        }
      }
      if (stream.device == Device::gpu) {
        gpu::eval(arr);
        if (std::find(gpu_streams.begin(), gpu_streams.end(), stream.index) == gpu_streams.end()) {
          gpu_streams.push_back(stream.index);
        }
        // This array and its siblings (no outputs() list: that allocates per node).
        auto mark = [&](const array& o) {
          o.set_pending_stream(stream.index);
          o.set_status(array::Status::evaluated);
        };
        mark(arr);
        for (auto& o : arr.siblings()) {
          mark(o);
        }
      } else {
        auto outs = arr.outputs();
        arr.primitive().eval_cpu(arr.inputs(), outs);
        for (auto& o : outs) {
          o.set_status(array::Status::available);
        }
      }
    } catch (...) {
      // The node stays unevaluated: its siblings get the input list back, so evaluating one
      // of them again (after the caller handled the error) finds the graph as it was.
      if (!arr.is_tracer()) {
        for (auto& sib : arr.siblings()) {
          sib.inputs() = arr.inputs();
        }
      }
      tape[i] = std::move(arr);
      failed = i;
      throw;
    }
    // Dropping the primitive and inputs frees intermediates as soon as nothing needs them.
    if (remains) {
      arr.detach_into(*remains);
      array::release_into(std::move(arr), *remains);
    } else if (!arr.is_tracer()) {
      arr.detach();
    }
  }

  failed = tape.size();  // every slot is empty now: nothing left to unschedule
  // The arrays asked for are the ones a caller reads next (a decode loop's token): a
  // backend may fetch them in the batch that wrote them.
  if (!gpu_streams.empty()) {
    for (auto& out : outputs) {
      if (out.status() == array::Status::evaluated) {
        gpu::prefetch_for_host(out);
      }
    }
  }
  for (int s : gpu_streams) {
    gpu::finalize(Stream(s, Device::gpu));
  }
}

// Gives a node and its siblings a status and a job number; the siblings first: once the
// node reads unscheduled, its lists are the builder's.
void set_scheduling(const array& a, array::Status status, uint64_t job) {
  for (auto& s : a.siblings()) {
    s.set_eval_job(job);
    s.set_status(status);
  }
  a.set_eval_job(job);
  a.set_status(status);
}

// Sets every scheduled node of tape[from..] back to unscheduled (empty slots ran).
void unschedule(std::vector<array>& tape, size_t from) {
  for (size_t i = from; i < tape.size(); ++i) {
    if (tape[i].id() != 0 && tape[i].status() == array::Status::scheduled) {
      set_scheduling(tape[i], array::Status::unscheduled, 0);
    }
  }
}

// async_eval on the eval thread (eval_worker.h): the graph's nodes are marked scheduled here,
// so that the caller's next graph treats them as inputs, and recorded there.
void queue_on_eval_thread(std::vector<array> tape, std::vector<array> outputs) {
  for (auto& a : tape) {
    check_runnable(a);
  }
  const uint64_t job = detail::next_eval_job();
  for (auto& a : tape) {
    set_scheduling(a, array::Status::scheduled, job);
  }
  // Cancelled (never run, or after it threw): what did not run goes back to unscheduled, as
  // if never asked for. `from` is where that starts (the tape's earlier slots are empty).
  // The job comes back to this thread to be destroyed (eval_worker.h), with the remains.
  auto run = [tape = std::move(tape), outputs = std::move(outputs), from = size_t{0},
              remains = array::Remains{}](bool go) mutable {
    if (!go) {
      unschedule(tape, from);
      return;
    }
    run_tape(tape, outputs, array::Status::scheduled, from, &remains);
    // Not kept until this job is destroyed: the next job may donate an output's buffer (a
    // KV cache updated in place) only if nothing else holds it.
    for (auto& out : outputs) {
      array::release_into(std::move(out), remains);
    }
  };
  // Moved, never copied: a second reference to a node would make its buffer undonatable.
  if (auto failure = detail::queue_eval_job(std::move(run))) {
    std::rethrow_exception(failure);
  }
}

void eval_impl(std::vector<array> outputs, bool wait) {
  const bool threaded =
      !wait && detail::eval_thread_enabled() && !detail::in_tracing() && !detail::on_eval_thread();
  if (!threaded) {
    // Graphs queued earlier are this one's inputs, and one thread records at a time.
    detail::drain_eval_jobs();
  }
  auto tape = build_tape(outputs);
  if (threaded) {
    if (!tape.empty()) {
      queue_on_eval_thread(std::move(tape), std::move(outputs));
    }
    return;
  }
  size_t failed = 0;
  run_tape(tape, outputs, array::Status::unscheduled, failed, nullptr);
  if (wait) {
    for (auto& out : outputs) {
      out.wait();
    }
  }
}

}  // namespace

void eval(std::vector<array> outputs) {
  eval_impl(std::move(outputs), true);
}

void async_eval(std::vector<array> outputs) {
  eval_impl(std::move(outputs), false);
}

}  // namespace mlx::core
