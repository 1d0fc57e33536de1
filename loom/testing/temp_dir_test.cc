#include "loom/testing/temp_dir.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "loom/testing/error_of.h"

namespace loom::testing {
namespace {

TEST(TempDirTest, FreshDistinctAndRemovedWithItsContents) {
  std::string kept;
  {
    TempDir a("temp_dir_test"), b("temp_dir_test");
    EXPECT_NE(a.path(), b.path());
    EXPECT_TRUE(std::filesystem::is_directory(a.path()));
    EXPECT_TRUE(std::filesystem::is_empty(a.path()));
    EXPECT_NE(a.path().find("loom_temp_dir_test_"), std::string::npos) << a.path();
    std::filesystem::create_directories(a.Join("sub/dir"));
    std::ofstream(a.Join("sub/dir/file")) << "bytes";
    EXPECT_TRUE(std::filesystem::exists(a.path() + "/sub/dir/file"));
    kept = a.path();
  }
  EXPECT_FALSE(std::filesystem::exists(kept));
}

TEST(TempDirTest, LivesUnderTestTmpdirWhenSet) {
  TempDir scratch("scratch");
  ASSERT_EQ(::setenv("TEST_TMPDIR", scratch.path().c_str(), 1), 0);
  {
    TempDir inner;
    EXPECT_EQ(std::filesystem::path(inner.path()).parent_path(), scratch.path());
  }
  ::unsetenv("TEST_TMPDIR");
}

TEST(ErrorOfTest, ReportsCodeAndMessage) {
  std::string message;
  EXPECT_EQ(CodeOf([] { throw NotFound("no file 'x'"); }, &message), ErrorCode::kNotFound);
  EXPECT_EQ(message, "no file 'x'");
  EXPECT_EQ(ErrorOf([] { throw DataLoss("bad crc"); }), "bad crc");
  EXPECT_EQ(ErrorOf([] {}), "<no error>");
}

}  // namespace
}  // namespace loom::testing
