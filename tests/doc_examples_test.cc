// The C++ examples of docs/*.md, compiled and run as printed. Each block between
// "// doc-example: FILE" and "// doc-example-end" is a copy of lines of FILE (its common
// indentation aside); tests/doc_examples_test.sh checks that every such block still
// appears in its file (clang-format is off inside them), so an example that drifts from the API
// fails to build here or fails that check. A line of a block that ends in `// doc: TEXT` stands for
// the doc's line TEXT (an elision such as `auto loss = ...;` that C++ cannot compile). The doc
// blocks not here are listed, with the reason, in doc_examples_test.sh. The README's
// example is examples/readme_example.cc (tests/readme_test.sh).
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <iostream>
#include <map>
#include <string>
#include <vector>

#include "loom/io/example_builder.h"
#include "loom/io/npy.h"
#include "loom/io/record_writer.h"
#include "loom/io/tf_checkpoint.h"
#include "loom/loom.h"
#include "loom/testing/temp_dir.h"
#include "loom/train/stop_signals.h"

namespace {

// Runs each test in a fresh current directory, since the examples use relative paths.
class DocExamples : public ::testing::Test {
 protected:
  void SetUp() override {
    old_cwd_ = std::filesystem::current_path();
    std::filesystem::current_path(dir_.path());
  }
  void TearDown() override { std::filesystem::current_path(old_cwd_); }

 private:
  loom::testing::TempDir dir_{"doc_examples"};
  std::filesystem::path old_cwd_;
};

loom::Tensor Normal(loom::Shape shape, float scale = 1.0f) {
  loom::Tensor t(loom::kFloat32, shape);
  float* p = t.data<float>();
  for (int64_t i = 0; i < t.NumElements(); ++i)
    p[i] = scale * static_cast<float>((i * 37 % 101) - 50) / 50;
  return t;
}

loom::Tensor Classes(int64_t n, int64_t k) {
  loom::Tensor t(loom::kInt64, {n});
  for (int64_t i = 0; i < n; ++i) t.data<int64_t>()[i] = i % k;
  return t;
}

TEST_F(DocExamples, GettingStartedGraphApi) {
  loom::Tensor images = Normal({32, 784}), classes = Classes(32, 10);
  // doc-example: docs/getting_started.md
  // clang-format off
  loom::Graph graph({.seed = 42});
  loom::Scope s(graph);
  auto x = loom::Placeholder(s.WithOpName("x"), loom::kFloat32, {-1, 784});
  auto labels = loom::Placeholder(s.WithOpName("labels"), loom::kInt64, {-1});
  auto logits = loom::layers::Dense(s, x, {.units = 10});
  auto loss = loom::Mean(s, loom::SparseSoftmaxCrossEntropyWithLogits(s, labels, logits));
  auto train_op = loom::train::GradientDescent({.learning_rate = 0.5}).Minimize(s, loss);
  auto init = loom::GlobalVariablesInitializer(s);
  graph.Finalize();

  loom::Session session(graph);
  session.RunTarget(init);
  auto values = session.Run({{x, images}, {labels, classes}}, {loss}, {train_op});
  // clang-format on
  // doc-example-end
  ASSERT_EQ(values.size(), 1u);
  const float first = values[0].scalar<float>();
  for (int i = 0; i < 20; ++i)
    values = session.Run({{x, images}, {labels, classes}}, {loss}, {train_op});
  EXPECT_LT(values[0].scalar<float>(), first);
}

// A Session made at its first Run, so that a block may build ops and then run them.
struct SessionOnFirstRun {
  loom::Graph& graph;
  std::unique_ptr<loom::Session> session;
  std::vector<loom::Tensor> Run(const loom::FeedList& feeds,
                                const std::vector<loom::Output>& fetches,
                                const std::vector<loom::Operation>& targets) {
    if (!session) session = std::make_unique<loom::Session>(graph);
    return session->Run(feeds, fetches, targets);
  }
};

TEST_F(DocExamples, DataPlaceholderIterator) {
  loom::Graph graph;
  loom::Scope scope(graph);
  SessionOnFirstRun session{graph, nullptr};
  loom::Tensor features_array = Normal({10, 2});
  // doc-example: docs/data.md
  // clang-format off
  auto x = loom::Placeholder(scope.WithOpName("x"), loom::kFloat32, {-1, 2});
  auto dataset = loom::data::FromTensorSlices(x).Shuffle(100000).Repeat().Batch(256);
  auto iterator = dataset.MakeInitializableIterator(scope);
  auto features = iterator.GetNext();                       // {"x": Output [?, 2]}
  session.Run({{x, features_array}}, {}, {iterator.initializer()});
  // clang-format on
  // doc-example-end
  std::vector<loom::Tensor> batch = session.Run({}, {features.at("x")}, {});
  EXPECT_EQ(batch[0].shape(), loom::Shape({256, 2}));
}

TEST_F(DocExamples, DataFileSources) {
  loom::Env* env = loom::Env::Default();
  loom::WriteNpy(env, "train_x.npy", Normal({300, 4}));
  loom::WriteNpy(env, "train_y.npy", Classes(300, 3));
  std::filesystem::create_directory("data");
  // Two GZIP files for the pattern, and the same records uncompressed for `files`.
  std::vector<std::string> files;
  for (int f = 0; f < 4; ++f) {
    const bool gzip = f < 2;
    const std::string path = gzip ? "data/train-" + std::to_string(f) + ".tfrecord.gz"
                                  : "plain-" + std::to_string(f) + ".tfrecord";
    if (!gzip) files.push_back(path);
    auto writer = loom::RecordWriter::Open(
        env, path, {.compression = gzip ? loom::Compression::kGzip : loom::Compression::kNone});
    for (int r = 0; r < 300; ++r) {
      std::vector<float> image(784, 0.01f * r);
      writer->WriteRecord(loom::ExampleBuilder()
                              .AddFloats("image", image)
                              .AddInt64s("label", {r % 10})
                              .AddBytes("tags", std::vector<std::string>(r % 3, "t"))
                              .Serialize());
    }
    writer->Close();
  }
  // doc-example: docs/data.md
  // clang-format off
  using namespace loom::data;

  // Arrays: index-addressable, so Shuffle/Batch gather rows by index (the fast path) and a
  // saved iterator holds indices, never elements.
  Dataset train = FromNpy({{"x", "train_x.npy"}, {"label", "train_y.npy"}})
                      .Shuffle(100000, {.seed = 1}).Repeat().Batch(256).Prefetch(2);

  // Records: stream, batch, then parse the batch.
  loom::ExampleSpec spec;
  spec.fixed["image"] = {.dtype = loom::kFloat32, .shape = {784}};
  spec.fixed["label"] = {.dtype = loom::kInt64};
  spec.var_len["tags"] = {.dtype = loom::kString};           // ragged: "tags", "tags_row_splits"
  auto stats = std::make_shared<TFRecordStats>();
  Dataset examples = ParseExamples(
      TFRecordDataset({"data/train-*.tfrecord.gz"},
                      {.compression = "GZIP", .skip_corrupt_records = true, .stats = stats})
          .Shuffle(10000).Batch(256),
      spec, {.num_parallel_calls = kAutotune});
  // stats->corrupt_records_skipped counts what skip_corrupt_records dropped.

  // Many files read side by side (tf.data's interleave over file names).
  Dataset names = FromTensorSlices(loom::Tensor::FromVector(files));
  Dataset mixed = names.Interleave(
      [](const Element& e) { return TFRecordDataset({e.at("x").scalar<std::string>()}); },
      {{kRecordKey, {loom::kString, loom::Shape{}}}}, {.cycle_length = 4, .num_parallel_calls = 4});
  // clang-format on
  // doc-example-end
  std::optional<Element> a = train.MakeIterator()->GetNext();
  ASSERT_TRUE(a.has_value());
  EXPECT_EQ(a->at("x").shape(), loom::Shape({256, 4}));
  std::optional<Element> b = examples.MakeIterator()->GetNext();
  ASSERT_TRUE(b.has_value());
  EXPECT_EQ(b->at("image").shape(), loom::Shape({256, 784}));
  EXPECT_EQ(b->at("tags_row_splits").shape(), loom::Shape({257}));
  EXPECT_EQ(stats->corrupt_records_skipped, 0);
  int64_t records = 0;
  for (auto it = mixed.MakeIterator(); it->GetNext();) ++records;
  EXPECT_EQ(records, 600);
}

constexpr int64_t kFeatures = 3;

TEST_F(DocExamples, PortingInitializerHookAndInputFn) {
  loom::Tensor features = Normal({64, kFeatures}), labels = Normal({64, 1});
  loom::Tensor train_images = Normal({800, 784}), train_labels = Classes(800, 10);
  loom::Graph graph;
  loom::Scope s(graph);
  // doc-example: docs/porting_from_tf1.md
  // clang-format off
  class IteratorInitializerHook : public loom::SessionRunHook {
   public:
    std::function<void(loom::Session&)> initialize;
    void AfterCreateSession(loom::Session& session) override { initialize(session); }
  };

  auto hook = std::make_shared<IteratorInitializerHook>();
  auto x = loom::Placeholder(s.WithOpName("features"), loom::kFloat32, {-1, kFeatures});
  auto y = loom::Placeholder(s.WithOpName("labels"), loom::kFloat32, {-1, 1});
  auto dataset = loom::data::FromTensorSlices({{"x", x}, {"label", y}})
                     .Shuffle(100000, {.seed = 1}).Repeat().Batch(256);
  auto iterator = dataset.MakeInitializableIterator(s);
  hook->initialize = [=](loom::Session& session) {
    session.Run({{x, features}, {y, labels}}, /*fetches=*/{}, /*targets=*/{iterator.initializer()});
  };
  std::map<std::string, loom::Output> batch = iterator.GetNext();  // feeds the model
  // clang-format on
  // doc-example-end
  auto session = loom::train::SingularMonitoredSession(graph, {hook});
  EXPECT_EQ(session->Run({}, {batch.at("x")})[0].shape(), loom::Shape({256, kFeatures}));

  // doc-example: docs/porting_from_tf1.md
  // clang-format off
  auto input_fn = [&](loom::Scope&) {
    return loom::data::FromTensorSlices({{"x", train_images}, {"label", train_labels}})
        .Shuffle(100000, {.seed = 42}).Repeat().Batch(400).Prefetch(2);
  };
  // clang-format on
  // doc-example-end
  loom::Graph other;
  loom::Scope o(other);
  std::optional<loom::data::Element> first = input_fn(o).MakeIterator()->GetNext();
  ASSERT_TRUE(first.has_value());
  EXPECT_EQ(first->at("x").shape(), loom::Shape({400, 784}));
}

TEST_F(DocExamples, TrainingMonitoredSession) {
  loom::Graph graph;
  loom::Scope s(graph);
  loom::Variable w(s.WithOpName("w"), loom::Const(s, loom::Tensor::FromVector<float>({3, -2})));
  // doc-example: docs/training.md
  // clang-format off
  namespace train = loom::train;
  auto global_step = train::GlobalStep(s);
  auto loss = loom::Mean(s, loom::Square(s, w));  // doc: auto loss = ...;
  auto train_op = train::Adam({.learning_rate = 1e-3}).Minimize(s, loss, global_step);
  train::ScalarSummary(s, "loss", loss);

  auto session = train::MonitoredTrainingSession(graph, {
      .checkpoint_dir = "runs/1",
      .hooks = {std::make_shared<train::StopAtStepHook>(train::StopAtStepOptions{.last_step = 10000}),
                std::make_shared<train::NanTensorHook>(loss),
                std::make_shared<train::LoggingTensorHook>(
                    std::vector<std::pair<std::string, loom::Output>>{{"loss", loss}, {"step", global_step}},
                    train::LoggingTensorOptions{.every_n_iter = 100})},
      .save_checkpoint_steps = 1000});
  while (!session->ShouldStop()) session->RunTarget(train_op);
  session->Close();
  // clang-format on
  // doc-example-end
  EXPECT_TRUE(std::filesystem::exists("runs/1/model.ckpt-10000.safetensors"));
}

TEST_F(DocExamples, TrainingHooksAndRunStep) {
  loom::Graph graph;
  loom::Scope s(graph);
  namespace train = loom::train;
  loom::Variable w(s.WithOpName("w"), loom::Const(s, loom::Tensor::FromVector<float>({3, -2})));
  auto loss = loom::Mean(s, loom::Square(s, w));
  auto train_op =
      train::GradientDescent({.learning_rate = 0.1}).Minimize(s, loss, train::GlobalStep(s));
  auto features = loom::Tensor::FromVector<float>({1, 2});
  auto x = loom::Placeholder(s.WithOpName("x"), loom::kFloat32, {-1});
  auto iterator = loom::data::FromTensorSlices(x).MakeInitializableIterator(s);
  // doc-example: docs/training.md
  // clang-format off
  class IteratorInitializerHook : public loom::train::SessionRunHook {
   public:
    std::function<void(loom::Session&)> initialize;
    void AfterCreateSession(loom::Session& session) override { initialize(session); }
  };
  // clang-format on
  // doc-example-end
  auto hook = std::make_shared<IteratorInitializerHook>();
  hook->initialize = [=](loom::Session& session) {
    session.Run({{x, features}}, {}, {iterator.initializer()});
  };
  auto session = train::SingularMonitoredSession(graph, {hook});
  int steps = 0;
  while (!session->ShouldStop()) {
    ++steps;
    // doc-example: docs/training.md
    // clang-format off
    session->RunStep([&](train::StepContext& step) {
      auto loss_value = step.RunWithHooks({}, {loss}, {train_op});   // hooks run around this
      if (loss_value[0].scalar<float>() < 0.01f) step.RequestStop();
      return loss_value;
    });
    // clang-format on
    // doc-example-end
  }
  EXPECT_GT(steps, 10);
  EXPECT_LT(steps, 1000);
}

int TrainStoppable(loom::Graph& graph, loom::Operation train_op, const std::string& dir,
                   loom::train::HookList hooks) {
  // doc-example: docs/training.md
  // clang-format off
  loom::train::ScopedStopSignals signals;
  hooks.push_back(signals.NewHook());
  auto session = loom::train::MonitoredTrainingSession(graph, {.checkpoint_dir = dir, .hooks = hooks});
  while (!session->ShouldStop()) session->RunTarget(train_op);
  session->Close();
  if (signals.received() != 0) return 128 + signals.received();
  // clang-format on
  // doc-example-end
  return 0;
}

TEST_F(DocExamples, TrainingStopSignals) {
  loom::Graph graph;
  loom::Scope s(graph);
  loom::Variable w(s.WithOpName("w"), loom::Const(s, loom::Tensor::FromVector<float>({3, -2})));
  auto step = loom::train::GlobalStep(s);
  auto train_op = loom::train::GradientDescent({.learning_rate = 0.1})
                      .Minimize(s, loom::Mean(s, loom::Square(s, w)), step);
  auto stop =
      std::make_shared<loom::train::StopAtStepHook>(loom::train::StopAtStepOptions{.last_step = 5});
  EXPECT_EQ(TrainStoppable(graph, train_op, "runs/signals", {stop}), 0);
}

TEST_F(DocExamples, TfCheckpointReader) {
  loom::Env* env = loom::Env::Default();
  std::filesystem::copy(std::string(LOOM_SOURCE_DIR) + "/testdata/tf/tfx_estimator_ckpt", "tf_dir");
  const std::string path = "tf_dir/model.ckpt-999.index";
  std::ostringstream printed;
  std::streambuf* cout = std::cout.rdbuf(printed.rdbuf());
  auto read = [&] {
    // doc-example: docs/formats/tf_checkpoint.md
    // clang-format off
    auto reader = loom::TfCheckpointReader::Open(env, "tf_dir/model.ckpt-999");
    for (const loom::TfCheckpointEntry& e : reader->entries())   // name order
      std::cout << e.name << " " << loom::DTypeName(e.dtype) << e.shape << "\n";
    loom::Tensor kernel = reader->Get("dnn/hiddenlayer_0/kernel");
    // clang-format on
    // doc-example-end
    EXPECT_EQ(kernel.shape().rank(), 2);
    // (The doc's GetPart("emb", 1) needs a partitioned variable, which this checkpoint lacks:
    // loom/io/tf_checkpoint_test.cc reads one.)
    // doc-example: docs/formats/tf_checkpoint.md
    // clang-format off
    std::map<std::string, loom::Tensor> all = loom::ReadTfCheckpoint(env, "tf_dir/model.ckpt-999");
    bool tf = loom::IsTfCheckpoint(env, path);  // prefix, .index or .data-* path
    // clang-format on
    // doc-example-end
    EXPECT_TRUE(tf);
    EXPECT_EQ(all.size(), reader->entries().size());
  };
  read();
  std::cout.rdbuf(cout);
  EXPECT_NE(printed.str().find("dnn/hiddenlayer_0/kernel float32["), std::string::npos)
      << printed.str();
}

}  // namespace
