#include "namespace_network.h"

#include <unistd.h>

#include <algorithm>

namespace ringmaster::testing {
namespace {

constexpr const char* kIp = "/usr/sbin/ip";  // iproute2, in Debian's base system
constexpr const char* kTc = "/usr/sbin/tc";
constexpr const char* kForwarding = "/proc/sys/net/ipv4/ip_forward";

bool run(std::vector<std::string> args, std::string* why) {
  auto result = runCommand(args);
  if (result.exit_code == 0) return true;
  if (why) *why = args[0] + " " + args[1] + " " + args[2] + " ...: " + result.err;
  return false;
}

}  // namespace

bool NamespaceNetwork::create(const std::string& prefix, int count, int subnet,
                              const std::string& rate, std::string* why) {
  if (::geteuid() != 0) {
    *why = "network namespaces need root";
    return false;
  }
  for (int i = 1; i <= count; ++i) {
    const std::string net = "10.231." + std::to_string(subnet + i) + ".";
    links_.push_back({"rm-" + prefix + std::to_string(i), prefix + std::to_string(i),
                      prefix + std::to_string(i) + "i", net + "1", net + "2"});
  }
  remove();  // what a killed run left behind
  forwarding_ = readFile(kForwarding);
  for (const Link& l : links_) {
    const bool made =
        run({kIp, "netns", "add", l.netns}, why) &&
        run({kIp, "link", "add", l.outside, "type", "veth", "peer", "name", l.inside}, why) &&
        run({kIp, "link", "set", l.inside, "netns", l.netns}, why) &&
        run({kIp, "addr", "add", l.outside_ip + "/24", "dev", l.outside}, why) &&
        run({kIp, "link", "set", l.outside, "up"}, why) &&
        run({kIp, "-n", l.netns, "addr", "add", l.inside_ip + "/24", "dev", l.inside}, why) &&
        run({kIp, "-n", l.netns, "link", "set", l.inside, "up"}, why) &&
        run({kIp, "-n", l.netns, "link", "set", "lo", "up"}, why) &&
        run({kIp, "-n", l.netns, "route", "add", "default", "via", l.outside_ip}, why) &&
        // Bursts of 1 ms at the rate, and at most 20 ms of queue: a switch port, not a bufferbloat.
        (rate.empty() || run({kTc, "qdisc", "add", "dev", l.outside, "root", "tbf", "rate", rate,
                              "burst", "256kb", "latency", "20ms"},
                             why));
    if (!made) return false;
  }
  writeFile(kForwarding, "1\n");
  return true;
}

NamespaceNetwork::~NamespaceNetwork() {
  remove();
  if (!forwarding_.empty()) writeFile(kForwarding, forwarding_);
}

void NamespaceNetwork::remove() {
  const std::vector<std::pair<int, int>> cut = cut_;  // setPath shortens cut_
  for (const auto& [from, to] : cut) setPath(from, to, true);
  const std::vector<int> client_cut = client_cut_;
  for (int i : client_cut) setClientPath(i, true);
  for (const Link& l : links_) {  // deleting one end of a veth pair deletes both
    runCommand({kIp, "link", "delete", l.outside});
    runCommand({kIp, "netns", "delete", l.netns});
  }
}

AgentNetwork NamespaceNetwork::host(int i) const { return {links_[i].netns, links_[i].inside_ip}; }

bool NamespaceNetwork::setConnected(int i, bool connected, std::string* why) {
  return run({kIp, "link", "set", links_[i].outside, connected ? "up" : "down"}, why);
}

// A policy rule of the router's: forwarded packets that match a blackhole rule vanish without
// an ICMP answer (a TCP connect times out, as across a dead switch).
bool NamespaceNetwork::setPath(int from, int to, bool open, std::string* why) {
  const std::pair<int, int> path{from, to};
  const auto at = std::find(cut_.begin(), cut_.end(), path);
  if (open == (at == cut_.end())) return true;
  const bool done =
      run({kIp, "rule", open ? "del" : "add", "from",
           links_[static_cast<size_t>(from)].inside_ip + "/32", "to",
           links_[static_cast<size_t>(to)].inside_ip + "/32", "blackhole", "priority", "1000"},
          why);
  if (done && open) cut_.erase(at);
  if (done && !open) cut_.push_back(path);
  return done;
}

bool NamespaceNetwork::setClientPath(int i, bool open, std::string* why) {
  const auto at = std::find(client_cut_.begin(), client_cut_.end(), i);
  if (open == (at == client_cut_.end())) return true;
  const bool done =
      run({kIp, "rule", open ? "del" : "add", "iif", "lo", "to",
           links_[static_cast<size_t>(i)].inside_ip + "/32", "blackhole", "priority", "1000"},
          why);
  if (done && open) client_cut_.erase(at);
  if (done && !open) client_cut_.push_back(i);
  return done;
}

bool NamespaceNetwork::shapePath(int i, int j, const std::string& rate, std::string* why) {
  // htb only sorts (prio and its kin are not in every kernel here); the tbf does the shaping.
  for (const auto& [to, from] : {std::pair{i, j}, std::pair{j, i}}) {
    const std::string& dev = links_[static_cast<size_t>(to)].outside;
    const std::string source = links_[static_cast<size_t>(from)].inside_ip + "/32";
    const bool shaped =
        run({kTc, "qdisc", "add", "dev", dev, "root", "handle", "1:", "htb", "default", "10"},
            why) &&
        run({kTc, "class", "add", "dev", dev, "parent", "1:", "classid", "1:10", "htb", "rate",
             "40gbit", "quantum", "60000"},
            why) &&
        run({kTc, "class", "add", "dev", dev, "parent", "1:", "classid", "1:20", "htb", "rate",
             "40gbit", "quantum", "60000"},
            why) &&
        run({kTc, "qdisc", "add", "dev", dev, "parent", "1:20", "handle", "20:", "tbf", "rate",
             rate, "burst", "64kb", "latency", "50ms"},
            why) &&
        run({kTc, "filter", "add", "dev", dev, "parent", "1:", "protocol", "ip", "prio", "1", "u32",
             "match", "ip", "src", source, "flowid", "1:20"},
            why);
    if (!shaped) return false;
  }
  return true;
}

}  // namespace ringmaster::testing
