#pragma once
// Hosts on one machine, for tests and benchmarks that need a real network between agents:
// network namespaces, each joined to this (root) namespace by a veth pair and routed through it.
// With a rate, each veth's root end shapes what it sends into its namespace with tbf, so every
// path between two namespaces is a full-duplex link of that rate (one shaped end each way).
// Needs root; a namespace left by a killed run is removed first.
//
// Thread safety: one thread uses an instance.

#include <string>
#include <vector>

#include "harness.h"

namespace ringmaster::testing {

class NamespaceNetwork {
 public:
  // Hosts named `prefix`1..count (namespaces "rm-<prefix>1"..., veths "<prefix>1"/"<prefix>1i"),
  // host i at 10.231.<subnet + i>.2. rate: a tc rate such as "1gbit"; empty for no shaping.
  // False with *why when this machine cannot (no root, no netns, no tc).
  bool create(const std::string& prefix, int count, int subnet, const std::string& rate,
              std::string* why);
  ~NamespaceNetwork();

  // Where host i's agent listens (0-based).
  AgentNetwork host(int i) const;
  // Host i cut off from every other host and from the client (its link down), or back.
  bool setConnected(int i, bool connected, std::string* why = nullptr);
  // What host `from` sends to host `to` dropped at the router (this namespace), or let through
  // again: silence, as a cut cable or a firewall gives, not a refusal. The client, in this
  // namespace, still reaches both. Cut both ways for a split; one way for one-way loss.
  bool setPath(int from, int to, bool open, std::string* why = nullptr);
  // What this namespace (the client) sends to host i dropped, or let through again, while the
  // hosts still reach each other: a client cut off from its cluster (a VPN down, a laptop's
  // Wi-Fi). Locally sent packets are told apart from forwarded ones by the rule's `iif lo`.
  bool setClientPath(int i, bool open, std::string* why = nullptr);
  // The path between hosts i and j alone limited to `rate`, both ways: on each one's root-side
  // veth, what comes from the other goes through a tbf (an htb class chosen by source address).
  // One shaped path per host, on a network created without a rate.
  bool shapePath(int i, int j, const std::string& rate, std::string* why);

 private:
  struct Link {
    std::string netns, outside, inside, outside_ip, inside_ip;
  };
  void remove();

  std::vector<Link> links_;
  std::vector<std::pair<int, int>> cut_;  // (from, to) paths dropped by setPath
  std::vector<int> client_cut_;           // hosts the client's packets to are dropped
  std::string forwarding_;                // ip_forward as it was
};

}  // namespace ringmaster::testing
