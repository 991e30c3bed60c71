#include "gang_ledger.h"

#include <sys/stat.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "durable_file.h"

namespace ringmaster::agent {
namespace {

// A line of counts, then the launch as protobuf bytes. The counts are not in the wire schema:
// they are this agent's own bookkeeping.
constexpr const char* kMagic = "ringmaster-gang 1";

std::string header(const SavedGang& gang) {
  std::ostringstream out;
  out << kMagic << " first_attempt=" << gang.first_attempt
      << " original_agents=" << gang.original_agents
      << " uncounted_restarts=" << gang.uncounted_restarts << " stopping=" << gang.stopping
      << " stopped_cleanly=" << gang.stopped_cleanly << "\n";
  return out.str();
}

Result<SavedGang> parse(const std::string& text) {
  const size_t end = text.find('\n');
  if (end == std::string::npos || text.rfind(kMagic, 0) != 0) {
    return invalidArgument("not a saved gang (no '" + std::string(kMagic) + "' line)");
  }
  SavedGang gang;
  const size_t counts = std::string(kMagic).size();
  std::istringstream fields(text.substr(counts, end - counts));
  std::string field;
  while (fields >> field) {
    const size_t eq = field.find('=');
    if (eq == std::string::npos) continue;
    const std::string key = field.substr(0, eq);
    const long value = std::strtol(field.c_str() + eq + 1, nullptr, 10);
    if (key == "first_attempt") gang.first_attempt = static_cast<uint32_t>(value);
    if (key == "original_agents") gang.original_agents = static_cast<int>(value);
    if (key == "uncounted_restarts") gang.uncounted_restarts = static_cast<uint32_t>(value);
    if (key == "stopping") gang.stopping = value != 0;
    if (key == "stopped_cleanly") gang.stopped_cleanly = value != 0;
  }
  if (!gang.launch.ParseFromString(text.substr(end + 1)) || gang.launch.job_id().empty()) {
    return invalidArgument("its launch does not parse");
  }
  return gang;
}

}  // namespace

GangLedger::GangLedger(std::string dir) : dir_(std::move(dir)) {
  if (dir_.empty()) return;
  std::error_code ec;
  std::filesystem::create_directories(dir_, ec);
  ::chmod(dir_.c_str(), 0700);
}

Status GangLedger::save(const SavedGang& gang) {
  if (dir_.empty()) return Status::ok();
  std::string bytes;
  gang.launch.SerializeToString(&bytes);
  return writeFileDurably(pathOf(gang.launch.job_id()), header(gang) + bytes);
}

void GangLedger::remove(const std::string& job_id) {
  if (dir_.empty()) return;
  std::error_code ec;
  std::filesystem::remove(pathOf(job_id), ec);
}

std::vector<SavedGang> GangLedger::load(const std::function<void(const std::string&)>& log) const {
  std::vector<SavedGang> gangs;
  if (dir_.empty()) return gangs;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(dir_, ec)) {
    const std::string path = entry.path().string();
    if (entry.path().extension() == ".tmp") {  // a write the agent did not finish
      std::filesystem::remove(path, ec);
      continue;
    }
    std::ifstream in(path, std::ios::binary);
    std::stringstream content;
    content << in.rdbuf();
    Result<SavedGang> gang = parse(content.str());
    if (!gang.isOk() || gang->launch.job_id() != entry.path().filename().string()) {
      log("forgot the saved gang " + path + ": " +
          (gang.isOk() ? "it names another job" : gang.status().message()));
      std::filesystem::remove(path, ec);
      continue;
    }
    gangs.push_back(std::move(*gang));
  }
  std::sort(gangs.begin(), gangs.end(), [](const SavedGang& a, const SavedGang& b) {
    return a.launch.attempt() < b.launch.attempt();
  });
  return gangs;
}

}  // namespace ringmaster::agent
