#include "runtime/request.hpp"

#include <utility>

namespace ringmend {

void Request::State::complete(CollectiveResult r, std::exception_ptr e) {
  std::vector<std::function<void()>> then;
  {
    std::lock_guard lock(mutex);
    result = std::move(r);
    error = std::move(e);
    done = true;
    then.swap(on_complete);
  }
  completed.notify_all();
  for (auto& fn : then) fn();
}

CollectiveResult Request::wait() const {
  if (!state_) return {};
  std::unique_lock lock(state_->mutex);
  state_->completed.wait(lock, [this] { return state_->done; });
  if (state_->error) std::rethrow_exception(state_->error);
  return state_->result;
}

bool Request::test() const {
  if (!state_) return true;
  std::lock_guard lock(state_->mutex);
  return state_->done;
}

void Request::on_complete(std::function<void()> fn) const {
  if (state_) {
    std::unique_lock lock(state_->mutex);
    if (!state_->done) {
      state_->on_complete.push_back(std::move(fn));
      return;
    }
  }
  fn();
}

}  // namespace ringmend
