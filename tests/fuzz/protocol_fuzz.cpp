// Fuzz target for the wire decoder (libFuzzer entry point): one input is one ZeroMQ payload frame
// as an agent or a client receives it. Ordinary ctest runs replay tests/fuzz/corpus/protocol
// through replay_main.cpp; with -DRINGMASTER_FUZZ=ON (clang) it also builds as protocol_fuzz.
// Seeds: tests/fuzz/make_protocol_seeds.sh.
//
// Besides "no crash, no out-of-bounds read", it follows a frame through the pure steps that come
// after decode(): the request id echoed for a frame that does not decode (agent_server.cpp), the
// body's name in logs, an error frame as a Status, the metric patterns of a launch compiled as the
// job supervisor does, the journal records of a batch (the client's journal sync), and a decoded
// envelope encoded again decodes to the same message.

#include <google/protobuf/stubs/logging.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "fuzz_check.h"
#include "ringmaster/metrics/line_parser.h"
#include "ringmaster/protocol/codec.h"

namespace {

namespace proto = ringmaster::proto;
namespace protocol = ringmaster::protocol;

// libprotobuf writes a line to stderr for every string field that is not UTF-8, which would slow
// the fuzzer down to the speed of the terminal; decode() reports such a frame anyway.
[[maybe_unused]] const bool kProtobufQuiet = [] {
  google::protobuf::SetLogHandler(nullptr);
  return true;
}();

// What the job supervisor does with a launch's patterns (agent/src/job_supervisor.cpp).
void compileMetricPatterns(const proto::JobLaunch& launch) {
  std::vector<std::pair<std::string, std::string>> patterns;
  for (const auto& p : launch.metric_patterns()) patterns.emplace_back(p.name(), p.regex());
  auto matcher = ringmaster::metrics::PatternMatcher::compile(patterns);
  if (matcher.isOk()) {
    RM_FUZZ_CHECK(matcher->empty() == patterns.empty());
    (void)matcher->match("step 10 loss=0.5 lr=1e-3");
  } else {
    RM_FUZZ_CHECK(!matcher.status().message().empty());
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // Copy into a buffer of exactly `size` bytes so that ASan catches any read past the end.
  std::vector<uint8_t> frame(data, data + size);
  auto decoded = protocol::decode(frame.data(), frame.size());
  if (!decoded.isOk()) {
    RM_FUZZ_CHECK(!decoded.status().message().empty());
    proto::Envelope partial;  // the agent still echoes the request id when it can
    if (partial.ParseFromArray(frame.data(), static_cast<int>(frame.size()))) {
      (void)partial.request_id();
    }
    return 0;
  }
  proto::Envelope& envelope = *decoded;
  RM_FUZZ_CHECK(envelope.version() == protocol::kProtocolVersion);
  RM_FUZZ_CHECK(envelope.body_case() != proto::Envelope::BODY_NOT_SET);
  RM_FUZZ_CHECK(std::strcmp(protocol::bodyName(envelope), "none") != 0);

  switch (envelope.body_case()) {
    case proto::Envelope::kError:
      RM_FUZZ_CHECK(!protocol::statusFromError(envelope.error()).isOk());
      break;
    case proto::Envelope::kPrepareJob:
      compileMetricPatterns(envelope.prepare_job().launch());
      break;
    case proto::Envelope::kLaunchJob:
      compileMetricPatterns(envelope.launch_job().launch());
      break;
    case proto::Envelope::kJournalBatch:
      for (const std::string& bytes : envelope.journal_batch().records()) {
        proto::JournalRecord record;
        if (record.ParseFromString(bytes)) (void)record.kind_case();
      }
      break;
    default:
      break;
  }

  // Encoding what was decoded gives a frame that decodes to the same message (unknown fields of a
  // newer peer included).
  proto::Envelope copy = envelope;
  const std::string again = protocol::encode(copy);
  auto redecoded = protocol::decode(again.data(), again.size());
  RM_FUZZ_CHECK(redecoded.isOk());
  RM_FUZZ_CHECK(redecoded->request_id() == envelope.request_id());
  RM_FUZZ_CHECK(redecoded->body_case() == envelope.body_case());
  RM_FUZZ_CHECK(protocol::encode(*redecoded) == again);
  return 0;
}
