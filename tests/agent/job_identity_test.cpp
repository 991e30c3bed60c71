// JobIdentities, the per-job uids of --job-uids: the range is parsed strictly, uids are given
// out round robin and never to two running jobs, and a uid whose files could not be taken back
// (quarantined) is never given out again. take() and release() signal the uid's processes, which
// needs root: those cases skip without it.
#include "job_identity.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>

namespace ringmaster::agent {
namespace {

TEST(UidRange, IsParsedStrictly) {
  auto range = parseUidRange("1800000000-1800000009");
  ASSERT_TRUE(range.isOk()) << range.status().message();
  EXPECT_EQ(range->first, 1800000000u);
  EXPECT_EQ(range->last, 1800000009u);
  for (const char* bad : {"", "5", "0-10", "10-5", "1-x", "-3", "1--3"}) {
    EXPECT_FALSE(parseUidRange(bad).isOk()) << bad;
  }
}

class JobIdentitiesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (::geteuid() != 0) GTEST_SKIP() << "giving out uids signals them: needs root";
  }
};

TEST_F(JobIdentitiesTest, AQuarantinedUidIsNeverGivenOut) {
  JobIdentities identities({1800000100, 1800000102}, RankConfinement{});
  identities.quarantine(1800000101);
  auto a = identities.take("a", "/tmp");
  auto b = identities.take("b", "/tmp");
  ASSERT_TRUE(a.isOk() && b.isOk());
  EXPECT_EQ(a->uid, 1800000100u);
  EXPECT_EQ(b->uid, 1800000102u);
  EXPECT_EQ(identities.take("a", "/tmp")->uid, 1800000100u);  // a job keeps its uid
  auto c = identities.take("c", "/tmp");
  ASSERT_FALSE(c.isOk());
  EXPECT_EQ(c.status().code(), ErrorCode::kResourceExhausted);
  ASSERT_TRUE(identities.release("a").isOk());
  EXPECT_EQ(identities.take("c", "/tmp")->uid, 1800000100u);  // not the quarantined one
}

TEST_F(JobIdentitiesTest, ReleaseGivesTheJobsDirectoriesBackToTheAgent) {
  const std::string dir = std::filesystem::temp_directory_path() / "rm_identity_release";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir + "/work/deep");
  JobIdentities identities({1800000200, 1800000200}, RankConfinement{});
  auto a = identities.take("a", dir);
  ASSERT_TRUE(a.isOk());
  ASSERT_TRUE(chownTree(dir + "/work", a->uid, a->gid).isOk());
  ASSERT_TRUE(identities.release("a", {dir + "/work", dir + "/not-there"}).isOk());
  struct stat st {};
  ASSERT_EQ(::lstat((dir + "/work/deep").c_str(), &st), 0);
  EXPECT_EQ(st.st_uid, ::geteuid());
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace ringmaster::agent
