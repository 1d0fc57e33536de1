#ifndef LOOM_DATA_TEST_UTIL_H_
#define LOOM_DATA_TEST_UTIL_H_

// Helpers for the data layer's tests.
#include <gtest/gtest.h>

#include <string>
#include <string_view>
#include <vector>

#include "loom/base/env.h"
#include "loom/base/strcat.h"
#include "loom/data/dataset.h"
#include "loom/io/byte_stream.h"
#include "loom/io/record_writer.h"
#include "loom/testing/error_of.h"

namespace loom::data::testing {

// Every element's int64 component `name`, flattened, in order.
inline std::vector<int64_t> Ints(Iterator& it, const std::string& name = "x", int64_t limit = -1) {
  std::vector<int64_t> out;
  while (limit < 0 || static_cast<int64_t>(out.size()) < limit) {
    auto e = it.GetNext();
    if (!e) break;
    for (int64_t v : e->at(name).flat<int64_t>()) out.push_back(v);
  }
  return out;
}
inline std::vector<int64_t> Ints(const Dataset& d, const std::string& name = "x") {
  auto it = d.MakeIterator();
  return Ints(*it, name);
}

inline Tensor Iota(int64_t n, int64_t cols = 0) {
  std::vector<int64_t> v(cols ? n * cols : n);
  for (size_t i = 0; i < v.size(); ++i) v[i] = i;
  return cols ? Tensor::FromVector(v, {n, cols}) : Tensor::FromVector(v);
}

// Writes `bytes` to `path` through `env`, compressed as asked.
inline void WriteBytes(Env* env, const std::string& path, std::string_view bytes,
                       Compression compression = Compression::kNone) {
  auto out = NewCompressingOutputStream(NewFileOutputStream(env->NewWritableFile(path), path),
                                        compression, -1, path);
  out->Append(bytes);
  out->Close();
}

inline void WriteRecords(Env* env, const std::string& path, const std::vector<std::string>& records,
                         Compression compression = Compression::kNone) {
  auto writer = RecordWriter::Open(env, path, {.compression = compression});
  for (const auto& r : records) writer->WriteRecord(r);
  writer->Close();
}

// Every element's string component `key`, flattened, in order.
inline std::vector<std::string> Strings(Iterator& it, const std::string& key, int64_t limit = -1) {
  std::vector<std::string> out;
  while (limit < 0 || static_cast<int64_t>(out.size()) < limit) {
    auto e = it.GetNext();
    if (!e) break;
    for (const auto& s : e->at(key).flat<std::string>()) out.push_back(s);
  }
  return out;
}
inline std::vector<std::string> Strings(const Dataset& d, const std::string& key) {
  auto it = d.MakeIterator();
  return Strings(*it, key);
}

// For every split point k: read k elements, save, read the rest; a restored fresh iterator
// must yield exactly that rest.
inline void ExpectRestoreAtEveryPoint(const Dataset& d, const std::string& key) {
  const std::vector<std::string> all = Strings(d, key);
  ASSERT_FALSE(all.empty());
  for (size_t k = 0; k <= all.size(); ++k) {
    SCOPED_TRACE(StrCat("split at ", k));
    auto it = d.MakeIterator();
    std::vector<std::string> head = Strings(*it, key, k);
    ASSERT_EQ(head.size(), k);
    const std::string blob = it->Save();
    std::vector<std::string> rest = Strings(*it, key);
    auto restored = d.MakeIterator();
    restored->Restore(blob);
    EXPECT_EQ(Strings(*restored, key), rest);
    head.insert(head.end(), rest.begin(), rest.end());
    EXPECT_EQ(head, all);
  }
}

// The code of the Error fn() throws (loom/testing/error_of.h).
using loom::testing::CodeOf;

}  // namespace loom::data::testing

#endif  // LOOM_DATA_TEST_UTIL_H_
