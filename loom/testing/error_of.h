#ifndef LOOM_TESTING_ERROR_OF_H_
#define LOOM_TESTING_ERROR_OF_H_

// Shared fixtures of Loom's tests: what a call throws.
//
//   EXPECT_EQ(CodeOf([&] { session.Run(...); }, &message), ErrorCode::kInvalidArgument);
//   EXPECT_NE(ErrorOf([&] { MatMul(s, x, w); }).find("[32,784]"), std::string::npos);
//   EXPECT_NE(ErrorOf([&] { Load(path); }, ErrorCode::kDataLoss).find(path), std::string::npos);
#include <gtest/gtest.h>

#include <string>

#include "loom/base/error.h"

namespace loom::testing {

// The code of the loom::Error that fn() throws (its message into *message when given).
// A call that throws nothing is a test failure, reported as kInternal.
template <typename Fn>
ErrorCode CodeOf(Fn&& fn, std::string* message = nullptr) {
  try {
    fn();
  } catch (const Error& e) {
    if (message != nullptr) *message = e.message();
    return e.code();
  }
  ADD_FAILURE() << "expected a loom::Error";
  return ErrorCode::kInternal;
}

// The message of the loom::Error that fn() throws, "<no error>" when it throws none.
template <typename Fn>
std::string ErrorOf(Fn&& fn) {
  try {
    fn();
  } catch (const Error& e) {
    return e.message();
  }
  return "<no error>";
}

// The message of the loom::Error that fn() throws, which must have code `expected`: another
// code, or a call that throws nothing, is a test failure (and gives "<no error>").
template <typename Fn>
std::string ErrorOf(Fn&& fn, ErrorCode expected) {
  try {
    fn();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), expected) << e.what();
    return e.message();
  }
  ADD_FAILURE() << "expected a loom::Error with code " << ErrorCodeName(expected);
  return "<no error>";
}

}  // namespace loom::testing

#endif  // LOOM_TESTING_ERROR_OF_H_
