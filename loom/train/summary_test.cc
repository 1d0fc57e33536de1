// Summary ops and the FileWriter: values written as event files and read back.
#include <gtest/gtest.h>
#include <zlib.h>

#include <cfloat>
#include <cmath>
#include <regex>

#include "loom/io/event_file_proto.h"
#include "loom/io/proto/graph.pb.h"
#include "loom/ops/state.h"
#include "loom/runtime/session.h"
#include "loom/train/file_writer.h"
#include "loom/train/runtime_test_util.h"
#include "loom/train/summary_proto.h"

namespace loom::train {
namespace {

using testing::TempDir;

std::vector<proto::Event> ReadEvents(const std::string& path) {
  std::vector<proto::Event> events;
  auto reader = EventFileReader::Open(Env::Default(), path);
  while (auto e = reader->Next()) events.push_back(*e);
  return events;
}

uint32_t BigEndian32(const std::string& s, size_t at) {
  return (uint8_t(s[at]) << 24) | (uint8_t(s[at + 1]) << 16) | (uint8_t(s[at + 2]) << 8) |
         uint8_t(s[at + 3]);
}

// A minimal PNG decoder for what EncodePng writes (8-bit, filter 0): checks every chunk
// CRC and returns the pixels.
std::vector<uint8_t> DecodePng(const std::string& png, int* width, int* height, int* channels) {
  EXPECT_EQ(png.substr(0, 8), std::string("\x89PNG\r\n\x1a\n", 8));
  std::string idat;
  size_t at = 8;
  while (at < png.size()) {
    const uint32_t len = BigEndian32(png, at);
    const std::string type = png.substr(at + 4, 4);
    const std::string data = png.substr(at + 8, len);
    uLong crc = crc32(0, reinterpret_cast<const Bytef*>(png.data() + at + 4), 4 + len);
    EXPECT_EQ(crc, BigEndian32(png, at + 8 + len)) << type;
    if (type == "IHDR") {
      *width = BigEndian32(data, 0);
      *height = BigEndian32(data, 4);
      static const std::map<int, int> kChannels = {{0, 1}, {4, 2}, {2, 3}, {6, 4}};
      *channels = kChannels.at(data[9]);
    }
    if (type == "IDAT") idat += data;
    at += 12 + len;
  }
  const size_t row = static_cast<size_t>(*width) * *channels;
  std::string raw((row + 1) * *height, '\0');
  uLongf raw_size = raw.size();
  EXPECT_EQ(uncompress(reinterpret_cast<Bytef*>(raw.data()), &raw_size,
                       reinterpret_cast<const Bytef*>(idat.data()), idat.size()),
            Z_OK);
  std::vector<uint8_t> pixels;
  for (int y = 0; y < *height; ++y) {
    EXPECT_EQ(raw[y * (row + 1)], 0);  // filter type None
    pixels.insert(pixels.end(), raw.begin() + y * (row + 1) + 1, raw.begin() + (y + 1) * (row + 1));
  }
  return pixels;
}

TEST(Histogram, TensorFlowDefaultBuckets) {
  const auto& limits = DefaultHistogramBucketLimits();
  ASSERT_EQ(limits.size(), 1551u);
  EXPECT_EQ(limits.front(), -DBL_MAX);
  EXPECT_EQ(limits.back(), DBL_MAX);
  EXPECT_EQ(limits[775], 0.0);
  EXPECT_EQ(limits[776], 1e-12);
  EXPECT_DOUBLE_EQ(limits[777], 1.1e-12);
  EXPECT_TRUE(std::is_sorted(limits.begin(), limits.end()));

  // 0 falls in [0, 1e-12); 1.0 in [1.1^k·1e-12, ...) ; empty runs collapse.
  proto::HistogramProto h = HistogramFromValues({0.0, 1.0, 1.0, -2.5});
  EXPECT_EQ(h.num(), 4);
  EXPECT_EQ(h.min(), -2.5);
  EXPECT_EQ(h.max(), 1.0);
  EXPECT_EQ(h.sum(), -0.5);
  EXPECT_EQ(h.sum_squares(), 8.25);
  double total = 0;
  for (double c : h.bucket()) total += c;
  EXPECT_EQ(total, 4);
  ASSERT_EQ(h.bucket_size(), h.bucket_limit_size());
  // Non-empty buckets end just above their values; each is preceded by a collapsed run.
  std::vector<std::pair<double, double>> nonempty;
  for (int i = 0; i < h.bucket_size(); ++i) {
    if (h.bucket(i) > 0) nonempty.emplace_back(h.bucket_limit(i), h.bucket(i));
  }
  ASSERT_EQ(nonempty.size(), 3u);
  EXPECT_EQ(nonempty[1], (std::pair<double, double>{1e-12, 1}));  // the zero
  EXPECT_GT(nonempty[2].first, 1.0);
  EXPECT_LT(nonempty[2].first, 1.1);
  EXPECT_EQ(nonempty[2].second, 2);
  EXPECT_GT(nonempty[0].first, -2.5);
  EXPECT_EQ(h.bucket_limit(h.bucket_limit_size() - 1), DBL_MAX);
  EXPECT_EQ(h.bucket_size(), 7);  // run, -2.5, run, 0, run, 1.0, run to DBL_MAX

  EXPECT_THROW(HistogramFromValues({1.0, NAN}, "weights"), Error);
  proto::HistogramProto empty = HistogramFromValues({});
  ASSERT_EQ(empty.bucket_size(), 1);
  EXPECT_EQ(empty.bucket_limit(0), DBL_MAX);
}

TEST(Png, RoundTripsPixels) {
  std::vector<uint8_t> rgb;
  for (int i = 0; i < 5 * 3 * 3; ++i) rgb.push_back(static_cast<uint8_t>(i * 5));
  int w, h, c;
  auto back = DecodePng(EncodePng(rgb.data(), 5, 3, 3), &w, &h, &c);
  EXPECT_EQ(w, 5);
  EXPECT_EQ(h, 3);
  EXPECT_EQ(c, 3);
  EXPECT_EQ(back, rgb);
}

TEST(SummaryOps, RunInASessionAndMerge) {
  Graph graph;
  Scope s(graph);
  Scope train = s.NewSubScope("train");
  Output loss = Placeholder(s.WithOpName("loss"), kFloat32, Shape{});
  Output a = ScalarSummary(train, "loss", loss);
  Output b = HistogramSummary(s, "weights", Const(s, Tensor::FromVector<float>({1, 2, 3})));
  Output t = TextSummary(s, "note", Const(s, Tensor::ScalarString("hello")));
  Output merged = MergeSummary(s, {a, b, t});
  Output all = MergeAllSummaries(s);
  Output dup = MergeSummary(s, {a, a});
  Session session(graph);
  auto out = session.Run({{loss, Tensor::Scalar<float>(0.25f)}}, {merged, all});
  for (const Tensor& bytes : out) {
    proto::Summary summary;
    ASSERT_TRUE(summary.ParseFromString(bytes.scalar<std::string>()));
    ASSERT_EQ(summary.value_size(), 3);
    EXPECT_EQ(summary.value(0).tag(), "train/loss");
    EXPECT_EQ(summary.value(0).simple_value(), 0.25f);
    EXPECT_EQ(summary.value(1).histo().num(), 3);
    EXPECT_EQ(summary.value(2).metadata().plugin_data().plugin_name(), "text");
    EXPECT_EQ(summary.value(2).tensor().string_val(0), "hello");
  }
  try {
    session.Run({{loss, Tensor::Scalar<float>(1)}}, {dup});
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("Duplicate tag train/loss"), std::string::npos)
        << e.what();
  }
  OpRegistry registry;
  RegisterSummaryOps(registry);
  EXPECT_NE(registry.Find("HistogramSummary"), nullptr);
  EXPECT_NE(registry.Find("MergeSummary"), nullptr);
}

TEST(FileWriter, ScalarsHistogramImageReadBack) {
  TempDir dir;
  Graph graph;
  Scope s(graph);
  Output x = Placeholder(s.WithOpName("x"), kFloat32, Shape{});
  Output images = Placeholder(s.WithOpName("images"), kFloat32, Shape{2, 2, 2, 1});
  Output scalar = ScalarSummary(s, "x", x);
  Output hist = HistogramSummary(s, "x_hist", x);
  Output image = ImageSummary(s, "img", images, /*max_images=*/1);
  Output merged = MergeSummary(s, {scalar, hist, image});
  // A 2 MiB constant: the event file keeps only its dtype and shape.
  Const(s.WithOpName("big"), Tensor::Zeros(kFloat32, Shape{512, 1024}));
  Session session(graph);
  std::string path;
  {
    FileWriter writer(dir.path());
    path = writer.path();
    writer.AddGraph(graph);
    writer.AddGraph(graph);  // once per writer
    proto::SessionLog start;
    start.set_status(proto::SessionLog::START);
    writer.AddSessionLog(start, 0);
    Tensor pixels = Tensor::FromVector<float>({0, 1, 2, 4, -1, 0, 1, NAN}, Shape{2, 2, 2, 1});
    for (int step = 1; step <= 3; ++step) {
      auto out = session.Run({{x, Tensor::Scalar<float>(step * 0.5f)}, {images, pixels}}, {merged});
      writer.AddSummary(out[0].scalar<std::string>(), step);
    }
  }  // the destructor flushes and closes
  EXPECT_TRUE(std::regex_match(Basename(path),
                               std::regex(R"(events\.out\.tfevents\.\d{10}\..+\.\d+\.\d+)")))
      << path;
  EXPECT_LT(Env::Default()->GetFileSize(path), 64 << 10);
  auto events = ReadEvents(path);
  ASSERT_EQ(events.size(), 1u + 1 + 1 + 3);
  EXPECT_EQ(events[0].file_version(), "brain.Event:2");
  proto::GraphDef def;
  ASSERT_TRUE(def.ParseFromString(events[1].graph_def()));
  bool saw_big = false;
  for (const auto& node : def.node()) saw_big = saw_big || node.name() == "big";
  EXPECT_TRUE(saw_big);
  EXPECT_EQ(events[2].session_log().status(), proto::SessionLog::START);
  for (int step = 1; step <= 3; ++step) {
    const proto::Event& e = events[2 + step];
    EXPECT_EQ(e.step(), step);
    EXPECT_GT(e.wall_time(), 1.6e9);
    ASSERT_EQ(e.summary().value_size(), 3);
    EXPECT_EQ(e.summary().value(0).tag(), "x");
    EXPECT_EQ(ScalarValue(e.summary().value(0)), step * 0.5);
    EXPECT_EQ(e.summary().value(1).histo().num(), 1);
    EXPECT_EQ(e.summary().value(1).histo().sum(), step * 0.5);
    const auto& img = e.summary().value(2);
    EXPECT_EQ(img.tag(), "img/image");
    EXPECT_EQ(img.image().height(), 2);
    EXPECT_EQ(img.image().width(), 2);
    EXPECT_EQ(img.image().colorspace(), 1);
    int w, h, c;
    auto px = DecodePng(img.image().encoded_image_string(), &w, &h, &c);
    // The first image is all >= 0: scaled so its max (4) becomes 255.
    EXPECT_EQ(px, (std::vector<uint8_t>{0, 63, 127, 255}));
  }
}

TEST(ImageSummary, SignedFloatImagesAndBatches) {
  Tensor images =
      Tensor::FromVector<float>({-1, 0, 1, 0.5f, 0, 0, 0, 0, NAN, 1, 2, 3}, Shape{3, 1, 4, 1});
  proto::Summary s = ImageSummaryProto("batch", images, /*max_images=*/2);
  ASSERT_EQ(s.value_size(), 2);
  EXPECT_EQ(s.value(0).tag(), "batch/image/0");
  EXPECT_EQ(s.value(1).tag(), "batch/image/1");
  int w, h, c;
  auto px = DecodePng(s.value(0).image().encoded_image_string(), &w, &h, &c);
  EXPECT_EQ(px, (std::vector<uint8_t>{1, 128, 255, 191}));  // 128 + 127·v, truncated
  px = DecodePng(s.value(1).image().encoded_image_string(), &w, &h, &c);
  EXPECT_EQ(px, (std::vector<uint8_t>{0, 0, 0, 0}));  // all zero: scale 0
  EXPECT_THROW(ImageSummaryProto("bad", Tensor::Zeros(kFloat32, Shape{1, 2, 2, 2})), Error);
}

}  // namespace
}  // namespace loom::train
