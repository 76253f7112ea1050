// sort, argsort, partition, argpartition and topk: MLX's signatures, checks and messages.
// complex64 is not sorted here (MLX orders it lexicographically); it raises at the call.
#include <sstream>

#include "mlx/ops.h"
#include "mlx/primitives.h"
#include "mlx/utils.h"

namespace mlx::core {

namespace {

int sort_axis(const array& a, int axis, const char* op) {
  if (a.dtype() == complex64) {
    throw std::invalid_argument(std::string("[") + op + "] complex64 is not supported.");
  }
  return normalize_axis(axis, static_cast<int>(a.ndim()), op);
}

int check_kth(const array& a, int kth, int axis, int ax, const char* op) {
  int n = a.shape(ax);
  int k = kth < 0 ? kth + n : kth;
  if (k < 0 || k >= n) {
    std::ostringstream msg;
    msg << "[" << op << "] Received invalid kth " << kth << " along axis " << axis
        << " for array with shape: " << shape_to_string(a.shape());
    throw std::invalid_argument(msg.str());
  }
  return k;
}

array flat(const array& a, StreamOrDevice s) {
  return reshape(a, {static_cast<int>(a.size())}, s);
}

}  // namespace

array sort(const array& a, int axis, StreamOrDevice s) {
  int ax = sort_axis(a, axis, "sort");
  return array(a.shape(), a.dtype(), std::make_shared<Sort>(to_stream(s), ax), {a});
}

array sort(const array& a, StreamOrDevice s) {
  return sort(flat(a, s), 0, s);
}

array argsort(const array& a, int axis, StreamOrDevice s) {
  int ax = sort_axis(a, axis, "argsort");
  return array(a.shape(), uint32, std::make_shared<ArgSort>(to_stream(s), ax), {a});
}

array argsort(const array& a, StreamOrDevice s) {
  return argsort(flat(a, s), 0, s);
}

array partition(const array& a, int kth, int axis, StreamOrDevice s) {
  int ax = sort_axis(a, axis, "partition");
  int k = check_kth(a, kth, axis, ax, "partition");
  return array(a.shape(), a.dtype(), std::make_shared<Partition>(to_stream(s), k, ax), {a});
}

array partition(const array& a, int kth, StreamOrDevice s) {
  return partition(flat(a, s), kth, 0, s);
}

array argpartition(const array& a, int kth, int axis, StreamOrDevice s) {
  int ax = sort_axis(a, axis, "argpartition");
  int k = check_kth(a, kth, axis, ax, "argpartition");
  return array(a.shape(), uint32, std::make_shared<ArgPartition>(to_stream(s), k, ax), {a});
}

array argpartition(const array& a, int kth, StreamOrDevice s) {
  return argpartition(flat(a, s), kth, 0, s);
}

array topk(const array& a, int k, int axis, StreamOrDevice s) {
  int ax = sort_axis(a, axis, "topk");
  if (k < 0 || k > a.shape(ax)) {
    std::ostringstream msg;
    msg << "[topk] Received invalid k=" << k << " along axis " << axis
        << " for array with shape: " << shape_to_string(a.shape());
    throw std::invalid_argument(msg.str());
  }
  if (k == a.shape(ax)) {
    return a;
  }
  // The k largest are the last k of a partition at n - k (as MLX).
  auto parted = partition(a, -k, ax, s);
  Shape start(a.ndim(), 0);
  Shape stop = a.shape();
  start[ax] = a.shape(ax) - k;
  return slice(parted, start, stop, s);
}

array topk(const array& a, int k, StreamOrDevice s) {
  return topk(flat(a, s), k, 0, s);
}

}  // namespace mlx::core
