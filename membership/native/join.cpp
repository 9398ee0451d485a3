#include "membership/native/join.hpp"

#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <set>
#include <sstream>
#include <stdexcept>

#include "ringmend/core/log.hpp"

namespace ringmend::membership::native {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

// Joiners' ids: above any rank a launcher gives, random so that joiners of
// one step need not agree on theirs (a member refuses an id taken).
constexpr MemberId kFirstJoinerId = MemberId{1} << 30;

std::vector<PeerRecord> records_in(const std::string& text) {
  std::vector<PeerRecord> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);)
    if (auto r = record_from_text(line)) out.push_back(*r);
  return out;
}

}  // namespace

std::string rendezvous_dir() {
  if (const char* dir = std::getenv("RINGMEND_RENDEZVOUS_DIR"); dir && *dir) return dir;
  const char* job = std::getenv("SLURM_JOB_ID");
  const char* home = std::getenv("HOME");
  if (!job || !*job || !home || !*home) return {};
  return std::string(home) + "/.ringmend/jobs/" + job;
}

void publish_record(const std::string& dir, const PeerRecord& record, std::uint64_t job_key) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  const std::string name = dir + "/" + std::to_string(record.id);
  const std::string temporary = dir + "/." + std::to_string(record.id) + ".tmp";
  {
    std::ofstream out(temporary);
    out << job_key << "\n" << to_text(record) << "\n";
    if (!out) throw std::runtime_error("cannot write the rendezvous record " + temporary);
  }
  fs::rename(temporary, name, ec);
  if (ec) throw std::runtime_error("cannot publish the rendezvous record " + name + ": " + ec.message());
}

std::string record_path(const std::string& dir, MemberId id) { return dir + "/" + std::to_string(id); }

void withdraw_record(const std::string& dir, MemberId id) {
  std::error_code ec;
  fs::remove(record_path(dir, id), ec);
}

std::unique_ptr<Group> join_running_job(const GroupSettings& settings, const std::string& interface,
                                        const std::string& dir, double timeout_seconds) {
  std::vector<PeerRecord> listed;
  std::uint64_t key = 0;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    const std::string name = entry.path().filename().string();
    if (name.empty() || name[0] == '.') continue;
    std::ifstream in(entry.path());
    std::uint64_t their_key = 0;
    std::string line;
    if (!(in >> their_key) || !std::getline(in >> std::ws, line)) continue;
    if (auto r = record_from_text(line)) {
      listed.push_back(*r);
      key = their_key;
    }
  }
  if (listed.empty())
    throw std::runtime_error("no running job to join: no record in " + dir +
                             (ec ? " (" + ec.message() + ")" : std::string()) +
                             " (RINGMEND_RENDEZVOUS_DIR, else ~/.ringmend/jobs/<SLURM_JOB_ID>)");
  std::mt19937_64 random(std::random_device{}());
  const MemberId id = kFirstJoinerId + static_cast<MemberId>(random() % (kFirstJoinerId - 1));
  auto net = std::make_unique<ControlNet>(key, id, control_ip(interface));
  const PeerRecord me{id, net->address(), node_name(), static_cast<int>(::getpid())};
  Frame join;
  join.kind = FrameKind::Join;
  join.from = id;
  join.payload = to_text(me);
  std::set<MemberId> asked, lost;
  const auto ask = [&](const PeerRecord& r) {
    if (r.id == id || !asked.insert(r.id).second) return;
    net->add_peer(r.id, r.address);
    net->send(r.id, join);
  };
  for (const PeerRecord& r : listed) ask(r);
  // Frames of the view that admits this process may come before the
  // WELCOME that says so (another member's all-gather): kept for the group.
  std::vector<Frame> early;
  const auto deadline = Clock::now() + std::chrono::duration<double>(timeout_seconds);
  while (Clock::now() < deadline) {
    std::vector<pollfd> fds;
    net->pollfds(fds);
    ::poll(fds.data(), fds.size(), 50);
    ControlNet::Events events;
    net->handle(fds, events);
    lost.insert(events.lost.begin(), events.lost.end());
    for (std::size_t i = 0; i < events.frames.size(); ++i) {
      Frame& f = events.frames[i];
      if (f.kind != FrameKind::Welcome) {
        if (f.kind == FrameKind::Gather || f.kind == FrameKind::Exchange || f.kind == FrameKind::Protocol)
          early.push_back(std::move(f));
        continue;
      }
      std::vector<PeerRecord> view = records_in(f.payload);
      const bool admitted =
          std::any_of(view.begin(), view.end(), [&](const PeerRecord& r) { return r.id == id; });
      if (!admitted) {
        for (const PeerRecord& r : view) ask(r);  // the members of now, not only those listed
        continue;
      }
      log(LogLevel::Info, "native membership: joined the job as process " + std::to_string(id) + " in view " +
                              std::to_string(f.epoch));
      auto group = std::make_unique<Group>(std::move(net), std::move(view), settings, f.epoch);
      // What came after the WELCOME in the same read is the group's too.
      for (std::size_t k = i + 1; k < events.frames.size(); ++k) early.push_back(std::move(events.frames[k]));
      std::erase_if(early, [&](const Frame& e) { return e.epoch < f.epoch || e.kind == FrameKind::Welcome; });
      group->deliver_frames(std::move(early));
      return group;
    }
    if (!asked.empty() && lost.size() >= asked.size())
      throw std::runtime_error("no process of the job in " + dir + " could be reached (" +
                               std::to_string(asked.size()) + " asked)");
  }
  throw std::runtime_error("no view of the job admitted this process within " +
                           seconds_text(timeout_seconds));
}

}  // namespace ringmend::membership::native
