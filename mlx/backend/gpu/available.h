// Whether this build has a usable GPU. Implemented by exactly one backend.
#pragma once

#include <string>

namespace mlx::core::gpu {

bool is_available();

// Why is_available() is false, and what to do about it ("" when it is true), for the
// error raised when the GPU is asked for.
std::string unavailable_reason();

}  // namespace mlx::core::gpu
