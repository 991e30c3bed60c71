#include "ringmaster/util/result.h"

#include <gtest/gtest.h>

namespace ringmaster {
namespace {

Result<int> parsePositive(int v) {
  if (v <= 0) return invalidArgument("expected a positive number, got " + std::to_string(v));
  return v;
}

Status doubled(int v, int* out) {
  RM_ASSIGN_OR_RETURN(int x, parsePositive(v));
  *out = 2 * x;
  return Status::ok();
}

TEST(Result, CarriesValueOrError) {
  EXPECT_EQ(*parsePositive(3), 3);
  auto bad = parsePositive(-1);
  ASSERT_FALSE(bad.isOk());
  EXPECT_EQ(bad.status().code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(bad.status().toString(), "INVALID_ARGUMENT: expected a positive number, got -1");
}

TEST(Result, AssignOrReturnPropagatesErrors) {
  int out = 0;
  EXPECT_TRUE(doubled(4, &out).isOk());
  EXPECT_EQ(out, 8);
  EXPECT_EQ(doubled(0, &out).code(), ErrorCode::kInvalidArgument);
}

}  // namespace
}  // namespace ringmaster
