// Where ranks' memory limits come from: the cgroup v2 mount and the agent's cgroup, read from
// /proc text as the kernel writes it (pure v2, hybrid, v1 only).
#include "rank_cgroups.h"

#include <gtest/gtest.h>

namespace ringmaster::agent {
namespace {

TEST(RankCgroupsTest, FindsTheCgroup2MountOnPureAndHybridHosts) {
  EXPECT_EQ(cgroup2MountPoint("35 24 0:30 / /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime "
                              "shared:9 - cgroup2 cgroup2 rw,nsdelegate,memory_recursiveprot\n"),
            "/sys/fs/cgroup");
  EXPECT_EQ(cgroup2MountPoint(
                "26 25 0:23 / /sys/fs/cgroup ro,nosuid - tmpfs tmpfs ro,mode=755\n"
                "27 26 0:24 / /sys/fs/cgroup/unified rw,nosuid shared:5 - cgroup2 cgroup2 rw\n"
                "28 26 0:25 / /sys/fs/cgroup/memory rw shared:6 - cgroup cgroup rw,memory\n"),
            "/sys/fs/cgroup/unified");
  EXPECT_EQ(cgroup2MountPoint("28 26 0:25 / /sys/fs/cgroup/memory rw shared:6 - cgroup cgroup "
                              "rw,memory\n"),
            std::nullopt);
}

TEST(RankCgroupsTest, ReadsTheProcessesUnifiedCgroup) {
  EXPECT_EQ(unifiedCgroupPath("0::/system.slice/ringmaster-agent.service\n"),
            "/system.slice/ringmaster-agent.service");
  EXPECT_EQ(unifiedCgroupPath("4:memory:/x\n1:cpu:/\n0::/\n"), "/");
  EXPECT_EQ(unifiedCgroupPath("4:memory:/x\n1:cpu:/\n"), std::nullopt);
}

}  // namespace
}  // namespace ringmaster::agent
