// Serial numbers of command buffers. Each command buffer takes the next serial when
// recording begins; memory it used may be reused once every serial up to and including
// its own has completed (the "completed watermark"). One counter for all streams.
//
// Completion is learned from the batch's fence as well as from its stream: a stream that
// nobody polls again (a side stream used once) must not pin the watermark, or every buffer
// freed after it would wait forever for reuse.
#pragma once

#include <cstdint>

#include "mlx/backend/vulkan/loader.h"

namespace mlx::core::vulkan {

class Device;

// Registers a new outstanding serial and returns it (serials start at 1).
uint64_t begin_serial();
// The serial's batch was submitted with `fence`: its signal completes the serial.
void submitted_serial(uint64_t serial, VkDevice device, VkFence fence);
// Marks a serial complete (its command buffer finished, or was never submitted). Must be
// called before the batch's fence is reset for reuse.
void end_serial(uint64_t serial);
// True once the serial's batch has been submitted (or completed).
bool serial_submitted(uint64_t serial);
// True once this one serial's batch has completed (queries its fence; never blocks).
bool serial_completed(uint64_t serial);
// Waits for a submitted serial's batch to complete on its fence (wait_fence: polling, then
// blocking), without any stream's lock (a host read while the eval thread records the next
// graph, mlx/eval_worker.h). False, at once, when the batch is not submitted yet: the
// caller then waits through its stream (CommandEncoder::wait_for).
bool wait_serial_unlocked(const Device& d, uint64_t serial);
// Every serial <= the watermark has completed (checks the fences of the oldest ones).
uint64_t completed_watermark();

}  // namespace mlx::core::vulkan
