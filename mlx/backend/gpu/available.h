// Whether this build has a usable GPU. Implemented by exactly one backend.
#pragma once

namespace mlx::core::gpu {

bool is_available();

} // namespace mlx::core::gpu
