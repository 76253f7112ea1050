// Streams order work on a device; every primitive belongs to one.
#pragma once

#include <ostream>
#include <variant>

#include "mlx/device.h"

namespace mlx::core {

struct Stream {
  int index;
  Device device;
  explicit Stream(int index, Device device) : index(index), device(device) {}
};

Stream default_stream(Device d);
void set_default_stream(Stream s);
Stream new_stream(Device d);

// Blocks until all work submitted to the stream (or the default GPU stream) is done.
void synchronize();
void synchronize(Stream s);

// MLX destroys the calling thread's streams here. Streams are process-wide in this library,
// so this waits for every stream's work and keeps the streams.
void clear_streams();

inline bool operator==(const Stream& lhs, const Stream& rhs) {
  return lhs.index == rhs.index;
}
inline bool operator!=(const Stream& lhs, const Stream& rhs) {
  return !(lhs == rhs);
}

std::ostream& operator<<(std::ostream& os, const Device& d);
std::ostream& operator<<(std::ostream& os, const Stream& s);

// Every op takes `StreamOrDevice s = {}`: nothing, a device (its default stream) or a stream.
using StreamOrDevice = std::variant<std::monostate, Stream, Device>;
Stream to_stream(StreamOrDevice s);
Stream to_stream(StreamOrDevice s, Device default_);

}  // namespace mlx::core
