// A simulated CUDA stream: a FIFO of host-side operations run by one worker thread in submission
// order.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <vector>

namespace vramshim::fakecuda {

class Stream;

// A point in a stream's order: reached once the stream has completed its first `seq` operations.
struct Position {
  std::shared_ptr<Stream> stream;
  uint64_t seq = 0;
  bool reached() const;
  void wait() const;
};

enum class StreamKind { Legacy, Blocking, NonBlocking, PerThread };

// Blocking streams and the per-thread default streams are ordered against the legacy stream both
// ways ("the per-thread default stream is not a non-blocking stream and will synchronize with the
// legacy default stream"); non-blocking streams are not.
inline bool synchronizesWithLegacy(StreamKind kind) {
  return kind == StreamKind::Blocking || kind == StreamKind::PerThread;
}

class Stream : public std::enable_shared_from_this<Stream> {
 public:
  Stream(struct Context* ctx, StreamKind kind) : ctx_(ctx), kind_(kind) {}

  // Queues `op` to run once every earlier operation of this stream and every position in `after`
  // has been reached. Returns the position just after `op`.
  Position enqueue(std::vector<Position> after, std::function<void()> op);
  // The position after everything queued so far.
  Position tail();
  bool idle();
  // Lets the worker exit once the queue is drained (the stream was destroyed).
  void close();

  struct Context* context() const {
    return ctx_;
  }
  StreamKind kind() const { return kind_; }

  // Process exit: workers stop taking operations and every waiter returns; waits at most `limit_ms`
  // for the workers to finish what they are running.
  static void shutdownAll(int limit_ms);

 private:
  friend struct Position;
  struct Operation {
    uint64_t seq;
    std::vector<Position> after;
    std::function<void()> run;
  };

  void work();
  void notifyAll();

  struct Context* const ctx_;
  const StreamKind kind_;

  std::mutex mu_;
  std::condition_variable cv_;  // signals new operations, completions and shutdown
  std::deque<Operation> queue_;
  uint64_t submitted_ = 0;
  uint64_t completed_ = 0;
  bool worker_running_ = false;
  bool closed_ = false;
};

}  // namespace vramshim::fakecuda
