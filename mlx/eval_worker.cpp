#include "mlx/eval_worker.h"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

#include "mlx/backend/gpu/available.h"

namespace mlx::core::detail {

namespace {

thread_local bool t_on_worker = false;

std::atomic<bool>& enabled_flag() {
  static std::atomic<bool> on = [] {
    const char* v = std::getenv("MLX_EVAL_THREAD");
    return v == nullptr || std::strcmp(v, "0") != 0;
  }();
  return on;
}

class Worker {
 public:
  Worker() : thread_([this] { loop(); }) {}

  // At exit: the job in progress finishes; queued ones are cancelled (no one is left to read
  // them, and a device's teardown must not race this thread's recording).
  ~Worker() {
    {
      std::lock_guard lk(mtx_);
      stop_ = true;
    }
    work_cv_.notify_all();
    thread_.join();
  }

  uint64_t next() const {
    return submitted_.load(std::memory_order_relaxed) + 1;
  }

  std::exception_ptr queue(std::function<void(bool)> fn) {
    free_returned();
    std::unique_lock lk(mtx_);
    if (failure_) {
      // Not before the failed and cancelled jobs' nodes are unscheduled again: the caller
      // may retry at once, and must then find them unscheduled, not scheduled.
      done_cv_.wait(lk, [&] { return completed_ >= submitted_.load(std::memory_order_relaxed); });
      auto failure = take_failure_locked();
      lk.unlock();
      fn(false);
      return failure;
    }
    uint64_t n = submitted_.load(std::memory_order_relaxed) + 1;
    submitted_.store(n, std::memory_order_relaxed);
    jobs_.push_back({n, std::move(fn)});
    work_cv_.notify_one();
    return nullptr;
  }

  void wait(uint64_t n) {
    free_returned();
    std::unique_lock lk(mtx_);
    done_cv_.wait(lk, [&] { return completed_ >= n; });
    if (failure_ && failed_job_ <= n) {
      std::rethrow_exception(take_failure_locked());
    }
  }

  void drain() {
    free_returned();
    std::unique_lock lk(mtx_);
    done_cv_.wait(lk, [&] { return completed_ >= submitted_.load(std::memory_order_relaxed); });
    if (failure_) {
      std::rethrow_exception(take_failure_locked());
    }
  }

  // Lock-free check for the common case of nothing queued and nothing to report.
  bool idle(uint64_t n) const {
    return completed_.load(std::memory_order_acquire) >= n && !has_failure_.load();
  }

 private:
  struct Job {
    uint64_t n;
    std::function<void(bool)> fn;
  };

  std::exception_ptr take_failure_locked() {
    has_failure_.store(false);
    return std::exchange(failure_, nullptr);
  }

  // Jobs are destroyed by the thread that queued them, which allocated their graphs
  // (array::Remains says why).
  void free_returned() {
    std::vector<std::function<void(bool)>> done;
    {
      std::lock_guard lk(mtx_);
      done.swap(returned_);
    }
  }

  void finish(uint64_t n, std::function<void(bool)> fn) {
    {
      std::lock_guard lk(mtx_);
      returned_.push_back(std::move(fn));
      completed_.store(std::max(completed_.load(), n), std::memory_order_release);
    }
    done_cv_.notify_all();
  }

  void loop() {
    t_on_worker = true;
    for (;;) {
      Job job;
      {
        std::unique_lock lk(mtx_);
        work_cv_.wait(lk, [&] { return stop_ || !jobs_.empty(); });
        if (stop_) {
          break;
        }
        job = std::move(jobs_.front());
        jobs_.pop_front();
      }
      try {
        job.fn(true);
        finish(job.n, std::move(job.fn));
      } catch (...) {
        // Later jobs read this one's results: they are cancelled, and the failure goes to
        // whoever waits, evaluates or queues next. It is recorded before any node goes back
        // to unscheduled, so a caller that sees one finds the failure too.
        std::deque<Job> cancelled;
        {
          std::lock_guard lk(mtx_);
          if (!failure_) {
            failure_ = std::current_exception();
            failed_job_ = job.n;
            has_failure_.store(true);
          }
          cancelled.swap(jobs_);
        }
        // Every node of this job and the cancelled ones is unscheduled again before any of
        // them counts as finished.
        job.fn(false);
        for (auto& c : cancelled) {
          c.fn(false);
        }
        finish(job.n, std::move(job.fn));
        for (auto& c : cancelled) {
          finish(c.n, std::move(c.fn));
        }
      }
    }
    std::deque<Job> left;
    {
      std::lock_guard lk(mtx_);
      left.swap(jobs_);
    }
    for (auto& c : left) {
      c.fn(false);
    }
  }

  std::mutex mtx_;
  std::condition_variable work_cv_, done_cv_;
  std::deque<Job> jobs_;
  std::vector<std::function<void(bool)>> returned_;  // finished, for the queuing thread
  bool stop_ = false;
  std::atomic<uint64_t> submitted_{0};  // written by the queuing thread under mtx_
  std::atomic<uint64_t> completed_{0};  // written under mtx_; read without it by idle()
  std::exception_ptr failure_;
  uint64_t failed_job_ = 0;
  std::atomic<bool> has_failure_{false};
  std::thread thread_;  // last: starts after the members above exist
};

Worker& worker() {
  // The GPU device (if any) is made first, so that at exit this worker, destroyed in reverse
  // order of construction, stops before the device is torn down.
  static Worker* w = [] {
    (void)gpu::is_available();
    static Worker instance;
    return &instance;
  }();
  return *w;
}

std::atomic<bool> g_worker_started{false};

}  // namespace

bool eval_thread_enabled() {
  return enabled_flag().load(std::memory_order_relaxed);
}

void set_eval_thread(bool on) {
  if (!on && g_worker_started.load()) {
    drain_eval_jobs();
  }
  enabled_flag().store(on);
}

bool on_eval_thread() {
  return t_on_worker;
}

uint64_t next_eval_job() {
  g_worker_started.store(true);
  return worker().next();
}

std::exception_ptr queue_eval_job(std::function<void(bool)> job) {
  g_worker_started.store(true);
  return worker().queue(std::move(job));
}

void wait_eval_job(uint64_t n) {
  if (n == 0 || t_on_worker || !g_worker_started.load(std::memory_order_relaxed)) {
    return;
  }
  auto& w = worker();
  if (w.idle(n)) {
    return;
  }
  w.wait(n);
}

void drain_eval_jobs() {
  if (t_on_worker || !g_worker_started.load(std::memory_order_relaxed)) {
    return;
  }
  auto& w = worker();
  if (w.idle(w.next() - 1)) {
    return;
  }
  w.drain();
}

}  // namespace mlx::core::detail
