#include "ringmaster/slurm/job_dir.h"

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace ringmaster::slurm {
namespace {

// "prefix<digits>" -> the number; -1 for anything else.
long numberAfter(const std::string& name, const std::string& prefix) {
  if (name.rfind(prefix, 0) != 0 || name.size() == prefix.size() || name.size() > prefix.size() + 9)
    return -1;
  const std::string digits = name.substr(prefix.size());
  if (digits.find_first_not_of("0123456789") != std::string::npos) return -1;
  return std::strtol(digits.c_str(), nullptr, 10);
}

// The numbers N of the directories <prefix>N in `dir`, ascending.
std::vector<int> numberedDirs(const std::string& dir, const std::string& prefix) {
  std::vector<int> found;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
    const long number = numberAfter(entry.path().filename().string(), prefix);
    if (number >= 0 && entry.is_directory(ec)) found.push_back(static_cast<int>(number));
  }
  std::sort(found.begin(), found.end());
  return found;
}

}  // namespace

std::vector<int> JobDir::runs() const { return numberedDirs(root, "run-"); }
std::vector<int> JobDir::nodes(int run) const { return numberedDirs(runDir(run), "node-"); }

Status writeNodeAddress(const std::string& path, const NodeAddress& address) {
  const std::string temporary = path + ".tmp";
  {
    std::ofstream out(temporary, std::ios::trunc);
    out << "node " << address.node << "\nagent " << address.agent << "\nendpoint "
        << address.endpoint << "\nhost " << address.host << "\nmaster_port " << address.master_port
        << "\nattempt " << address.attempt << "\n";
    out.flush();
    if (!out) return ioError("cannot write " + temporary);
  }
  if (std::rename(temporary.c_str(), path.c_str()) != 0) {
    return ioError("cannot rename " + temporary + " to " + path);
  }
  return Status::ok();
}

Result<NodeAddress> readNodeAddress(const std::string& path) {
  std::ifstream in(path);
  if (!in) return notFound("no " + path);
  NodeAddress address;
  std::string line;
  bool has_endpoint = false;
  while (std::getline(in, line)) {
    const size_t space = line.find(' ');
    if (space == std::string::npos) continue;
    const std::string key = line.substr(0, space);
    const std::string value = line.substr(space + 1);
    if (key == "node") address.node = std::atoi(value.c_str());
    if (key == "agent") address.agent = value;
    if (key == "endpoint") has_endpoint = !(address.endpoint = value).empty();
    if (key == "host") address.host = value;
    if (key == "master_port") address.master_port = std::strtoul(value.c_str(), nullptr, 10);
    if (key == "attempt") address.attempt = std::strtoul(value.c_str(), nullptr, 10);
  }
  if (!has_endpoint || address.agent.empty())
    return invalidArgument(path + ": no agent or endpoint");
  return address;
}

uint32_t newestAttempt(const JobDir& dir, const std::string& job_id) {
  long newest = 0;
  for (int run : dir.runs()) {
    for (int node : dir.nodes(run)) {
      for (int attempt : numberedDirs(dir.nodeDir(run, node) + "/jobs/" + job_id, "attempt-")) {
        newest = std::max<long>(newest, attempt);
      }
    }
  }
  return static_cast<uint32_t>(newest);
}

}  // namespace ringmaster::slurm
