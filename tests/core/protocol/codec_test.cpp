#include "ringmaster/protocol/codec.h"

#include <gtest/gtest.h>

#include <random>

namespace ringmaster::protocol {
namespace {

proto::Envelope sampleLaunch() {
  proto::Envelope envelope;
  envelope.set_request_id(42);
  auto* launch = envelope.mutable_launch_job()->mutable_launch();
  launch->set_job_id("job-1");
  launch->set_attempt(2);
  launch->add_argv("/usr/bin/python3");
  launch->add_argv("train.py");
  auto* env = launch->add_env();
  env->set_name("FOO");
  env->set_value("bar");
  launch->set_world_size(4);
  return envelope;
}

TEST(Codec, RoundTripsEveryField) {
  proto::Envelope original = sampleLaunch();
  std::string frame = encode(original);
  auto decoded = decode(frame.data(), frame.size());
  ASSERT_TRUE(decoded.isOk()) << decoded.status().toString();
  EXPECT_EQ(decoded->version(), kProtocolVersion);
  EXPECT_EQ(decoded->request_id(), 42u);
  EXPECT_EQ(decoded->SerializeAsString(), original.SerializeAsString());
  EXPECT_STREQ(bodyName(*decoded), "launch_job");
}

TEST(Codec, RejectsEveryTruncation) {
  proto::Envelope original = sampleLaunch();
  std::string frame = encode(original);
  for (size_t cut = 0; cut < frame.size(); ++cut) {
    auto decoded = decode(frame.data(), cut);
    EXPECT_FALSE(decoded.isOk()) << "a frame cut to " << cut << " bytes was accepted";
  }
}

TEST(Codec, RejectsOtherVersionsByName) {
  proto::Envelope envelope = sampleLaunch();
  envelope.set_version(2);
  std::string frame = envelope.SerializeAsString();
  auto decoded = decode(frame.data(), frame.size());
  ASSERT_FALSE(decoded.isOk());
  EXPECT_EQ(decoded.status().code(), ErrorCode::kUnsupportedVersion);
  EXPECT_NE(decoded.status().message().find("version 2"), std::string::npos);
}

TEST(Codec, RejectsEmptyAndBodylessFrames) {
  EXPECT_EQ(decode("", 0).status().code(), ErrorCode::kProtocol);
  proto::Envelope bodyless;
  std::string frame = encode(bodyless);
  auto decoded = decode(frame.data(), frame.size());
  ASSERT_FALSE(decoded.isOk());
  EXPECT_NE(decoded.status().message().find("no body"), std::string::npos);
}

TEST(Codec, SurvivesRandomGarbage) {
  std::mt19937 rng(7);
  int accepted = 0;
  for (int i = 0; i < 5000; ++i) {
    std::string garbage(rng() % 300, '\0');
    for (auto& c : garbage) c = static_cast<char>(rng());
    accepted += decode(garbage.data(), garbage.size()).isOk() ? 1 : 0;
  }
  EXPECT_LT(accepted, 50);  // random bytes almost never form a versioned envelope with a body
}

TEST(Codec, ErrorsCarryCodeHostJobAndRank) {
  proto::Envelope envelope = makeError(9, ErrorCode::kNotFound, "no such job", "a1", "j", 3);
  std::string frame = encode(envelope);
  auto decoded = decode(frame.data(), frame.size());
  ASSERT_TRUE(decoded.isOk());
  ASSERT_TRUE(decoded->has_error());
  EXPECT_EQ(decoded->error().rank(), 3);
  EXPECT_EQ(decoded->error().job(), "j");
  Status status = statusFromError(decoded->error());
  EXPECT_EQ(status.code(), ErrorCode::kNotFound);
  EXPECT_EQ(status.message(), "agent 'a1': no such job");
}

}  // namespace
}  // namespace ringmaster::protocol
