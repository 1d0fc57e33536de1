// Reads the real files in testdata/ (written by TensorFlow, TensorBoard's
// writers, PyTorch, Apache Beam, gzip(1)) and checks every value listed for them in
// expected.json. Fails when the folder is absent.
#include <gtest/gtest.h>

#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "loom/base/env.h"
#include "loom/io/event_file_proto.h"
#include "loom/io/example_proto.h"
#include "loom/io/proto/graph.pb.h"
#include "loom/io/record_reader.h"

namespace loom {
namespace {

using nlohmann::json;

class SharedTestdataTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = LOOM_SHARED_TESTDATA;
    const std::string expected_path = JoinPath(root_, "expected.json");
    ASSERT_TRUE(Env::Default()->FileExists(expected_path))
        << "test data not found at " << root_ << " (the repository's testdata/)";
    expected_ = json::parse(ReadFileToString(Env::Default(), expected_path));
  }

  // The expected.json entries whose key starts with `prefix`.
  std::vector<std::string> FilesUnder(const std::string& prefix, bool skip_checkpoint = true) {
    std::vector<std::string> files;
    for (const auto& [name, value] : expected_.items()) {
      if (!name.starts_with(prefix)) continue;
      if (skip_checkpoint && name.ends_with("/checkpoint")) continue;
      files.push_back(name);
    }
    return files;
  }

  std::string root_;
  json expected_;
};

std::string KindOf(const proto::Event& e) {
  switch (e.what_case()) {
    case proto::Event::kFileVersion:
      return "file_version";
    case proto::Event::kGraphDef:
      return "graph_def";
    case proto::Event::kSummary:
      return "summary";
    case proto::Event::kLogMessage:
      return "log_message";
    case proto::Event::kSessionLog:
      return "session_log";
    case proto::Event::kTaggedRunMetadata:
      return "tagged_run_metadata";
    case proto::Event::kMetaGraphDef:
      return "meta_graph_def";
    default:
      return "none";
  }
}

TEST_F(SharedTestdataTest, EventFilesMatchExpectedValues) {
  std::vector<std::string> files = FilesUnder("tfevents/");
  ASSERT_EQ(files.size(), 4u);
  for (const std::string& name : files) {
    SCOPED_TRACE(name);
    const json& want = expected_[name];
    ASSERT_EQ(want.at("compression"), "none");
    auto reader = EventFileReader::Open(Env::Default(), JoinPath(root_, name));

    std::vector<proto::Event> events;
    while (auto e = reader->Next()) events.push_back(std::move(*e));
    ASSERT_EQ(events.size(), want.at("records").get<size_t>());
    EXPECT_EQ(events[0].file_version(), want.at("file_version").get<std::string>());
    EXPECT_DOUBLE_EQ(events[0].wall_time(), want.at("first_wall_time").get<double>());

    std::map<std::string, int> kinds, scalar_counts;
    json first_scalars = json::array();
    json graph_defs = json::array();
    json session_logs = json::array();
    std::map<std::string, json> histograms;
    for (size_t r = 0; r < events.size(); ++r) {
      const proto::Event& e = events[r];
      ++kinds[KindOf(e)];
      if (e.has_summary()) {
        for (const auto& v : e.summary().value()) {
          if (v.has_simple_value()) {
            ++scalar_counts[v.tag()];
            if (first_scalars.size() < 5) {
              first_scalars.push_back({{"record", r},
                                       {"tag", v.tag()},
                                       {"step", e.step()},
                                       {"simple_value", v.simple_value()}});
            }
          }
          if (v.has_histo() && !histograms.count(v.tag())) {
            const proto::HistogramProto& h = v.histo();
            EXPECT_EQ(h.bucket_size(), h.bucket_limit_size());
            histograms[v.tag()] = {{"record", r},
                                   {"step", e.step()},
                                   {"min", h.min()},
                                   {"max", h.max()},
                                   {"num", h.num()},
                                   {"sum", h.sum()},
                                   {"sum_squares", h.sum_squares()},
                                   {"n_buckets", h.bucket_size()},
                                   {"first_limit", h.bucket_limit(0)},
                                   {"last_limit", h.bucket_limit(h.bucket_limit_size() - 1)}};
          }
        }
      }
      if (e.what_case() == proto::Event::kGraphDef) {
        proto::GraphDef graph;
        ASSERT_TRUE(graph.ParseFromString(e.graph_def())) << "record " << r;
        graph_defs.push_back({{"record", r},
                              {"nodes", graph.node_size()},
                              {"producer", graph.versions().producer()},
                              {"first_node", {graph.node(0).name(), graph.node(0).op()}}});
      }
      if (e.has_session_log()) {
        session_logs.push_back(
            {{"record", r},
             {"status", proto::SessionLog::SessionStatus_Name(e.session_log().status())},
             {"step", e.step()}});
      }
    }
    EXPECT_EQ(json(kinds), want.at("kinds"));
    EXPECT_EQ(json(scalar_counts), want.at("scalar_counts"));
    EXPECT_EQ(graph_defs, want.at("graph_defs"));
    EXPECT_EQ(session_logs, want.at("session_logs"));

    // Floats: compare as the float32 the file stores (JSON holds its double expansion).
    ASSERT_EQ(first_scalars.size(), want.at("first_scalars").size());
    for (size_t i = 0; i < first_scalars.size(); ++i) {
      const json& w = want["first_scalars"][i];
      EXPECT_EQ(first_scalars[i]["record"], w["record"]);
      EXPECT_EQ(first_scalars[i]["tag"], w["tag"]);
      EXPECT_EQ(first_scalars[i]["step"], w["step"]);
      EXPECT_EQ(first_scalars[i]["simple_value"].get<float>(), w["simple_value"].get<float>());
    }
    ASSERT_EQ(histograms.size(), want.at("histograms").size());
    for (const auto& [tag, w] : want.at("histograms").items()) {
      SCOPED_TRACE(tag);
      ASSERT_TRUE(histograms.count(tag));
      for (const auto& [field, value] : w.items()) {
        if (value.is_number_float()) {
          EXPECT_DOUBLE_EQ(histograms[tag][field].get<double>(), value.get<double>()) << field;
        } else {
          EXPECT_EQ(histograms[tag][field], value) << field;
        }
      }
    }
  }
}

TEST_F(SharedTestdataTest, TfRecordFilesMatchExpectedValues) {
  std::vector<std::string> files = FilesUnder("tfrecord/");
  ASSERT_EQ(files.size(), 4u);
  for (const std::string& name : files) {
    SCOPED_TRACE(name);
    const json& want = expected_[name];
    const Compression compression = ParseCompression(want.at("compression").get<std::string>());
    auto reader =
        RecordReader::Open(Env::Default(), JoinPath(root_, name), {.compression = compression});
    std::vector<std::string> records;
    std::string record;
    while (reader->ReadRecord(&record)) records.push_back(record);
    ASSERT_EQ(records.size(), want.at("records").get<size_t>());
    if (want.contains("record_lengths")) {
      for (size_t i = 0; i < records.size(); ++i) {
        EXPECT_EQ(records[i].size(), want["record_lengths"][i].get<size_t>());
      }
    }
    if (!want.contains("first_example")) continue;

    // The first Example, feature by feature, through the proto and through the parser.
    const json& first = want["first_example"];
    proto::Example example = ParseExampleProto(records[0], "record 0 of " + name);
    EXPECT_EQ(example.features().feature_size(), static_cast<int>(first.size()));
    ExampleSpec spec;
    for (const auto& [feature, w] : first.items()) {
      const std::string kind = w.at("kind");
      spec.var_len[feature].dtype = kind == "float_list"   ? kFloat32
                                    : kind == "int64_list" ? kInt64
                                                           : kString;
    }
    ParsedFeatures parsed = ParseExample(records[0], spec, "record 0");
    for (const auto& [feature, w] : first.items()) {
      SCOPED_TRACE(feature);
      ASSERT_TRUE(example.features().feature().count(feature));
      const proto::Feature& f = example.features().feature().at(feature);
      const Tensor& values = parsed[feature].values;
      // expected.json lists at most the first five values of a feature.
      const json& v = w["values"];
      ASSERT_GE(values.NumElements(), static_cast<int64_t>(v.size()));
      if (v.size() < 5) {
        ASSERT_EQ(values.NumElements(), static_cast<int64_t>(v.size()));
      }
      if (w["kind"] == "float_list") {
        ASSERT_EQ(f.float_list().value_size(), values.NumElements());
        for (size_t i = 0; i < v.size(); ++i) {
          EXPECT_EQ(values.flat<float>()[i], v[i].get<float>());
        }
      } else if (w["kind"] == "int64_list") {
        ASSERT_EQ(f.int64_list().value_size(), values.NumElements());
        for (size_t i = 0; i < v.size(); ++i) {
          EXPECT_EQ(values.flat<int64_t>()[i], v[i].get<int64_t>());
        }
      } else {
        ASSERT_EQ(f.bytes_list().value_size(), values.NumElements());
        for (size_t i = 0; i < v.size(); ++i) {
          EXPECT_EQ(values.flat<std::string>()[i], v[i].get<std::string>());
        }
      }
    }
    // Every record parses with the same spec as one ragged batch.
    ParsedFeatures batch = ParseExampleBatch(records, spec);
    for (const auto& [feature, p] : batch) {
      EXPECT_EQ(p.row_splits.NumElements(), static_cast<int64_t>(records.size() + 1));
    }
  }
}

// Seeking to a saved offset works on the real gzip files too (rewind and skip).
TEST_F(SharedTestdataTest, SeekInGzipFileRestoresPosition) {
  const std::string path = JoinPath(root_, "tfrecord/tfx_tfjs_next_page_data.tfrecord.gz");
  auto reader = RecordReader::Open(Env::Default(), path, {.compression = Compression::kGzip});
  std::string record;
  std::vector<std::pair<uint64_t, std::string>> seen;
  for (int i = 0; i < 60; ++i) {
    uint64_t offset = reader->offset();
    ASSERT_TRUE(reader->ReadRecord(&record));
    seen.emplace_back(offset, record);
  }
  for (int i : {42, 7, 59, 0}) {
    reader->Seek(seen[i].first);
    ASSERT_TRUE(reader->ReadRecord(&record));
    EXPECT_EQ(record, seen[i].second) << "record " << i;
  }
}

}  // namespace
}  // namespace loom
