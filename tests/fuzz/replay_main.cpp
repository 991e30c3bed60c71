// Replays fuzz corpora without libFuzzer: link with one fuzz target and pass corpus files or
// directories (searched recursively). Each file is one input to LLVMFuzzerTestOneInput. Fails when
// no input was found, so that a moved corpus does not turn the test into a silent pass.

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <system_error>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace {

bool replayFile(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    std::fprintf(stderr, "cannot read %s\n", path.c_str());
    return false;
  }
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::printf("replay %s (%zu bytes)\n", path.c_str(), bytes.size());
  std::fflush(stdout);  // the name is on screen before a crash
  LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s CORPUS_DIR_OR_FILE...\n", argv[0]);
    return 2;
  }
  size_t replayed = 0;
  bool ok = true;
  for (int i = 1; i < argc; ++i) {
    const std::filesystem::path root(argv[i]);
    std::error_code ec;
    if (std::filesystem::is_directory(root, ec)) {
      std::vector<std::filesystem::path> files;
      for (auto it = std::filesystem::recursive_directory_iterator(root, ec);
           !ec && it != std::filesystem::recursive_directory_iterator(); it.increment(ec)) {
        if (it->is_regular_file(ec)) files.push_back(it->path());
      }
      if (ec) {
        std::fprintf(stderr, "cannot list %s: %s\n", root.c_str(), ec.message().c_str());
        ok = false;
      }
      std::sort(files.begin(), files.end());  // stable order for reproducible logs
      for (const auto& f : files) {
        ok = replayFile(f) && ok;
        ++replayed;
      }
    } else {
      ok = replayFile(root) && ok;
      ++replayed;
    }
  }
  std::printf("%zu inputs replayed\n", replayed);
  if (replayed == 0) {
    std::fprintf(stderr, "no corpus inputs found\n");
    return 1;
  }
  return ok ? 0 : 1;
}
