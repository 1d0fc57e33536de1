// fuzz_seed_writer OUT_DIR: writes the generated part of the seed corpora (fuzz/corpus/)
// with Loom's own writers, so that each seed is a small valid file of its format. Run it
// after changing a format or a harness's pipelines (docs/fuzzing.md); the output is
// committed. Real files from other tools sit beside these, copied by hand (SOURCES.md).
#include <cstdio>
#include <string>
#include <vector>

#include "fuzz/iterator_state.h"
#include "loom/base/env.h"
#include "loom/base/error.h"
#include "loom/data/iterator.h"
#include "loom/graph/graph.h"
#include "loom/graph/graph_def.h"
#include "loom/graph/scope.h"
#include "loom/io/byte_stream.h"
#include "loom/io/example_builder.h"
#include "loom/io/idx.h"
#include "loom/io/npy.h"
#include "loom/io/record_writer.h"
#include "loom/io/safetensors.h"
#include "loom/ops/array.h"
#include "loom/ops/math.h"
#include "loom/ops/matmul.h"
#include "loom/ops/state.h"
#include "loom/train/saver.h"

namespace loom {
namespace {

Env* env = Env::Default();

void WriteSeed(const std::string& path, std::string_view bytes) {
  env->CreateDirs(Dirname(path));
  auto f = env->NewWritableFile(path);
  f->Append(bytes);
  f->Close();
}

std::vector<std::string> Examples() {
  std::vector<std::string> out;
  out.push_back(ExampleBuilder()
                    .AddFloats("f", {1.5f, -2})
                    .AddInt64s("label", {1})
                    .AddInt64s("i", {3, -4, 1LL << 40})
                    .AddBytes("s", {"ab", ""})
                    .AddFloats("v", {0.25f})
                    .Serialize());
  out.push_back(ExampleBuilder().AddFloats("f", {0, 1}).AddInt64s("label", {0}).Serialize());
  out.push_back(ExampleBuilder()
                    .AddBytes("s", {"word"})
                    .AddFloats("v", {})
                    .AddInt64s("other", {7})
                    .Serialize());
  out.push_back(ExampleBuilder().Serialize());
  return out;
}

void Records(const std::string& dir, Compression c) {
  const std::vector<std::string> examples = Examples();
  for (int n : {0, 1, 4}) {
    const std::string path = JoinPath(dir, StrCat("records_", n));
    env->CreateDirs(dir);
    auto w = RecordWriter::Open(env, path, {.compression = c});
    for (int i = 0; i < n; ++i) w->WriteRecord(examples[i % examples.size()]);
    w->WriteRecord(n == 4 ? std::string(300, 'x') : "");
    w->Close();
  }
}

void Gzip(const std::string& from, const std::string& to) {
  const std::string bytes = ReadFileToString(env, from);
  auto out = NewCompressingOutputStream(NewFileOutputStream(env->NewWritableFile(to), to),
                                        Compression::kGzip, -1, to);
  out->Append(bytes);
  out->Close();
}

void Arrays(const std::string& root) {
  env->CreateDirs(JoinPath(root, "npy"));
  WriteNpy(env, JoinPath(root, "npy/f32_2x3.npy"),
           Tensor::FromVector<float>({1, 2, 3, 4, 5, 6}, Shape{2, 3}));
  WriteNpy(env, JoinPath(root, "npy/i64_4.npy"), Tensor::FromVector<int64_t>({1, -2, 3, 4}));
  WriteNpy(env, JoinPath(root, "npy/u8_scalar.npy"), Tensor::Scalar<uint8_t>(7));
  WriteNpy(env, JoinPath(root, "npy/bool_0x2.npy"), Tensor(kBool, Shape{0, 2}));

  env->CreateDirs(JoinPath(root, "safetensors"));
  WriteSafetensors(env, JoinPath(root, "safetensors/loom_mixed.safetensors"),
                   {{"a", Tensor::FromVector<uint8_t>({1, 2, 3})},
                    {"b", Tensor::FromVector<float>({1, 2, 3, 4}, Shape{2, 2})},
                    {"c", Tensor::Scalar<int64_t>(5)},
                    {"empty", Tensor(kFloat64, Shape{0, 3})}},
                   {{"format", "pt"}, {"global_step", "12"}});
  WriteSafetensors(env, JoinPath(root, "safetensors/loom_empty.safetensors"), {});

  env->CreateDirs(JoinPath(root, "idx"));
  WriteIdx(env, JoinPath(root, "idx/images-idx3-ubyte"), Tensor(kUInt8, Shape{2, 3, 3}));
  WriteIdx(env, JoinPath(root, "idx/labels-idx1-ubyte"), Tensor::FromVector<uint8_t>({1, 9, 0}));
  WriteIdx(env, JoinPath(root, "idx/f32-idx2"),
           Tensor::FromVector<float>({1.5f, 2, 3, 4}, Shape{2, 2}));
  WriteIdx(env, JoinPath(root, "idx/i32-idx1"), Tensor::FromVector<int32_t>({-1, 1 << 20}));
  Gzip(JoinPath(root, "idx/images-idx3-ubyte"), JoinPath(root, "idx/images-idx3-ubyte.gz"));
  Gzip(JoinPath(root, "idx/f32-idx2"), JoinPath(root, "idx/f32-idx2.gz"));
}

void Csv(const std::string& dir) {
  // The first byte is the harness's option flags (csv_fuzzer.cc).
  WriteSeed(JoinPath(dir, "plain.csv"),
            std::string("\x00", 1) + "1.5,2,abc,0.25,7\n,3,\"q,\"\"x\"\"\",1e3,-2\r\n");
  WriteSeed(JoinPath(dir, "header.csv"),
            std::string("\x04", 1) + "a,b,c,d,e\n1,2,x,3,4\nNA,5,y,,\n");
  WriteSeed(JoinPath(dir, "select.csv"),
            std::string("\x18", 1) + "1,2,3,4\nNA,x,nan,inf\n\n\"multi\nline\",1,2,3\n");
  WriteSeed(JoinPath(dir, "batch.csv"),
            std::string("\x63", 1) + "1;2;x;3;4\n5;6;y;7;8\n9;10;z;11;12\n");
}

void Graphs(const std::string& dir) {
  Graph g;
  Scope s(g);
  auto x = Placeholder(s.WithOpName("x"), kFloat32, {-1, 2});
  auto w = Variable(s.WithOpName("w"), Const<float>(s, {1, 2, 3, 4}, Shape{2, 2}));
  auto c = Const<float>(s.WithOpName("c"), {1, 2, 3, 4}, Shape{2, 2});
  auto y = MatMul(s.WithOpName("y"), x, w);
  auto z = Add(s.WithOpName("z"), y, c);
  Reshape(s.WithOpName("r"), z, {-1});
  env->CreateDirs(dir);
  // An 8-byte threshold sends "c" and w's initial value to a sidecar; the harness provides
  // one holding "c".
  ExportGraph(g, env, JoinPath(dir, "small.pb"), {.inline_constant_bytes = 8});
  env->DeleteFile(GraphSidecarPath(JoinPath(dir, "small.pb")));
  ExportGraph(g, env, JoinPath(dir, "inline.pb"));

  Graph g2;
  Scope s2(g2);
  auto a = Const<int64_t>(s2.WithOpName("a"), {1, 2, 3, 4, 5, 6}, Shape{2, 3});
  auto t = Transpose(s2.WithOpName("t"), a, {1, 0});
  Concat(s2.WithOpName("cat"), {t, t}, 0);
  Const(s2.WithOpName("str"), Tensor::ScalarString("hello"));
  ExportGraph(g2, env, JoinPath(dir, "ints.pb"));
}

void CheckpointStates(const std::string& dir) {
  env->CreateDirs(dir);
  train::CheckpointState state{
      .model_checkpoint_path = "/model/model.ckpt-5",
      .all_model_checkpoint_paths = {"/model/model.ckpt-3", "/model/model.ckpt-5"},
      .all_model_checkpoint_timestamps = {1700000000.5, 1700000100.25},
      .last_preserved_timestamp = 1700000000};
  const std::string tmp = "/tmp/loom_seed_writer_ckpt";
  env->CreateDirs(tmp);
  train::WriteCheckpointState(env, tmp, state);
  WriteSeed(JoinPath(dir, "two_paths"), ReadFileToString(env, JoinPath(tmp, "checkpoint")));
  WriteSeed(JoinPath(dir, "relative"),
            "model_checkpoint_path: \"model.ckpt-5\"\nall_model_checkpoint_paths: "
            "\"model.ckpt-5\"\n");
  WriteSeed(JoinPath(dir, "escapes"),
            "model_checkpoint_path: \"a\\\"b\\\\c\\n\\101-9\"\r\nunknown_field: 3\n");
  env->DeleteRecursively(tmp);
}

void IteratorStates(const std::string& dir) {
  env->CreateDirs(dir);
  const std::vector<data::Dataset> pipelines = fuzz::IteratorStatePipelines();
  for (size_t p = 0; p < pipelines.size(); ++p) {
    auto it = pipelines[p].MakeIterator();
    for (int step = 0; step <= 9; ++step) {
      if (step == 0 || step == 3 || step == 9) {
        WriteSeed(JoinPath(dir, StrCat("pipeline", p, "_step", step)),
                  std::string(1, static_cast<char>(p)) + it->Save());
      }
      if (!it->GetNext()) break;
    }
  }
}

}  // namespace
}  // namespace loom

int main(int argc, char** argv) {
  using namespace loom;
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s OUT_DIR (usually fuzz/corpus)\n", argv[0]);
    return 2;
  }
  const std::string root = argv[1];
  try {
    Records(JoinPath(root, "tfrecord"), Compression::kNone);
    Records(JoinPath(root, "tfrecord_gzip"), Compression::kGzip);
    Records(JoinPath(root, "tfrecord_zlib"), Compression::kZlib);
    const std::vector<std::string> examples = Examples();
    for (size_t i = 0; i < examples.size(); ++i) {
      WriteSeed(JoinPath(root, StrCat("example/example_", i)), examples[i]);
    }
    Arrays(root);
    Csv(JoinPath(root, "csv"));
    Graphs(JoinPath(root, "graph_def"));
    CheckpointStates(JoinPath(root, "checkpoint_state"));
    IteratorStates(JoinPath(root, "iterator_state"));
  } catch (const Error& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 1;
  }
  return 0;
}
