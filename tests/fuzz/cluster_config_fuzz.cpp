// Fuzz target for the cluster file parser (libFuzzer entry point): one input is the text of a
// cluster file. Ordinary ctest runs replay tests/fuzz/corpus/cluster_config through
// replay_main.cpp; with -DRINGMASTER_FUZZ=ON (clang) it also builds as cluster_config_fuzz.
//
// Besides "no crash, no exception, no out-of-bounds read", it checks what cluster_config.h
// promises: every accepted agent passes checkAgentEntry() (unique name, tcp://HOST:PORT endpoint
// with a host, valid key), and the text writeClusterFile() would write for them (each value
// double-quoted by yamlDoubleQuoted) parses back to the same agents.

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "fuzz_check.h"
#include "ringmaster/client/cluster_config.h"
#include "ringmaster/util/yaml_quote.h"

namespace {

namespace client = ringmaster::client;

// The text of writeClusterFile(), without the file.
std::string clusterText(const std::vector<client::AgentEndpoint>& agents) {
  std::string text = "agents:";
  text += agents.empty() ? " []\n" : "\n";
  for (const auto& a : agents) {
    text += "  - name: " + ringmaster::yamlDoubleQuoted(a.name) +
            "\n    endpoint: " + ringmaster::yamlDoubleQuoted(a.endpoint) +
            "\n    server_key: " + ringmaster::yamlDoubleQuoted(a.server_key) + "\n";
  }
  return text;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // Copy into a buffer of exactly `size` bytes so that ASan catches any read past the end.
  const std::string input(reinterpret_cast<const char*>(data), size);
  auto agents = client::parseClusterFile(input, "fuzz.yaml");
  if (!agents.isOk()) {
    RM_FUZZ_CHECK(agents.status().message().rfind("fuzz.yaml", 0) == 0);
    return 0;
  }
  std::vector<std::string> names;
  for (const client::AgentEndpoint& agent : *agents) {
    RM_FUZZ_CHECK(client::checkAgentEntry(agent, names).ok());
    RM_FUZZ_CHECK(!client::endpointHost(agent.endpoint).empty());
    names.push_back(agent.name);
  }
  auto again = client::parseClusterFile(clusterText(*agents), "again.yaml");
  RM_FUZZ_CHECK(again.isOk());
  RM_FUZZ_CHECK(again->size() == agents->size());
  for (size_t i = 0; i < agents->size(); ++i) {
    RM_FUZZ_CHECK((*again)[i].name == (*agents)[i].name);
    RM_FUZZ_CHECK((*again)[i].endpoint == (*agents)[i].endpoint);
    RM_FUZZ_CHECK((*again)[i].server_key == (*agents)[i].server_key);
  }
  return 0;
}
