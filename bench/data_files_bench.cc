// File-source benchmarks (issue 3, "Speed and memory"), one JSON line per figure:
//  1. Shuffle(100000) -> Repeat -> Batch(256) -> Prefetch(2) over a memory-mapped .npy of
//     N x 784 float32 (+ int64 labels), batches/s, beside the same pipeline over in-memory
//     FromTensorSlices of the same arrays.
//  2. TFRecord, MB/s of file bytes: a raw read loop over the file (the ceiling); the
//     RecordReader alone (framing + both CRCs, no Dataset); TFRecordDataset alone;
//     libprotobuf parsing each record into a proto::Example (the peer: what TF1 code that
//     parses with the generated protobuf classes does, with no tensors built); and
//     TFRecordDataset -> Batch(256) -> ParseExamples (784 floats + a label per Example).
//
//   data_files_bench [N=1000000] [records=200000] [dir=/tmp] [seconds=5] [only]
//
// `only`: run just the TFRecord measurements whose name contains it (for profiling).
// N = 0 skips part 1; records = 0 skips part 2.
// N = 1,000,000 writes a 3.1 GB .npy into dir (and holds the same arrays in memory);
// the files are deleted at the end.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "loom/data/file_sources.h"
#include "loom/io/example_builder.h"
#include "loom/io/example_proto.h"
#include "loom/io/npy.h"
#include "loom/io/record_reader.h"
#include "loom/io/record_writer.h"

namespace loom::data {
namespace {

using Clock = std::chrono::steady_clock;
constexpr int64_t kCols = 784;
constexpr int64_t kBatch = 256;

double Seconds(Clock::time_point since) {
  return std::chrono::duration<double>(Clock::now() - since).count();
}

// Batches/s of the training pipeline over `source`, after 20 warm-up batches.
double PipelineBatchesPerSecond(const Dataset& source, double seconds) {
  auto it = source.Shuffle(100000, {.seed = 1}).Repeat().Batch(kBatch).Prefetch(2).MakeIterator();
  for (int i = 0; i < 20; ++i) it->GetNext();
  int64_t batches = 0;
  double checksum = 0;
  const auto start = Clock::now();
  while (Seconds(start) < seconds) {
    for (int i = 0; i < 50; ++i, ++batches) checksum += it->GetNext()->at("x").flat<float>()[0];
  }
  const double rate = batches / Seconds(start);
  if (checksum == -1) std::printf("#");  // keeps the loop observable
  return rate;
}

void BenchNpy(int64_t n, const std::string& dir, double seconds) {
  Env* env = Env::Default();
  Tensor x(kFloat32, Shape{n, kCols});
  Tensor y(kInt64, Shape{n});
  float* xs = x.data<float>();
  for (int64_t i = 0; i < n * kCols; ++i) xs[i] = static_cast<float>(i % 1000) * 0.001f;
  for (int64_t i = 0; i < n; ++i) y.data<int64_t>()[i] = i % 10;
  const std::string xp = JoinPath(dir, "loom_bench_x.npy"), yp = JoinPath(dir, "loom_bench_y.npy");
  auto start = Clock::now();
  WriteNpy(env, xp, x, {.atomic = false});
  WriteNpy(env, yp, y, {.atomic = false});
  std::printf("{\"bench\":\"npy_write\",\"n\":%lld,\"bytes\":%llu,\"seconds\":%.3f}\n",
              static_cast<long long>(n), static_cast<unsigned long long>(env->GetFileSize(xp)),
              Seconds(start));

  const double mem = PipelineBatchesPerSecond(FromTensorSlices({{"x", x}, {"label", y}}), seconds);
  std::printf(
      "{\"bench\":\"shuffle_repeat_batch256_prefetch2\",\"source\":\"FromTensorSlices\","
      "\"n\":%lld,\"batches_per_s\":%.1f}\n",
      static_cast<long long>(n), mem);
  const double mapped = PipelineBatchesPerSecond(FromNpy({{"x", xp}, {"label", yp}}), seconds);
  std::printf(
      "{\"bench\":\"shuffle_repeat_batch256_prefetch2\",\"source\":\"FromNpy(mmap)\","
      "\"n\":%lld,\"batches_per_s\":%.1f,\"vs_in_memory\":%.3f}\n",
      static_cast<long long>(n), mapped, mapped / mem);
  std::fflush(stdout);
  env->DeleteFile(xp);
  env->DeleteFile(yp);
}

void BenchTFRecord(int64_t records, const std::string& dir, double seconds,
                   const std::string& only) {
  Env* env = Env::Default();
  const std::string path = JoinPath(dir, "loom_bench.tfrecord");
  {
    auto writer = RecordWriter::Open(env, path, {});
    std::vector<float> pixels(kCols);
    for (int64_t r = 0; r < records; ++r) {
      for (int64_t i = 0; i < kCols; ++i) pixels[i] = static_cast<float>((r + i) % 255) / 255.0f;
      writer->WriteRecord(
          ExampleBuilder().AddFloats("image", pixels).AddInt64s("label", {r % 10}).Serialize());
    }
    writer->Close();
  }
  const double mb = env->GetFileSize(path) / 1e6;
  // Runs `pass` once to warm up (page cache, allocator), then repeats whole passes until
  // `seconds` have elapsed, and prints MB/s of file bytes. Skipped unless `what` contains
  // `only`.
  auto measure = [&](const char* what, auto&& pass) {
    if (std::string(what).find(only) == std::string::npos) return;
    pass();
    int passes = 0;
    const auto start = Clock::now();
    do {
      pass();
      ++passes;
    } while (Seconds(start) < seconds);
    std::printf(
        "{\"bench\":\"tfrecord\",\"what\":\"%s\",\"records\":%lld,\"file_mb\":%.1f,"
        "\"mb_per_s\":%.1f}\n",
        what, static_cast<long long>(records), mb, mb * passes / Seconds(start));
    std::fflush(stdout);
  };

  std::vector<char> buffer(1 << 20);
  measure("raw_read_loop", [&] {
    auto file = env->NewSequentialFile(path);
    uint64_t total = 0;
    while (size_t got = file->Read(buffer.size(), buffer.data())) total += got;
    if (total == 0) std::printf("#");
  });

  std::string record;
  measure("RecordReader", [&] {
    auto reader = RecordReader::Open(env, path, {});
    while (reader->ReadRecord(&record)) {
    }
  });

  measure("RecordReader+protobuf_Example_parse", [&] {
    auto reader = RecordReader::Open(env, path, {});
    proto::Example example;
    int64_t values = 0;
    while (reader->ReadRecord(&record)) {
      if (!example.ParseFromString(record)) std::printf("#");
      values += example.features().feature().size();
    }
    if (values == 0) std::printf("#");
  });

  Dataset records_ds = TFRecordDataset({path});
  measure("TFRecordDataset", [&] {
    auto it = records_ds.MakeIterator();
    while (it->GetNext()) {
    }
  });

  Dataset batched = records_ds.Batch(kBatch);
  measure("TFRecordDataset+Batch256", [&] {
    auto it = batched.MakeIterator();
    while (it->GetNext()) {
    }
  });

  ExampleSpec spec;
  spec.fixed["image"] = {.dtype = kFloat32, .shape = {kCols}};
  spec.fixed["label"] = {.dtype = kInt64};
  // ParseExampleBatch alone, over batches of records already in memory (freed after, so
  // that the heap they take does not shape the next measurement).
  if (std::string("ParseExampleBatch(in_memory)").find(only) != std::string::npos) {
    std::vector<std::vector<std::string>> record_batches;
    auto reader = RecordReader::Open(env, path, {});
    while (reader->ReadRecord(&record)) {
      if (record_batches.empty() || record_batches.back().size() == kBatch) {
        record_batches.emplace_back();
      }
      record_batches.back().push_back(record);
    }
    measure("ParseExampleBatch(in_memory)", [&] {
      for (const auto& b : record_batches) ParseExampleBatch(b, spec);
    });
  }

  Dataset parsed = ParseExamples(records_ds.Batch(kBatch), spec);
  measure("TFRecordDataset+Batch256+ParseExamples", [&] {
    auto it = parsed.MakeIterator();
    while (it->GetNext()) {
    }
  });
  env->DeleteFile(path);
}

}  // namespace
}  // namespace loom::data

int main(int argc, char** argv) {
  const int64_t n = argc > 1 ? std::atoll(argv[1]) : 1000000;
  const int64_t records = argc > 2 ? std::atoll(argv[2]) : 200000;
  const std::string dir = argc > 3 ? argv[3] : "/tmp";
  const double seconds = argc > 4 ? std::atof(argv[4]) : 5.0;
  const std::string only = argc > 5 ? argv[5] : "";
  try {
    if (n > 0) loom::data::BenchNpy(n, dir, seconds);
    if (records > 0) loom::data::BenchTFRecord(records, dir, seconds, only);
  } catch (const loom::Error& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 1;
  }
  return 0;
}
