# The heap allocator of every program that links `mlx` (docs/performance.md, "The heap
# allocator"). A decode step builds and tears down ~1000 small graph nodes (shapes, strides,
# primitives, input lists): glibc's malloc spends ~40% of the host's instructions on them,
# most in its slow paths, and on an H100 machine decode followed the host. jemalloc halves
# that and is a Debian package (libjemalloc-dev).
#
# MLX_MALLOC=jemalloc (default) links the shared libjemalloc into every executable that links
# mlx: shared, so that malloc and free are one allocator for every library of the process,
# including libvulkan and the drivers it loads with dlopen. MLX_MALLOC=system keeps glibc's.
# Sanitizer builds keep glibc's too: ASan and TSan replace malloc themselves.
set(MLX_MALLOC "jemalloc" CACHE STRING "Heap allocator linked into programs that link mlx: jemalloc or system")
set_property(CACHE MLX_MALLOC PROPERTY STRINGS jemalloc system)

set(MLX_MALLOC_IN_USE system)
if(MLX_MALLOC STREQUAL "jemalloc")
  if(CMAKE_CXX_FLAGS MATCHES "-fsanitize=(address|thread|memory)")
    message(STATUS "mlx: sanitizer build, keeping the system malloc")
  else()
    find_library(MLX_JEMALLOC_LIBRARY NAMES jemalloc)
    if(MLX_JEMALLOC_LIBRARY)
      # Executables only: a shared library that links mlx (a plugin, a Python module) is
      # loaded into a process that already chose its allocator, and a jemalloc loaded then
      # would either go unused or fail to find room for its thread-local state.
      # --no-as-needed: nothing names a jemalloc-only symbol, and a linker that drops unused
      # libraries would drop it (malloc resolves from libc just as well).
      set(mlx_exe "$<STREQUAL:$<TARGET_PROPERTY:TYPE>,EXECUTABLE>")
      target_link_libraries(mlx INTERFACE "$<${mlx_exe}:-Wl,--push-state,--no-as-needed>"
                            "$<${mlx_exe}:${MLX_JEMALLOC_LIBRARY}>" "$<${mlx_exe}:-Wl,--pop-state>")
      set(MLX_MALLOC_IN_USE jemalloc)
    else()
      message(WARNING "mlx: MLX_MALLOC=jemalloc but libjemalloc was not found "
                      "(apt-get install libjemalloc-dev); keeping the system malloc")
    endif()
  endif()
elseif(NOT MLX_MALLOC STREQUAL "system")
  message(FATAL_ERROR "mlx: MLX_MALLOC must be jemalloc or system, got '${MLX_MALLOC}'")
endif()
message(STATUS "mlx: heap allocator ${MLX_MALLOC_IN_USE}")
