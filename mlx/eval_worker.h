// The thread that runs async_eval's graphs (docs/eval.md).
//
// async_eval marks a graph's nodes scheduled on the caller's thread and hands the graph
// here; this thread records it (eval_gpu, eval_cpu, submission) while the caller builds its
// next graph. A decode loop then costs max(build, record, device) per token, not build +
// record. Jobs run one at a time, in the order they were queued, which keeps the order of
// submissions on the device's queue the order the caller asked for.
//
// Ownership: a node marked scheduled belongs to this thread until its status changes
// (its primitive, inputs, siblings and data). Other threads read only its shape, dtype and
// status; to read more they wait for its job (array::wait) or for every job (drain, which
// eval, synchronize and clear_streams call).
#pragma once

#include <cstdint>
#include <exception>
#include <functional>

namespace mlx::core::detail {

// Whether async_eval hands graphs to the worker: MLX_EVAL_THREAD (on unless "0") at start,
// then set_eval_thread. Off, async_eval records on the caller's thread as eval does.
bool eval_thread_enabled();
void set_eval_thread(bool on);

// True on the worker thread itself (its jobs must not wait for themselves).
bool on_eval_thread();

// The number the next queued job will get (1, 2, ...). Only the thread that queues reads it
// between marking a graph and queuing it.
uint64_t next_eval_job();

// Queues `job`, the job numbered next_eval_job(). The worker calls job(true) to run it, and
// job(false) to cancel what did not run (it must then undo its marks, and not throw) after
// job(true) threw, or instead of running it when an earlier job failed. When an earlier job
// failed and the caller has not been given that failure yet, cancels `job` at once instead
// and returns the failure.
std::exception_ptr queue_eval_job(std::function<void(bool)> job);

// Waits until job `n` has run or been cancelled (not for later jobs); no-op for 0, for a
// finished job, and on the worker. Rethrows a failure no one has been given yet.
void wait_eval_job(uint64_t n);

// Waits until every queued job has run; rethrows a failure no one has been given yet.
// No-op on the worker.
void drain_eval_jobs();

}  // namespace mlx::core::detail
