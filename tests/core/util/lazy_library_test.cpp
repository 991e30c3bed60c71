#include "util/lazy_library.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>

namespace ringmaster::util {
namespace {

TEST(LazyLibrary, ResolvesASymbolOfALibraryThatIsThere) {
  LazyLibrary libm("libm.so.6", "libm");
  auto* cosine = reinterpret_cast<double (*)(double)>(libm.symbol("cos"));
  ASSERT_NE(cosine, nullptr) << libm.error();
  EXPECT_EQ(cosine(0.0), 1.0);
  EXPECT_EQ(libm.symbol("no_such_function_here"), nullptr);
  EXPECT_EQ(libm.error(), "");
}

TEST(LazyLibrary, AMissingLibraryGivesNullAndAnErrorNamingIt) {
  LazyLibrary missing("libringmaster-does-not-exist.so.7", "NCCL");
  EXPECT_EQ(missing.symbol("ncclGetUniqueId"), nullptr);
  const std::string error = missing.error();
  EXPECT_EQ(error.rfind("NCCL is not available on this host (", 0), 0u) << error;
  EXPECT_NE(error.find("libringmaster-does-not-exist.so.7"), std::string::npos) << error;
}

}  // namespace
}  // namespace ringmaster::util
