#include "loom/base/error.h"

#include <gtest/gtest.h>

namespace loom {
namespace {

TEST(ErrorTest, CodesAreTensorFlowsAndNamed) {
  // The numbers are TF's error codes (tensorflow/core/protobuf/error_codes.proto).
  EXPECT_EQ(static_cast<int>(ErrorCode::kCancelled), 1);
  EXPECT_EQ(static_cast<int>(ErrorCode::kUnknown), 2);
  EXPECT_EQ(static_cast<int>(ErrorCode::kInvalidArgument), 3);
  EXPECT_EQ(static_cast<int>(ErrorCode::kOutOfRange), 11);
  EXPECT_EQ(ErrorCodeName(ErrorCode::kUnknown), "Unknown");
  EXPECT_EQ(ErrorCodeName(ErrorCode::kDataLoss), "DataLoss");
}

TEST(ErrorTest, FactoryKeepsCodeAndMessage) {
  Error e = Unknown("py_func 'f': the function raised ", 3, " times");
  EXPECT_EQ(e.code(), ErrorCode::kUnknown);
  EXPECT_EQ(e.message(), "py_func 'f': the function raised 3 times");
  EXPECT_STREQ(e.what(), "Unknown: py_func 'f': the function raised 3 times");
  Error w = WithContext(e.AtNode("f"), "while running");
  EXPECT_EQ(w.code(), ErrorCode::kUnknown);
  EXPECT_EQ(w.node(), "f");
}

}  // namespace
}  // namespace loom
