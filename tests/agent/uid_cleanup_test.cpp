// The clean-up of a released uid deletes only what that uid owns, whatever another tenant does
// to the tree meanwhile (issue: a job swapping a directory and a link inside a 0777 directory of
// its own made the root agent delete a root-owned file through the link). Run as root, on a tree
// of its own, against a thread that keeps swapping the directory holding the uid's file with a
// link to a root-only directory holding a file of the same name.
#include "uid_cleanup.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <linux/fs.h>
#include <linux/keyctl.h>
#include <pwd.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>

namespace ringmaster::agent {
namespace {

namespace fs = std::filesystem;

// Two uids no user of this host has: the released job's, and the swapping tenant's.
constexpr uid_t kReleased = 61731;
constexpr uid_t kSwapper = 61732;

class UidCleanupTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (::geteuid() != 0) GTEST_SKIP() << "needs root (files of other uids)";
    if (::getpwuid(kReleased) || ::getpwuid(kSwapper)) GTEST_SKIP() << "the test's uids are taken";
    root_ = fs::temp_directory_path() / ("uid-cleanup-" + std::to_string(::getpid()));
    fs::remove_all(root_);
    fs::create_directories(root_ / "shared");
    fs::permissions(root_ / "shared", fs::perms::all);  // a /tmp of its own (not sticky)
    fs::create_directories(root_ / "protected");
    fs::permissions(root_ / "protected", fs::perms::owner_all);
    secret_ = root_ / "protected" / "secret";
    std::ofstream(secret_) << "root's";
    // The tenant's directory in the shared one, and in it a directory and a link to swap.
    const fs::path own = root_ / "shared" / "rb";
    fs::create_directories(own / "w");
    fs::create_symlink(root_ / "protected", own / "l");
    for (const fs::path& p : {own, own / "w"}) {
      fs::permissions(p, fs::perms::all);
      ASSERT_EQ(::lchown(p.c_str(), kSwapper, kSwapper), 0);
    }
    ASSERT_EQ(::lchown((own / "l").c_str(), kSwapper, kSwapper), 0);
    real_dir_ = ::open((own / "w").c_str(), O_RDONLY | O_DIRECTORY);
    own_dir_ = ::open(own.c_str(), O_RDONLY | O_DIRECTORY);
    ASSERT_GE(real_dir_, 0);
    ASSERT_GE(own_dir_, 0);
  }
  void TearDown() override {
    stop_ = true;
    if (swapper_.joinable()) swapper_.join();
    if (real_dir_ >= 0) ::close(real_dir_);
    if (own_dir_ >= 0) ::close(own_dir_);
    std::error_code ec;
    if (!root_.empty()) fs::remove_all(root_, ec);
  }
  // The released uid's file in the real directory, whatever its name is at the moment.
  void leaveFileOfReleasedUid() {
    const int fd = ::openat(real_dir_, "secret", O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
    ASSERT_GE(fd, 0);
    ASSERT_EQ(::fchown(fd, kReleased, kReleased), 0);
    ::close(fd);
  }
  bool releasedFileGone() const { return ::faccessat(real_dir_, "secret", F_OK, 0) != 0; }
  void startSwapping() {
    swapper_ = std::thread([this] {
      while (!stop_) {
        ::syscall(SYS_renameat2, own_dir_, "w", own_dir_, "l", RENAME_EXCHANGE);
      }
    });
  }
  // Stops the swapper with the real directory back under its own name.
  void stopSwapping() {
    stop_ = true;
    if (swapper_.joinable()) swapper_.join();
    struct stat named {
    }, real{};
    ASSERT_EQ(::fstatat(own_dir_, "w", &named, AT_SYMLINK_NOFOLLOW), 0);
    ASSERT_EQ(::fstat(real_dir_, &real), 0);
    if (named.st_ino != real.st_ino) {
      ASSERT_EQ(::syscall(SYS_renameat2, own_dir_, "w", own_dir_, "l", RENAME_EXCHANGE), 0);
    }
  }
  void restoreSecret() {
    if (!fs::exists(secret_)) std::ofstream(secret_) << "root's";
  }

  fs::path root_, secret_;
  int real_dir_ = -1, own_dir_ = -1;
  std::atomic<bool> stop_{false};
  std::thread swapper_;
};

TEST_F(UidCleanupTest, ASwappedLinkNeverLeadsTheCleanUpOutOfTheTree) {
  startSwapping();
  // The control: removal by a path collected a moment before (what the clean-up did) follows
  // the link now and then, and deletes the root-only file.
  // Tried for up to 20 s, not a number of times: on a loaded host the swapper may sit still
  // for a while.
  int control_hits = 0, control_tries = 0;
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  for (; control_hits == 0 && std::chrono::steady_clock::now() < give_up; ++control_tries) {
    leaveFileOfReleasedUid();
    std::error_code ec;
    fs::remove_all(root_ / "shared" / "rb" / "w" / "secret", ec);
    if (!fs::exists(secret_)) ++control_hits;
    restoreSecret();
  }
  ASSERT_GT(control_hits, 0) << "the race did not happen: the test proves nothing here";
  std::printf("a removal by path deleted the root-only file within %d tries\n", control_tries);

  int removed = 0;
  constexpr int kTries = 10000;
  for (int i = 0; i < kTries; ++i) {
    leaveFileOfReleasedUid();
    EXPECT_EQ(removeFilesOf(kReleased, {(root_ / "shared").string()}), "");
    ASSERT_TRUE(fs::exists(secret_)) << "the root-only file was deleted at try " << i;
    removed += releasedFileGone();
  }
  std::printf("the released uid's file removed in %d of %d tries, the root-only file in none\n",
              removed, kTries);
  // How often the walk found the file depends on where the swapper stood (it may be descheduled
  // with the link in place for most of the run); with the tree still, the file always goes.
  stopSwapping();
  leaveFileOfReleasedUid();
  EXPECT_EQ(removeFilesOf(kReleased, {(root_ / "shared").string()}), "");
  EXPECT_TRUE(releasedFileGone()) << "the released uid's file outlived a clean-up of a still tree";
}

TEST_F(UidCleanupTest, ADirectoryOfTheUidGoesWithWhatIsInItButNotWhatItLinksTo) {
  const fs::path tree = root_ / "shared" / "job-tree";
  fs::create_directories(tree / "a" / "b");
  std::ofstream(tree / "a" / "b" / "file") << "x";
  fs::create_symlink(root_ / "protected", tree / "a" / "to-protected");
  fs::create_symlink(secret_, tree / "secret-link");
  for (const auto& entry : fs::recursive_directory_iterator(tree)) {
    ASSERT_EQ(::lchown(entry.path().c_str(), kReleased, kReleased), 0);
  }
  ASSERT_EQ(::lchown(tree.c_str(), kReleased, kReleased), 0);
  EXPECT_EQ(removeFilesOf(kReleased, {(root_ / "shared").string()}), "");
  EXPECT_FALSE(fs::exists(fs::symlink_status(tree)));
  EXPECT_TRUE(fs::exists(secret_));
  EXPECT_TRUE(fs::exists(root_ / "protected"));
  EXPECT_TRUE(fs::exists(root_ / "shared" / "rb" / "w")) << "another uid's files stay";
}

// Whether a process of `uid` finds (or, with `add`, adds) a key of that description in its user
// keyring: run in a child that becomes `uid`.
bool asUid(uid_t uid, bool add) {
  const pid_t child = ::fork();
  if (child == 0) {
    if (::setgid(uid) != 0 || ::setuid(uid) != 0) ::_exit(2);
    const char* description = "ringmaster-uid-cleanup-test";
    const long key =
        add ? ::syscall(SYS_add_key, "user", description, "a job's secret", 14,
                        KEY_SPEC_USER_KEYRING)
            : ::syscall(SYS_keyctl, KEYCTL_SEARCH, KEY_SPEC_USER_KEYRING, "user", description, 0);
    ::_exit(key >= 0 ? 0 : 1);
  }
  int status = 0;
  ::waitpid(child, &status, 0);
  return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

// A key a job adds to its uid's user keyring outlives the job's processes: the next job given the
// uid read it. The release clears it.
TEST_F(UidCleanupTest, AKeyInTheUidsKeyringDoesNotOutliveItsRelease) {
  if (!asUid(kReleased, /*add=*/true)) GTEST_SKIP() << "no user keyrings here";
  ASSERT_TRUE(asUid(kReleased, false)) << "the key is gone with its process: nothing to test";
  EXPECT_TRUE(removeEverythingOf(kReleased).isOk());
  EXPECT_FALSE(asUid(kReleased, false)) << "the next job of the uid finds the key";
}

}  // namespace
}  // namespace ringmaster::agent
