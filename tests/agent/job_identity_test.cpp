// JobIdentities, the per-job uids of --job-uids, with real processes and files as root: the range
// is parsed strictly; a uid carries nothing of its last job to the next (processes, files in
// /tmp and /dev/shm, job directories), across an agent restart too (the ledger); a uid some
// other process of the host uses is never given out and that process is never touched; two
// agents sharing a range never give out the same uid; a quarantined uid is never given out.
#include "job_identity.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "uid_cleanup.h"

namespace ringmaster::agent {
namespace {

namespace fs = std::filesystem;

TEST(UidRange, IsParsedStrictly) {
  auto range = parseUidRange("1800000000-1800000009");
  ASSERT_TRUE(range.isOk()) << range.status().message();
  EXPECT_EQ(range->first, 1800000000u);
  EXPECT_EQ(range->last, 1800000009u);
  for (const char* bad : {"", "5", "0-10", "10-5", "1-x", "-3", "1--3"}) {
    EXPECT_FALSE(parseUidRange(bad).isOk()) << bad;
  }
}

// A range is refused when the host's own users could be in it: below 65536, or holding any user
// or group of passwd and group; the error names it and the way out.
TEST(UidRange, OneThatHoldsAUserOrGroupOfTheHostIsRefused) {
  const std::vector<HostId> users = {{"root", 0}, {"alice", 1000}, {"svc", 1879050000}};
  const std::vector<HostId> groups = {{"root", 0}, {"gpu", 1879100000}};
  EXPECT_TRUE(checkUidRangeIsFree({1879048192, 1879049999}, users, groups).isOk());
  const Status low = checkUidRangeIsFree({61184, 65519}, users, groups);
  EXPECT_FALSE(low.isOk());
  EXPECT_NE(low.message().find("DynamicUser"), std::string::npos) << low.message();
  EXPECT_NE(low.message().find(kDefaultJobUids), std::string::npos) << low.message();
  const Status user = checkUidRangeIsFree({1879048192, 1879113727}, users, groups);
  EXPECT_NE(user.message().find("user svc (1879050000)"), std::string::npos) << user.message();
  const Status group = checkUidRangeIsFree({1879090000, 1879113727}, users, groups);
  EXPECT_NE(group.message().find("group gpu (1879100000)"), std::string::npos) << group.message();
  // This host's own passwd and group: root is there, and the default range is free.
  const std::vector<HostId> host_users = hostUsers();
  EXPECT_TRUE(std::any_of(host_users.begin(), host_users.end(),
                          [](const HostId& u) { return u.name == "root" && u.id == 0; }));
  EXPECT_TRUE(
      checkUidRangeIsFree(*parseUidRange(kDefaultJobUids), host_users, hostGroups()).isOk());
}

// A process running as `uid` (as a user of the host would start one), until killed; returns
// once it runs as `uid`. It holds none of the test's files open (a rank execs, and so holds none
// of the agent's).
pid_t sleeperAs(uid_t uid) {
  int ready[2];
  if (::pipe(ready) != 0) return -1;
  const pid_t pid = ::fork();
  if (pid == 0) {
    for (int fd = 3; fd < 1024; ++fd) {
      if (fd != ready[1]) ::close(fd);
    }
    if (::setgid(static_cast<gid_t>(uid)) == 0 && ::setuid(uid) == 0) {
      (void)!::write(ready[1], "r", 1);
      ::close(ready[1]);
      ::pause();
    }
    ::_exit(1);
  }
  ::close(ready[1]);
  char byte;
  (void)!::read(ready[0], &byte, 1);
  ::close(ready[0]);
  return pid;
}

bool alive(pid_t pid) { return ::waitpid(pid, nullptr, WNOHANG) == 0; }

void fileOf(const std::string& path, uid_t uid) {
  std::ofstream(path) << "secret";
  ASSERT_EQ(::chown(path.c_str(), uid, static_cast<gid_t>(uid)), 0);
}

class JobIdentitiesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (::geteuid() != 0) GTEST_SKIP() << "giving out uids signals and chowns: needs root";
    dir_ = fs::temp_directory_path() / ("rm_identity_" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_ + "/job/work/deep");
    for (const char* left : {"/tmp/rm-identity-test-secret", "/dev/shm/rm-identity-test-shm",
                             "/tmp/rm-identity-test-left"}) {
      fs::remove(left);  // of an earlier run that failed
    }
  }
  void TearDown() override {
    if (!dir_.empty()) fs::remove_all(dir_);
  }
  // An agent's identities: its own ledger, the host's shared lock directory (here, the test's).
  std::unique_ptr<JobIdentities> open(UidRange range, const std::string& agent = "a") {
    auto identities =
        JobIdentities::open(range, RankConfinement{}, dir_ + "/ledger-" + agent, dir_ + "/locks");
    EXPECT_TRUE(identities.isOk()) << identities.status().message();
    return identities.isOk() ? std::move(*identities) : nullptr;
  }
  std::string dir_;
};

TEST_F(JobIdentitiesTest, AQuarantinedUidIsNeverGivenOut) {
  auto identities = open({1800000100, 1800000102});
  identities->quarantine(1800000101);
  auto a = identities->take("a", "/tmp");
  auto b = identities->take("b", "/tmp");
  ASSERT_TRUE(a.isOk() && b.isOk());
  EXPECT_EQ(a->uid, 1800000100u);
  EXPECT_EQ(b->uid, 1800000102u);
  EXPECT_EQ(identities->take("a", "/tmp")->uid, 1800000100u);  // a job keeps its uid
  auto c = identities->take("c", "/tmp");
  ASSERT_FALSE(c.isOk());
  EXPECT_EQ(c.status().code(), ErrorCode::kResourceExhausted);
  ASSERT_TRUE(identities->release("a").isOk());
  EXPECT_EQ(identities->take("c", "/tmp")->uid, 1800000100u);  // not the quarantined one
}

TEST_F(JobIdentitiesTest, TheNextJobOfAUidFindsNothingOfTheLastOne) {
  auto identities = open({1800000200, 1800000200});
  auto a = identities->take("a", dir_);
  ASSERT_TRUE(a.isOk());
  ASSERT_TRUE(chownTree(dir_ + "/job/work", a->uid, a->gid).isOk());
  const std::string tmp_file = "/tmp/rm-identity-test-secret";
  const std::string shm_file = "/dev/shm/rm-identity-test-shm";
  fileOf(tmp_file, a->uid);
  fileOf(shm_file, a->uid);
  const pid_t left_running = sleeperAs(a->uid);
  const Status released = identities->release("a", {dir_ + "/job/work", dir_ + "/not-there"});
  ASSERT_TRUE(released.isOk()) << released.message();
  EXPECT_FALSE(alive(left_running));
  EXPECT_FALSE(fs::exists(tmp_file));
  EXPECT_FALSE(fs::exists(shm_file));
  struct stat st {};
  ASSERT_EQ(::lstat((dir_ + "/job/work/deep").c_str(), &st), 0);
  EXPECT_EQ(st.st_uid, ::geteuid());
  EXPECT_EQ(uidInUse(a->uid), "");
  EXPECT_EQ(identities->take("b", dir_)->uid, a->uid);
}

TEST_F(JobIdentitiesTest, AnAgentRestartedUnderItsRanksCleansItsUidsAndOnlyThose) {
  const pid_t someone_elses = sleeperAs(1800000301);  // a user's process, started before
  uid_t given = 0;
  pid_t left_running = 0;
  {
    auto before = open({1800000300, 1800000302});
    auto a = before->take("a", dir_);
    ASSERT_TRUE(a.isOk());
    given = a->uid;
    fileOf("/tmp/rm-identity-test-left", given);
    left_running = sleeperAs(given);
  }  // the agent dies without releasing: its ledger says what it gave out
  auto after = open({1800000300, 1800000302});
  EXPECT_TRUE(
      after->recover([](const std::string&) { return std::vector<std::string>{}; }).empty());
  EXPECT_FALSE(alive(left_running));
  EXPECT_FALSE(fs::exists("/tmp/rm-identity-test-left"));
  EXPECT_TRUE(alive(someone_elses));
  // Its uid is never given out while that process runs; the others are.
  std::set<uid_t> taken;
  for (const char* job : {"b", "c"}) {
    auto b = after->take(job, dir_);
    ASSERT_TRUE(b.isOk()) << b.status().message();
    taken.insert(b->uid);
  }
  EXPECT_EQ(taken, (std::set<uid_t>{1800000300, 1800000302}));
  auto d = after->take("d", dir_);
  ASSERT_FALSE(d.isOk());
  EXPECT_NE(d.status().message().find("uid 1800000301: a process runs as it"), std::string::npos)
      << d.status().message();
  EXPECT_TRUE(alive(someone_elses));
  ::kill(someone_elses, SIGKILL);
  ::waitpid(someone_elses, nullptr, 0);
}

TEST_F(JobIdentitiesTest, TwoAgentsSharingARangeNeverGiveOutTheSameUid) {
  auto first = open({1800000400, 1800000401}, "first");
  auto second = open({1800000400, 1800000401}, "second");
  auto a = first->take("a", dir_);
  auto b = second->take("b", dir_);
  ASSERT_TRUE(a.isOk() && b.isOk());
  EXPECT_NE(a->uid, b->uid);
  EXPECT_FALSE(second->take("c", dir_).isOk());  // both held
  ASSERT_TRUE(first->release("a").isOk());
  EXPECT_EQ(second->take("c", dir_)->uid, a->uid);
}

}  // namespace
}  // namespace ringmaster::agent
