// slurm::runCommand with real processes: stdin delivered whole, and a program that exits
// without reading its input (ssh refused by the login node) is an exit code, not a SIGPIPE that
// kills the caller (the app, ringmasterctl: slurm_login_test failed so once in CI).
#include "ringmaster/slurm/command.h"

#include <gtest/gtest.h>

#include <string>

namespace ringmaster::slurm {
namespace {

TEST(SlurmCommand, StdinReachesTheProgramWhole) {
  const std::string input(3 << 20, 'x');  // more than a pipe or socket buffer holds
  auto output = runCommand({"wc", "-c"}, {}, 30000, input);
  ASSERT_TRUE(output.isOk()) << output.status().message();
  EXPECT_EQ(output->exit_code, 0);
  EXPECT_EQ(std::stoul(output->out), input.size());
}

TEST(SlurmCommand, AProgramThatIgnoresItsInputIsNoSignalHere) {
  const std::string input(3 << 20, 'x');
  for (int run = 0; run < 20; ++run) {
    auto output = runCommand({"sh", "-c", "exit 3"}, {}, 30000, input);
    ASSERT_TRUE(output.isOk()) << output.status().message();
    EXPECT_EQ(output->exit_code, 3);
  }
}

TEST(SlurmCommand, AMissingProgramIsNamed) {
  auto output = runCommand({"ringmaster-no-such-program"}, {}, 30000);
  ASSERT_FALSE(output.isOk());
  EXPECT_NE(output.status().message().find("ringmaster-no-such-program"), std::string::npos);
}

TEST(SlurmCommand, AScriptFailureCarriesItsStderr) {
  auto output = runScript("echo \"no $1\" >&2; exit 2", {"partition"}, {}, 30000);
  ASSERT_FALSE(output.isOk());
  EXPECT_NE(output.status().message().find("no partition (exit 2)"), std::string::npos)
      << output.status().message();
}

}  // namespace
}  // namespace ringmaster::slurm
