#include "tools/bench/serve_runner.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <deque>

#include "tools/bench/progress_bar.hpp"

namespace loom::bench {
namespace {

namespace net = boost::asio;

// A counting semaphore for coroutines on one thread: a waiter parks on a timer that never
// expires by itself; release() hands its slot straight to the first waiter by cancelling it.
class Slots {
 public:
  explicit Slots(size_t count) : free_(count == 0 ? SIZE_MAX : count) {}

  net::awaitable<void> acquire() {
    if (free_ > 0 && waiting_.empty()) {
      --free_;
      co_return;
    }
    net::steady_timer timer(co_await net::this_coro::executor, net::steady_timer::time_point::max());
    waiting_.push_back(&timer);
    boost::system::error_code ec;
    co_await timer.async_wait(net::redirect_error(net::use_awaitable, ec));
  }

  void release() {
    if (waiting_.empty()) {
      ++free_;
      return;
    }
    waiting_.front()->cancel();
    waiting_.pop_front();
  }

 private:
  size_t free_;
  std::deque<net::steady_timer*> waiting_;
};

struct RunState {
  const RunPlan& plan;
  const PromptText& text;
  std::vector<RequestRecord>& records;
  BenchClock::time_point origin;
  Slots slots;
  ProgressBar progress;
};

net::awaitable<void> run_conversation(RunState& state, size_t index, size_t first_record) {
  const Conversation& conversation = state.plan.conversations[index];
  const BenchClock::time_point due =
      state.origin + std::chrono::duration_cast<BenchClock::duration>(
                         std::chrono::duration<double>(state.plan.arrivals[index]));
  // Already due: go straight on, so requests due together queue for slots in their order
  // (timers expiring at the same instant complete in no particular order).
  if (due > BenchClock::now()) {
    net::steady_timer timer(co_await net::this_coro::executor, due);
    boost::system::error_code ec;
    co_await timer.async_wait(net::redirect_error(net::use_awaitable, ec));
  }

  std::vector<std::string> answers;  // one per finished turn
  bool failed = false;
  for (size_t turn = 0; turn < conversation.turns.size(); ++turn) {
    RequestRecord& record = state.records[first_record + turn];
    record.conversation = static_cast<int32_t>(index);
    record.turn = static_cast<int32_t>(turn);
    record.request_class = conversation.request_class;
    if (failed) {  // a conversation cannot go on without the answer it builds on
      record.start = record.end =
          std::chrono::duration<double>(BenchClock::now() - state.origin).count();
      record.error = "not sent: an earlier turn of the conversation failed";
      state.progress.finished(false);
      continue;
    }
    record.client_prompt_tokens =
        client_prompt_tokens(state.plan.body, conversation, turn, answers, state.text);
    std::string body = request_body(state.plan.body, conversation, turn, answers);
    co_await state.slots.acquire();
    co_await stream_request(state.plan.target, state.plan.path, std::move(body), record,
                            state.origin);
    state.slots.release();
    state.progress.finished(record.success);
    failed = !record.success;
    answers.push_back(record.generated_text);
  }
}

}  // namespace

RunResult run_benchmark(const RunPlan& plan, const PromptText& text) {
  RunResult result;
  std::vector<size_t> first_record;  // [conversations]
  size_t total = 0;
  for (const Conversation& c : plan.conversations) {
    first_record.push_back(total);
    total += c.turns.size();
  }
  result.records.resize(total);  // never resized again: coroutines hold references into it
  net::io_context io;
  const BenchClock::time_point origin = BenchClock::now();
  RunState state{plan, text, result.records, origin, Slots(plan.max_concurrency),
                 ProgressBar(total, plan.progress)};
  for (size_t i = 0; i < plan.conversations.size(); ++i) {
    net::co_spawn(io, run_conversation(state, i, first_record[i]), net::detached);
  }
  io.run();
  result.duration_s = std::chrono::duration<double>(BenchClock::now() - origin).count();
  state.progress.close();
  return result;
}

}  // namespace loom::bench
