#include "tests/fakecuda/stream.h"

#include <atomic>
#include <chrono>
#include <new>
#include <set>
#include <thread>

#include "tests/fakecuda/simulated_delay.h"

namespace vramshim::fakecuda {
namespace {

std::atomic<bool> g_shutting_down{false};

// Streams whose worker is running. Never destroyed: workers may still run while the process
// exits. Made in static storage, not on the heap: the exit handler may be the first to ask, in a
// program that called exit() from a signal handler that interrupted malloc.
struct Workers {
  std::mutex mu;
  std::condition_variable all_done;
  std::set<Stream*> running;
};
Workers& workers() {
  alignas(Workers) static unsigned char storage[sizeof(Workers)];
  static Workers* w = new (storage) Workers;
  return *w;
}

}  // namespace

bool Position::reached() const {
  if (!stream) return true;
  std::lock_guard<std::mutex> lock(stream->mu_);
  return stream->completed_ >= seq;
}

void Position::wait() const {
  if (!stream) return;
  std::unique_lock<std::mutex> lock(stream->mu_);
  stream->cv_.wait(lock, [&] { return stream->completed_ >= seq || g_shutting_down.load(); });
}

Position Stream::enqueue(std::vector<Position> after, std::function<void()> op) {
  std::unique_lock<std::mutex> lock(mu_);
  if (!op && after.empty() && completed_ == submitted_ &&
      g_op_delay_us.load(std::memory_order_relaxed) == 0) {
    // An event recorded on an idle stream is complete at once, as on a device: no worker wakes up,
    // so the shim's benchmarks time the shim rather than a futex and a context switch.
    completed_ = ++submitted_;
    return Position{shared_from_this(), completed_};
  }
  const uint64_t seq = ++submitted_;
  queue_.push_back(Operation{seq, std::move(after), std::move(op)});
  const bool start_worker = !worker_running_ && !g_shutting_down.load();
  if (start_worker) worker_running_ = true;
  cv_.notify_all();
  lock.unlock();
  // The worker starts on first use; registering it outside mu_ keeps the lock order workers().mu ->
  // mu_.
  if (start_worker) {
    {
      std::lock_guard<std::mutex> wl(workers().mu);
      workers().running.insert(this);
    }
    std::thread([self = shared_from_this()] { self->work(); }).detach();
  }
  return Position{shared_from_this(), seq};
}

Position Stream::tail() {
  std::lock_guard<std::mutex> lock(mu_);
  return Position{shared_from_this(), submitted_};
}

bool Stream::idle() {
  std::lock_guard<std::mutex> lock(mu_);
  return completed_ == submitted_;
}

void Stream::close() {
  std::lock_guard<std::mutex> lock(mu_);
  closed_ = true;
  cv_.notify_all();
}

void Stream::work() {
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    cv_.wait(lock, [&] { return !queue_.empty() || closed_ || g_shutting_down.load(); });
    if (g_shutting_down.load() || queue_.empty()) break;
    Operation op = std::move(queue_.front());
    queue_.pop_front();
    lock.unlock();
    for (const Position& p : op.after) p.wait();
    if (!g_shutting_down.load()) {
      delayMicros(g_op_delay_us.load(std::memory_order_relaxed));
      if (op.run) op.run();
    }
    op.after.clear();  // drop references to other streams outside our lock
    lock.lock();
    completed_ = op.seq;
    cv_.notify_all();
  }
  worker_running_ = false;
  lock.unlock();
  std::lock_guard<std::mutex> wl(workers().mu);
  workers().running.erase(this);
  workers().all_done.notify_all();
}

void Stream::notifyAll() {
  std::lock_guard<std::mutex> lock(mu_);
  cv_.notify_all();
}

void Stream::shutdownAll(int limit_ms) {
  g_shutting_down.store(true);
  Workers& w = workers();
  std::unique_lock<std::mutex> lock(w.mu);
  for (Stream* s : w.running) s->notifyAll();
  w.all_done.wait_for(lock, std::chrono::milliseconds(limit_ms), [&] { return w.running.empty(); });
}

}  // namespace vramshim::fakecuda
