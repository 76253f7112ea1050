#include "mlx/array.h"

#include <atomic>
#include <limits>

#include "mlx/backend/gpu/eval.h"
#include "mlx/eval_worker.h"
#include "mlx/primitives.h"
#include "mlx/transforms.h"
#include "mlx/transforms_impl.h"
#include "mlx/utils.h"

namespace mlx::core {

namespace {

// The element count of `shape`, refusing shapes whose element or byte count does not fit
// the signed 64-bit offsets every backend indexes with (a wrapped count would silently
// make an empty or tiny array).
size_t shape_size(const Shape& shape, Dtype dtype, const char* who) {
  constexpr uint64_t limit = static_cast<uint64_t>(std::numeric_limits<int64_t>::max());
  uint64_t size = 1;
  bool overflow = false;
  for (auto d : shape) {
    if (d < 0) {
      throw std::invalid_argument(std::string("[") + who +
                                  "] shape dimensions must be non-negative.");
    }
    uint64_t next;
    if (__builtin_mul_overflow(size, static_cast<uint64_t>(d), &next) || next > limit) {
      overflow = true;
      next = limit;  // keep scanning: a later 0 makes the array empty, not too large
    }
    size = next;
  }
  bool empty = std::find(shape.begin(), shape.end(), 0) != shape.end();
  uint64_t bytes = 0;
  if (!empty && (overflow || __builtin_mul_overflow(size, uint64_t(size_of(dtype)), &bytes) ||
                 bytes > limit)) {
    throw std::invalid_argument(std::string("[") + who + "] an array of shape " +
                                shape_to_string(shape) + " and dtype " + dtype_to_string(dtype) +
                                " has more elements or bytes than fit in 63 bits.");
  }
  return empty ? 0 : static_cast<size_t>(size);
}

}  // namespace

namespace {

// Row-major strides of `shape` into `strides`, reusing its storage.
void assign_row_major(const Shape& shape, Strides& strides) {
  strides.assign(shape.size(), 1);
  for (int i = static_cast<int>(shape.size()) - 2; i >= 0; --i) {
    // Unsigned so an oversized shape wraps instead of overflowing; ArrayDesc rejects it.
    strides[i] = static_cast<int64_t>(static_cast<uint64_t>(strides[i + 1]) *
                                      std::max<uint64_t>(shape[i + 1], 1));
  }
}

}  // namespace

Strides row_major_strides(const Shape& shape) {
  Strides strides;
  assign_row_major(shape, strides);
  return strides;
}

namespace {

uint64_t next_serial() {
  static std::atomic<uint64_t> counter{0};
  return counter.fetch_add(1, std::memory_order_relaxed);
}

}  // namespace

array::ArrayDesc::ArrayDesc(Shape shape_, Dtype dtype_)
    : shape(std::move(shape_)),
      strides(row_major_strides(shape)),
      size(shape_size(shape, dtype_, "array")),
      dtype(dtype_),
      status(Status::available),
      serial(next_serial()) {}

array::ArrayDesc::ArrayDesc(Shape shape_, Dtype dtype_, std::shared_ptr<Primitive> primitive_,
                            std::vector<array> inputs_)
    : shape(std::move(shape_)),
      strides(row_major_strides(shape)),
      size(shape_size(shape, dtype_, primitive_ ? primitive_->name() : "array")),
      dtype(dtype_),
      primitive(std::move(primitive_)),
      status(Status::unscheduled),
      inputs(std::move(inputs_)),
      serial(next_serial()) {}

namespace {

// Whether `p` holds the only reference, with what other threads did with the object before
// dropping theirs visible here: use_count() is a relaxed read, so a copy made and dropped
// (two acquire-release updates of the count) orders this thread after those drops (the eval
// thread and the graph's builder both drop nodes, mlx/eval_worker.h).
template <class T>
bool sole_owner(const std::shared_ptr<T>& p) {
  if (p.use_count() != 1) {
    return false;
  }
  std::shared_ptr<T>(p).reset();
  return true;
}

}  // namespace

array::ArrayDesc::~ArrayDesc() {
  // Move inputs that only we hold onto an explicit stack and release them one by one;
  // the default recursive destruction would use one stack frame per graph node.
  std::vector<std::shared_ptr<ArrayDesc>> pending;
  auto take_inputs = [&pending](std::vector<array>& in) {
    for (auto& a : in) {
      if (a.desc_ && sole_owner(a.desc_)) {
        pending.push_back(std::move(a.desc_));
      }
    }
    in.clear();
  };
  take_inputs(inputs);
  while (!pending.empty()) {
    auto desc = std::move(pending.back());
    pending.pop_back();
    take_inputs(desc->inputs);
    // Siblings reference each other; dropping them here cannot recurse deeply.
    desc->siblings.clear();
  }
}

array::array(const std::complex<float>& val, Dtype dtype)
    : desc_(std::make_shared<ArrayDesc>(Shape{}, dtype)) {
  complex64_t v(val);
  init(&v);
}

array::array(std::initializer_list<float> data)
    : desc_(std::make_shared<ArrayDesc>(Shape{static_cast<ShapeElem>(data.size())}, float32)) {
  init(data.begin());
}

array::array(std::initializer_list<int> data, Dtype dtype)
    : desc_(std::make_shared<ArrayDesc>(Shape{static_cast<ShapeElem>(data.size())}, dtype)) {
  init(data.begin());
}

array::array(allocator::Buffer data, Shape shape, Dtype dtype, Deleter deleter)
    : desc_(std::make_shared<ArrayDesc>(std::move(shape), dtype)) {
  set_data(data, std::move(deleter));
}

array::array(Shape shape, Dtype dtype, std::shared_ptr<Primitive> primitive,
             std::vector<array> inputs)
    : desc_(std::make_shared<ArrayDesc>(std::move(shape), dtype, std::move(primitive),
                                        std::move(inputs))) {}

array::~array() {
  if (!desc_) {
    return;
  }
  // Siblings form a reference cycle. When the only references left to a sibling group are
  // the ones the siblings hold on each other (and ours), break the cycle.
  // Only an unscheduled group can be such a cycle (eval detaches what it runs), and only an
  // unscheduled node's lists belong to this thread: the eval thread may be detaching a
  // scheduled one (mlx/eval_worker.h).
  if (desc_->status.load(std::memory_order_acquire) != Status::unscheduled) {
    return;
  }
  auto n = desc_->siblings.size();
  if (n == 0 || static_cast<size_t>(desc_.use_count()) != n + 1) {
    return;
  }
  for (auto& s : desc_->siblings) {
    if (static_cast<size_t>(s.desc_.use_count()) != n) {
      return;
    }
  }
  std::vector<array> group = std::move(desc_->siblings);
  for (auto& s : group) {
    s.desc_->siblings.clear();
  }
}

std::vector<array> array::make_arrays(std::vector<Shape> shapes, const std::vector<Dtype>& dtypes,
                                      const std::shared_ptr<Primitive>& primitive,
                                      const std::vector<array>& inputs) {
  std::vector<array> outputs;
  outputs.reserve(shapes.size());
  for (size_t i = 0; i < shapes.size(); ++i) {
    outputs.emplace_back(std::move(shapes[i]), dtypes[i], primitive, inputs);
  }
  if (outputs.size() > 1) {
    for (size_t i = 0; i < outputs.size(); ++i) {
      std::vector<array> siblings;
      for (size_t j = 0; j < outputs.size(); ++j) {
        if (j != i) {
          siblings.push_back(outputs[j]);
        }
      }
      outputs[i].set_siblings(std::move(siblings), static_cast<uint16_t>(i));
    }
  }
  return outputs;
}

std::vector<array> array::outputs() const {
  std::vector<array> outs;
  outs.reserve(siblings().size() + 1);
  auto pos = desc_->position;
  auto it = siblings().begin();
  for (size_t i = 0; i < siblings().size() + 1; ++i) {
    if (i == pos) {
      outs.push_back(*this);
    } else {
      outs.push_back(*it++);
    }
  }
  return outs;
}

void array::eval() {
  // As MLX: a node already scheduled (async_eval) is waited for, not evaluated again, so
  // reading token t waits for its own graph, not for step t + 1 queued after it.
  if (status() == Status::unscheduled) {
    mlx::core::eval({*this});
  } else {
    wait();
  }
}

bool array::is_available() const {
  // A GPU-evaluated array is available once the work that wrote its data has completed,
  // whether or not anyone waited for it (MLX checks its event the same way).
  if (status() == Status::evaluated && desc_->pending_stream >= 0 && gpu::is_ready(*this)) {
    set_status(Status::available);
  }
  return status() == Status::available;
}

void array::set_pending_stream(int stream_index) const {
  desc_->pending_stream = stream_index;
}

bool array::is_tracer() const {
  return desc_->is_tracer && detail::in_tracing();
}

void array::wait() {
  // A node async_eval handed to the eval thread: its job first (eval_worker.h).
  detail::wait_eval_job(eval_job());
  if (status() == Status::scheduled) {
    detail::drain_eval_jobs();  // its job number was not its own (async_eval on two threads)
  }
  if (status() == Status::evaluated) {
    if (desc_->pending_stream >= 0) {
      // The work that wrote the data, not the stream's later work (as MLX waits on the
      // array's event). A view shares its producer's buffer, whichever stream wrote it.
      gpu::wait_ready(*this);
    }
    set_status(Status::available);
  } else if (status() == Status::unscheduled) {
    eval();
  }
}

void array::set_data(allocator::Buffer buffer, Deleter d) {
  desc_->data = std::make_shared<Data>(buffer, std::move(d));
  desc_->offset = 0;
  desc_->data_size = size();
  assign_row_major(shape(), desc_->strides);  // every output gets one: no new vector
  desc_->flags = Flags{true, true, ndim() <= 1 || size() <= 1};
  if (!desc_->flags.col_contiguous) {
    // A row-major array is also column-major when at most one dimension exceeds 1.
    int big = 0;
    for (auto s : shape()) {
      big += s > 1;
    }
    desc_->flags.col_contiguous = big <= 1;
  }
}

void array::set_data(allocator::Buffer buffer, size_t data_size, Strides strides, Flags flags,
                     Deleter d) {
  desc_->data = std::make_shared<Data>(buffer, std::move(d));
  desc_->offset = 0;
  desc_->data_size = data_size;
  desc_->strides = std::move(strides);
  desc_->flags = flags;
}

void array::copy_shared_buffer(const array& other, const Strides& strides, Flags flags,
                               size_t data_size, int64_t offset_elems) {
  desc_->data = other.desc_->data;
  desc_->offset = static_cast<size_t>(static_cast<int64_t>(other.desc_->offset) +
                                      offset_elems * static_cast<int64_t>(itemsize()));
  desc_->data_size = data_size;
  desc_->strides = strides;
  desc_->flags = flags;
}

void array::copy_shared_buffer(const array& other) {
  copy_shared_buffer(other, other.strides(), other.flags(), other.data_size());
}

void array::detach() {
  // The list is moved out before the siblings' lists are cleared: dropping their references
  // to this array may run ~array's cycle breaker on it, which takes this list.
  std::vector<array> siblings = std::move(desc_->siblings);
  desc_->siblings.clear();
  for (auto& s : siblings) {
    s.desc_->primitive = nullptr;
    s.desc_->inputs.clear();
    s.desc_->siblings.clear();
  }
  desc_->primitive = nullptr;
  desc_->inputs.clear();
}

void array::release_into(array&& a, Remains& r) {
  if (!a.desc_) {
    return;
  }
  if (sole_owner(a.desc_)) {
    a.desc_->data.reset();  // buffers go back now, as detach would free them
    r.arrays.push_back(std::move(a));
  } else {
    a.desc_.reset();
  }
}

void array::detach_into(Remains& r) {
  auto strip = [&r](ArrayDesc& d) {
    for (auto& in : d.inputs) {
      release_into(std::move(in), r);
    }
    d.inputs.clear();
    if (d.primitive && d.primitive.use_count() == 1) {
      r.primitives.push_back(std::move(d.primitive));
    }
    d.primitive = nullptr;
  };
  // As detach: the list is moved out before the siblings' lists are cleared.
  std::vector<array> siblings = std::move(desc_->siblings);
  desc_->siblings.clear();
  for (auto& s : siblings) {
    strip(*s.desc_);
    s.desc_->siblings.clear();
  }
  strip(*desc_);
  for (auto& s : siblings) {
    release_into(std::move(s), r);
  }
}

}  // namespace mlx::core
