// ShardGlobalBatches (global_batches.h): step by step, the union of the shards' batches
// is the global pipeline's batch, for in-memory, memory-mapped and file sources with
// shuffling; each shard maps (decodes) only its own rows; a position saved by N shards
// resumes exactly on M.
#include "loom/data/global_batches.h"

#include <gtest/gtest.h>

#include <atomic>
#include <functional>

#include "loom/data/dataset_impl.h"
#include "loom/data/file_sources.h"
#include "loom/data/test_util.h"
#include "loom/io/npy.h"
#include "loom/io/record_writer.h"

namespace loom::data {
namespace {

using testing::CodeOf;
using Batches = std::vector<std::vector<int64_t>>;

std::vector<int64_t> Values(const Element& e) {
  std::vector<int64_t> v;
  for (int64_t x : e.at("x").flat<int64_t>()) v.push_back(x);
  return v;
}

Batches Drain(Iterator& it, int64_t limit = -1) {
  Batches out;
  while (limit < 0 || static_cast<int64_t>(out.size()) < limit) {
    auto e = it.GetNext();
    if (!e) break;
    out.push_back(Values(*e));
  }
  return out;
}

std::vector<std::unique_ptr<Iterator>> Shards(const Dataset& global, int n) {
  std::vector<std::unique_ptr<Iterator>> its;
  for (int i = 0; i < n; ++i) its.push_back(ShardGlobalBatches(global, n, i).MakeIterator(7));
  return its;
}

// The shards' k-th batches, concatenated in shard order, for every k all shards have a
// full batch (as the ranks' agreement would have them end).
Batches Union(std::vector<std::unique_ptr<Iterator>>& shards, int64_t limit = -1) {
  Batches out;
  while (limit < 0 || static_cast<int64_t>(out.size()) < limit) {
    std::vector<int64_t> all;
    bool ended = false;
    size_t rows = 0;
    for (size_t i = 0; i < shards.size(); ++i) {
      auto e = shards[i]->GetNext();
      if (!e) {
        ended = true;
        continue;
      }
      std::vector<int64_t> v = Values(*e);
      if (i > 0 && v.size() != rows) ended = true;
      rows = v.size();
      all.insert(all.end(), v.begin(), v.end());
    }
    if (ended) break;
    out.push_back(std::move(all));
  }
  return out;
}

// Full global batches of `global` (its last, partial one dropped, as N > 1 shards do).
Batches FullGlobal(const Dataset& global, size_t batch) {
  auto it = global.MakeIterator(7);
  Batches all = Drain(*it);
  if (!all.empty() && all.back().size() != batch) all.pop_back();
  return all;
}

Element ParseRecord(Element e) {
  const std::string& s = e.at(kRecordKey).scalar<std::string>();
  if (s.empty() || s[0] != 'r') throw InvalidArgument("bad record '", s, "'");
  return {{"x", Tensor::Scalar<int64_t>(std::stoll(s.substr(1)))}};
}
const ElementSpec kParsed = {{"x", {kInt64, Shape{}}}};

class GlobalBatchesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    // 50 rows: 4 global batches of 12 and a partial one of 2.
    auto writer = RecordWriter::Open(env_.get(), "/a.tfrecord", {});
    std::string csv;
    for (int i = 0; i < kRows; ++i) {
      writer->WriteRecord(StrCat("r", i));
      csv += StrCat(i, ",", i * 10, "\n");
    }
    writer->Close();
    WriteNpy(env_.get(), "/x.npy", testing::Iota(kRows));
    auto out = env_->NewWritableFile("/a.csv");
    out->Append(csv);
    out->Close();
  }

  // Each source, shuffled, batched by 12, with read-ahead or not.
  std::vector<std::pair<std::string, Dataset>> Pipelines(bool prefetch) {
    auto finish = [&](Dataset d) {
      d = d.Batch(12);
      return prefetch ? d.Prefetch(2) : d;
    };
    std::vector<std::pair<std::string, Dataset>> out;
    out.emplace_back(
        "in-memory",
        finish(FromTensorSlices(testing::Iota(kRows)).Shuffle(16, {.seed = 3}).Repeat(2)));
    out.emplace_back("mmap npy",
                     finish(FromNpy("/x.npy", {.env = env_.get()}).Shuffle(20).Repeat(2)));
    out.emplace_back(
        "tfrecord, parsed after the shuffle",
        finish(TFRecordDataset({"/a.tfrecord"}, {.env = env_.get()})
                   .Shuffle(10, {.seed = 5})
                   .Map(ParseRecord, {.num_parallel_calls = 2, .output_spec = kParsed})));
    out.emplace_back("tfrecord, shuffled after parsing",
                     finish(TFRecordDataset({"/a.tfrecord"}, {.env = env_.get()})
                                .Map(ParseRecord, {.output_spec = kParsed})
                                .Shuffle(10, {.seed = 5})));
    out.emplace_back(
        "csv", finish(CsvDataset({"/a.csv"}, {Tensor(kInt64, Shape{0}), Tensor(kInt64, Shape{0})},
                                 {.column_names = {"x", "y"}, .file = {.env = env_.get()}})
                          .Map(
                              [](Element e) {
                                e.erase("y");
                                return e;
                              },
                              {.output_spec = kParsed})));
    return out;
  }

  static constexpr int kRows = 50;
  std::unique_ptr<Env> env_ = NewMemEnv();
};

TEST_F(GlobalBatchesTest, TheShardsBatchesMakeTheGlobalBatchStepByStep) {
  for (bool prefetch : {false, true}) {
    for (const auto& [name, global] : Pipelines(prefetch)) {
      SCOPED_TRACE(StrCat(name, prefetch ? " + Prefetch" : ""));
      ASSERT_TRUE(ShardsBelowBatch(global)) << global.DebugString();
      const Batches expected = FullGlobal(global, 12);
      ASSERT_GE(expected.size(), 4u);
      for (int n : {1, 2, 3, 4}) {
        SCOPED_TRACE(StrCat(n, " shards"));
        auto shards = Shards(global, n);
        Batches got = Union(shards);
        if (n == 1 && got.size() == expected.size() + 1) got.pop_back();  // N = 1 keeps it
        EXPECT_EQ(got, expected);
      }
    }
  }
}

TEST_F(GlobalBatchesTest, EachShardMapsAndParsesOnlyItsOwnRows) {
  auto calls = std::make_shared<std::atomic<int>>(0);
  auto counted = [calls](Element e) {
    ++*calls;
    return ParseRecord(std::move(e));
  };
  const Dataset global = TFRecordDataset({"/a.tfrecord"}, {.env = env_.get()})
                             .Map(counted, {.output_spec = kParsed})
                             .Batch(12);
  auto it = ShardGlobalBatches(global, 4, 1).MakeIterator();
  EXPECT_EQ(Drain(*it).size(), 4u);
  EXPECT_EQ(calls->load(), 4 * 3);  // its 3 rows of each of the 4 full batches

  // A record no other shard decodes: shard 1's row of the first batch is bad. Shards 0, 2
  // and 3 never parse it; shard 1 does and fails.
  auto writer = RecordWriter::Open(env_.get(), "/bad.tfrecord", {});
  for (int i = 0; i < 8; ++i) writer->WriteRecord(i == 3 ? "corrupt" : StrCat("r", i));
  writer->Close();
  const Dataset bad = TFRecordDataset({"/bad.tfrecord"}, {.env = env_.get()})
                          .Map(ParseRecord, {.output_spec = kParsed})
                          .Batch(8);
  for (int i : {0, 2, 3}) {
    EXPECT_EQ(Drain(*ShardGlobalBatches(bad, 4, i).MakeIterator()).size(), 1u) << i;
  }
  std::string msg;
  EXPECT_EQ(CodeOf([&] { Drain(*ShardGlobalBatches(bad, 4, 1).MakeIterator()); }, &msg),
            ErrorCode::kInvalidArgument);
  EXPECT_NE(msg.find("corrupt"), std::string::npos) << msg;

  // CSV: the fields of other shards' records are not typed.
  auto out = env_->NewWritableFile("/bad.csv");
  out->Append("0\n1\nnot-a-number\n3\n");
  out->Close();
  const Dataset csv = CsvDataset({"/bad.csv"}, {Tensor(kInt64, Shape{0})},
                                 {.column_names = {"x"}, .file = {.env = env_.get()}})
                          .Batch(4);
  EXPECT_EQ(Drain(*ShardGlobalBatches(csv, 2, 0).MakeIterator()), (Batches{{0, 1}}));
  EXPECT_EQ(CodeOf([&] { Drain(*ShardGlobalBatches(csv, 2, 1).MakeIterator()); }),
            ErrorCode::kInvalidArgument);
}

TEST_F(GlobalBatchesTest, APositionSavedByNShardsResumesExactlyOnM) {
  for (bool prefetch : {false, true}) {
    for (const auto& [name, global] : Pipelines(prefetch)) {
      const Batches expected = FullGlobal(global, 12);
      for (auto [n, m] : {std::pair{1, 2}, {2, 3}, {3, 1}, {4, 2}, {2, 2}}) {
        for (int saver = 0; saver < n; ++saver) {
          SCOPED_TRACE(StrCat(name, prefetch ? " + Prefetch" : "", ": shard ", saver, " of ", n,
                              " saves, ", m, " resume"));
          auto before = Shards(global, n);
          Batches got = Union(before, 3);
          const std::string state = before[saver]->Save();
          // Every shard of the new run takes the saver's state (the chief's broadcast).
          auto after = Shards(global, m);
          for (auto& it : after) it->Restore(state);
          Batches rest = Union(after);
          if (m == 1 && rest.size() + got.size() == expected.size() + 1) rest.pop_back();
          got.insert(got.end(), rest.begin(), rest.end());
          EXPECT_EQ(got, expected);
        }
      }
    }
  }
}

TEST_F(GlobalBatchesTest, PipelinesWithoutAReachableBatchShareWholeGlobalBatches) {
  // A Filter above the Batch: every shard builds the global batch and keeps its rows.
  const Dataset global =
      FromTensorSlices(testing::Iota(kRows)).Batch(10).Filter([](const Element& e) {
        return e.at("x").dim(0) == 10;
      });
  EXPECT_FALSE(ShardsBelowBatch(global));
  const Batches expected = FullGlobal(global, 10);
  auto shards = Shards(global, 2);
  EXPECT_EQ(Union(shards), expected);
  auto again = Shards(global, 5);
  Union(again, 2);
  const std::string state = again[3]->Save();
  auto resumed = Shards(global, 2);
  for (auto& it : resumed) it->Restore(state);
  EXPECT_EQ(Union(resumed), Batches(expected.begin() + 2, expected.end()));
}

TEST_F(GlobalBatchesTest, ABatchTheShardsCannotShareIsAnErrorNamingBoth) {
  const Dataset global = FromTensorSlices(testing::Iota(kRows)).Batch(10);
  std::string msg;
  EXPECT_EQ(CodeOf([&] { ShardGlobalBatches(global, 3, 0); }, &msg), ErrorCode::kInvalidArgument);
  EXPECT_NE(msg.find("10 rows"), std::string::npos) << msg;
  EXPECT_NE(msg.find("by 3 shards"), std::string::npos) << msg;
  // One process's shard leads back to the pipeline (for positions saved by a plain
  // iterator over it); other shards and other datasets do not.
  ASSERT_TRUE(SingleShardSource(ShardGlobalBatches(global, 1, 0)));
  EXPECT_EQ(SingleShardSource(ShardGlobalBatches(global, 1, 0))->impl(), global.impl());
  EXPECT_FALSE(SingleShardSource(ShardGlobalBatches(global, 2, 0)));
  EXPECT_FALSE(SingleShardSource(global));
  // The identity names neither N nor the index: a state of 2 shards fits 5.
  EXPECT_EQ(PipelineIdentity(*ShardGlobalBatches(global, 2, 1).impl()),
            PipelineIdentity(*ShardGlobalBatches(global, 5, 4).impl()));
}

}  // namespace
}  // namespace loom::data
