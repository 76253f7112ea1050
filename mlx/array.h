// The lazy, reference-counted n-d array at the centre of the API.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <iterator>
#include <memory>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#include "mlx/allocator.h"
#include "mlx/dtype.h"
#include "mlx/dtype_utils.h"
#include "mlx/stream.h"

namespace mlx::core {

using ShapeElem = int32_t;
using Shape = std::vector<ShapeElem>;
using Strides = std::vector<int64_t>;
using Deleter = std::function<void(allocator::Buffer)>;

class Primitive;

class array {
 public:
  // A 0-d array holding one value.
  template <typename T>
  explicit array(T val, Dtype dtype = TypeToDtype<T>());

  array(const std::complex<float>& val, Dtype dtype = complex64);

  // Copies data from an iterator over `prod(shape)` values.
  template <typename It>
  array(It data, Shape shape,
        Dtype dtype = TypeToDtype<typename std::iterator_traits<It>::value_type>());

  // 1-d arrays from a list, and n-d arrays from a flat list plus a shape.
  template <typename T>
  array(std::initializer_list<T> data, Dtype dtype = TypeToDtype<T>());
  array(std::initializer_list<float> data);
  array(std::initializer_list<int> data, Dtype dtype);
  template <typename T>
  array(std::initializer_list<T> data, Shape shape, Dtype dtype = TypeToDtype<T>());

  // Wraps an existing buffer (taking ownership through `deleter`).
  array(allocator::Buffer data, Shape shape, Dtype dtype, Deleter deleter = allocator::free);

  array& operator=(const array& other) & = default;
  array& operator=(array&& other) & = default;
  array(const array& other) = default;
  array(array&& other) = default;
  ~array();

  size_t itemsize() const {
    return size_of(dtype());
  }
  size_t size() const {
    return desc_->size;
  }
  size_t nbytes() const {
    return size() * itemsize();
  }
  size_t ndim() const {
    return desc_->shape.size();
  }
  const Shape& shape() const {
    return desc_->shape;
  }
  // Negative dims count from the end.
  int shape(int dim) const {
    return shape().at(dim < 0 ? dim + ndim() : dim);
  }
  const Strides& strides() const {
    return desc_->strides;
  }
  int64_t strides(int dim) const {
    return strides().at(dim < 0 ? dim + ndim() : dim);
  }
  Dtype dtype() const {
    return desc_->dtype;
  }

  // Evaluates the array (and its graph) and waits for the result.
  void eval();

  // The single value of a size-1 array; evaluates it first.
  template <typename T>
  T item();
  template <typename T>
  T item() const;

  // --- Graph: used by ops, transforms and backends ---------------------------------------

  array(Shape shape, Dtype dtype, std::shared_ptr<Primitive> primitive, std::vector<array> inputs);

  // Outputs of one multi-output primitive; each output lists the others as siblings.
  static std::vector<array> make_arrays(std::vector<Shape> shapes, const std::vector<Dtype>& dtypes,
                                        const std::shared_ptr<Primitive>& primitive,
                                        const std::vector<array>& inputs);

  std::uintptr_t id() const {
    return reinterpret_cast<std::uintptr_t>(desc_.get());
  }
  std::uintptr_t primitive_id() const {
    return reinterpret_cast<std::uintptr_t>(desc_->primitive.get());
  }
  // Creation order: an array's inputs were made before it, so they have smaller serials.
  // Graph rewrites (mlx/fusion.h) use it to prove that a new input cannot form a cycle.
  uint64_t serial() const {
    return desc_->serial;
  }

  struct Data {
    allocator::Buffer buffer;
    Deleter d;
    // GPU backends: how many in-flight or open command batches keep this Data alive, and
    // the stream whose batches do (-1 none yet, -2 several). A batch's hold is the only
    // use beside the graph's that a later GPU op of the same stream may ignore when it
    // donates: that stream orders its commands (vulkan::gpu_donatable).
    std::atomic<int32_t> batch_holds{0};
    std::atomic<int32_t> hold_stream{-1};
    Data(allocator::Buffer buffer, Deleter d = allocator::free) : buffer(buffer), d(std::move(d)) {}
    Data(const Data&) = delete;
    Data& operator=(const Data&) = delete;
    ~Data() {
      d(buffer);
    }
  };

  struct Flags {
    // Elements occupy one dense range of the buffer (any order, no gaps or overlap).
    bool contiguous : 1;
    bool row_contiguous : 1;
    bool col_contiguous : 1;
  };

  Primitive& primitive() const {
    return *(desc_->primitive);
  }
  std::shared_ptr<Primitive>& primitive_ptr() const {
    return desc_->primitive;
  }
  bool has_primitive() const {
    return desc_->primitive != nullptr;
  }

  std::vector<array>& inputs() {
    return desc_->inputs;
  }
  const std::vector<array>& inputs() const {
    return desc_->inputs;
  }

  // True when nothing but the graph holds this array and its data, so an op may write
  // its output into this array's buffer.
  bool is_donatable() const {
    return desc_.use_count() == 1 && desc_->data && desc_->data.use_count() == 1 &&
           after_other_holders();
  }
  // As is_donatable, for an op that runs in the order of GPU stream `stream`: the holds of
  // that stream's command batches do not count (vulkan::gpu_donatable says why). The holds
  // are read before the count: a finishing batch drops its hold first and its reference
  // after, so a stale pair only says no.
  bool is_donatable_in_stream(int stream) const {
    if (desc_.use_count() != 1 || !desc_->data) {
      return false;
    }
    const auto& d = desc_->data;
    int32_t holds = d->batch_holds.load();
    int32_t by = d->hold_stream.load();
    return d.use_count() == 1 + holds && (holds == 0 || by == stream) && after_other_holders();
  }

  const std::vector<array>& siblings() const {
    return desc_->siblings;
  }
  std::vector<array>& siblings() {
    return desc_->siblings;
  }
  void set_siblings(std::vector<array> siblings, uint16_t position) {
    desc_->siblings = std::move(siblings);
    desc_->position = position;
  }
  // This array and its siblings, in output order.
  std::vector<array> outputs() const;

  const Flags& flags() const {
    return desc_->flags;
  }

  // Number of elements the buffer holds for this view (the dense range it spans).
  size_t data_size() const {
    return desc_->data_size;
  }

  allocator::Buffer& buffer() {
    return desc_->data->buffer;
  }
  const allocator::Buffer& buffer() const {
    return desc_->data->buffer;
  }
  size_t buffer_size() const {
    return allocator::allocator().size(buffer());
  }
  std::shared_ptr<Data> data_shared_ptr() const {
    return desc_->data;
  }
  bool has_data() const {
    return desc_->data != nullptr;
  }

  // Byte offset of element 0 of this view inside buffer().
  size_t offset() const {
    return desc_->offset;
  }

  template <typename T>
  T* data() {
#ifndef NDEBUG
    // Debug builds catch reading elements as a type of another width.
    if constexpr (!std::is_void_v<T> && sizeof(T) != 1) {
      if (sizeof(T) != itemsize()) {
        throw std::invalid_argument("[data] the element type has " + std::to_string(sizeof(T)) +
                                    " bytes but the array's dtype " + dtype_to_string(dtype()) +
                                    " has " + std::to_string(itemsize()) + ".");
      }
    }
#endif
    return reinterpret_cast<T*>(static_cast<char*>(buffer().raw_ptr()) + desc_->offset);
  }
  template <typename T>
  const T* data() const {
    return const_cast<array&>(*this).data<T>();
  }

  enum class Status {
    unscheduled,  // a graph node waiting for eval
    scheduled,    // handed to the eval thread by async_eval, not recorded yet (eval_worker.h)
    evaluated,    // recorded on its stream, may still be running on a device
    available     // its data can be read
  };
  // Acquire / release: a status another thread set comes with the data it set before.
  Status status() const {
    return desc_->status.load(std::memory_order_acquire);
  }
  void set_status(Status s) const {
    desc_->status.store(s, std::memory_order_release);
  }
  // The async_eval job that scheduled this node (0: none); array::wait waits for it.
  uint64_t eval_job() const {
    return desc_->eval_job.load(std::memory_order_relaxed);
  }
  void set_eval_job(uint64_t n) const {
    desc_->eval_job.store(n, std::memory_order_relaxed);
  }
  bool is_available() const;
  // Waits until the data is readable (after async_eval on a GPU stream).
  void wait();

  // The stream whose completion makes this array available (set by eval on a GPU).
  void set_pending_stream(int stream_index) const;

  // As MLX: only an array marked as a tracer while a transform traces is one.
  bool is_tracer() const;
  void set_tracer(bool is_tracer) {
    desc_->is_tracer = is_tracer;
  }

  // Gives this (row-contiguous) array a freshly allocated buffer.
  void set_data(allocator::Buffer buffer, Deleter d = allocator::free);
  void set_data(allocator::Buffer buffer, size_t data_size, Strides strides, Flags flags,
                Deleter d = allocator::free);

  // Makes this array a view of `other`'s buffer with its own strides and offset.
  void copy_shared_buffer(const array& other, const Strides& strides, Flags flags, size_t data_size,
                          int64_t offset_elems = 0);
  void copy_shared_buffer(const array& other);

  // Drops the primitive and inputs once evaluated, so the graph can be freed.
  void detach();

  // References a thread that did not build the graph (the eval thread, mlx/eval_worker.h)
  // held last, handed back so that the builder frees its own allocations: glibc's malloc
  // serializes frees of another thread's memory with that thread's allocations (measured:
  // the builder's graph building took twice as long). Data is dropped where it dies.
  struct Remains {
    std::vector<array> arrays;
    std::vector<std::shared_ptr<Primitive>> primitives;
  };
  // As detach, but a reference that is the last one moves into `r` (its data dropped).
  void detach_into(Remains& r);
  // Drops `a`, or moves it into `r` (its data dropped) when it is the last reference.
  static void release_into(array&& a, Remains& r);

 private:
  // The counts above are relaxed reads: a copy made and dropped of each (acquire-release
  // updates) orders what this thread does with the buffer next after what the threads that
  // dropped their references did with it before (the eval thread, mlx/eval_worker.h).
  // Returns true.
  bool after_other_holders() const {
    std::shared_ptr<ArrayDesc>(desc_).reset();
    std::shared_ptr<Data>(desc_->data).reset();
    return true;
  }

  template <typename It>
  void init(It src);
  // The first element converted to T.
  template <typename T>
  T value_as() const;

  struct ArrayDesc {
    Shape shape;
    Strides strides;
    size_t size;
    Dtype dtype;
    std::shared_ptr<Primitive> primitive;
    std::atomic<Status> status;
    int pending_stream = -1;
    std::atomic<uint64_t> eval_job{0};
    bool is_tracer = false;
    std::shared_ptr<Data> data;
    size_t offset = 0;
    size_t data_size = 0;
    Flags flags{true, true, true};
    std::vector<array> inputs;
    std::vector<array> siblings;
    uint32_t position = 0;
    uint64_t serial;

    explicit ArrayDesc(Shape shape, Dtype dtype);
    ArrayDesc(Shape shape, Dtype dtype, std::shared_ptr<Primitive> primitive,
              std::vector<array> inputs);
    // Frees long input chains iteratively so a 100k-node graph cannot overflow the stack.
    ~ArrayDesc();
  };

  std::shared_ptr<ArrayDesc> desc_;
};

// Row-major strides of a shape.
Strides row_major_strides(const Shape& shape);

template <typename T>
array::array(T val, Dtype dtype) : desc_(std::make_shared<ArrayDesc>(Shape{}, dtype)) {
  init(&val);
}

template <typename It>
array::array(It data, Shape shape, Dtype dtype)
    : desc_(std::make_shared<ArrayDesc>(std::move(shape), dtype)) {
  init(data);
}

template <typename T>
array::array(std::initializer_list<T> data, Dtype dtype)
    : desc_(std::make_shared<ArrayDesc>(Shape{static_cast<ShapeElem>(data.size())}, dtype)) {
  init(data.begin());
}

template <typename T>
array::array(std::initializer_list<T> data, Shape shape, Dtype dtype)
    : desc_(std::make_shared<ArrayDesc>(std::move(shape), dtype)) {
  if (desc_->size != data.size()) {
    throw std::invalid_argument(
        "[array] data size does not match the number of elements of the shape.");
  }
  init(data.begin());
}

template <typename T>
T array::item() {
  if (size() != 1) {
    throw std::invalid_argument("[item] only size-1 arrays can be converted to scalars.");
  }
  eval();
  return value_as<T>();
}

template <typename T>
T array::item() const {
  if (size() != 1) {
    throw std::invalid_argument("[item] only size-1 arrays can be converted to scalars.");
  }
  if (status() == Status::unscheduled) {
    throw std::invalid_argument("[item] cannot get the item of an unevaluated const array.");
  }
  const_cast<array&>(*this).wait();
  return value_as<T>();
}

template <typename T>
T array::value_as() const {
  // Converted from the stored dtype, never reinterpreted: item<float>() of an int32 or
  // float64 array is its value.
  T result{};
  dispatch_dtype(dtype(), [&](auto tag) {
    using S = typename decltype(tag)::type;
    result = cast_value<T, S>(*data<S>());
  });
  return result;
}

template <typename It>
void array::init(It src) {
  set_data(allocator::malloc_host_written(size() * size_of(dtype())));
  using Src = std::remove_cv_t<typename std::iterator_traits<It>::value_type>;
  dispatch_dtype(dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* dst = data<T>();
    for (size_t i = 0; i < size(); ++i, ++src) {
      dst[i] = cast_value<T, Src>(*src);
    }
  });
}

}  // namespace mlx::core
