// Serial numbers of command buffers. Each command buffer takes the next serial when
// recording begins; memory it used may be reused once every serial up to and including
// its own has completed (the "completed watermark"). One counter for all streams.
#pragma once

#include <cstdint>

namespace mlx::core::vulkan {

// Registers a new outstanding serial and returns it (serials start at 1).
uint64_t begin_serial();
// Marks a serial complete (its command buffer finished, or was never submitted).
void end_serial(uint64_t serial);
// Every serial <= the watermark has completed.
uint64_t completed_watermark();

} // namespace mlx::core::vulkan
