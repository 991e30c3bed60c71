// readTorchErrorFile: the exception PyTorch's @record left in TORCHELASTIC_ERROR_FILE, or nothing
// for a file that is missing, empty, a link or not that JSON.
#include "torch_error_file.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <fstream>

#include "harness.h"

namespace ringmaster::agent {
namespace {

std::string write(const std::string& path, const std::string& text) {
  std::ofstream(path) << text;
  return path;
}

TEST(TorchErrorFile, ReadsTheMessageTorchWrites) {
  testing::TempDir dir;
  // As torch.distributed.elastic.multiprocessing.errors.ErrorHandler.record_exception writes it.
  const std::string file =
      write(dir.path() + "/e.json",
            R"({"message": {"message": "ValueError: bad batch at step 12", "extraInfo": )"
            R"({"py_callstack": "Traceback ...", "timestamp": "1764150000"}}})");
  EXPECT_EQ(readTorchErrorFile(file), "ValueError: bad batch at step 12");
  EXPECT_EQ(readTorchErrorFile(write(dir.path() + "/s.json", R"({"message": "OOM\n"})")), "OOM");
}

TEST(TorchErrorFile, NothingForAMissingEmptyBrokenOrLinkedFile) {
  testing::TempDir dir;
  EXPECT_EQ(readTorchErrorFile(dir.path() + "/none.json"), std::nullopt);
  EXPECT_EQ(readTorchErrorFile(write(dir.path() + "/empty.json", "")), std::nullopt);
  EXPECT_EQ(readTorchErrorFile(write(dir.path() + "/bad.json", "{\"message\": ")), std::nullopt);
  EXPECT_EQ(readTorchErrorFile(write(dir.path() + "/other.json", "[1, 2]")), std::nullopt);
  const std::string target = write(dir.path() + "/target.json", R"({"message": "secret"})");
  ASSERT_EQ(::symlink(target.c_str(), (dir.path() + "/link.json").c_str()), 0);
  EXPECT_EQ(readTorchErrorFile(dir.path() + "/link.json"), std::nullopt);
}

TEST(TorchErrorFile, ALongMessageIsCut) {
  testing::TempDir dir;
  const std::string file =
      write(dir.path() + "/long.json", R"({"message": ")" + std::string(5000, 'x') + R"("})");
  const auto message = readTorchErrorFile(file);
  ASSERT_TRUE(message.has_value());
  EXPECT_EQ(message->size(), 2003u);
}

}  // namespace
}  // namespace ringmaster::agent
