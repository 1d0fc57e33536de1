// The classic TF1 workaround for "GraphDef cannot be larger than 2GB", ported as written,
// beside the direct Loom way. Both train a linear model on host arrays through
// MonitoredTrainingSession with the checkpoint, summary and step-counter hooks, then check
// that no file in the model directory but the checkpoints exceeds 1 MiB (the graph holds
// no data) and report peak RSS against the data size.
//
//   TF1:  x = tf.placeholder(tf.float32, [None, D])
//         dataset = tf.data.Dataset.from_tensor_slices((x, y)).shuffle(...).repeat().batch(256)
//         iterator = dataset.make_initializable_iterator()
//         hook.iterator_initializer_func = lambda sess: sess.run(iterator.initializer,
//                                                                feed_dict={x: features, ...})
//
// Usage: placeholder_iterator_hook [--mode workaround|direct] [--gib G] [--steps N] [--dir D]
//   --gib: size of the float32 feature array (default 0.01; bench/RESULTS.md records 3).
#include <sys/resource.h>

#include <cstdio>
#include <cstring>
#include <functional>
#include <random>
#include <string>

#include "loom/loom.h"

namespace {

constexpr int64_t kFeatures = 256;

// A hook that runs the iterator's initializer, with the arrays as feeds, once the session
// exists (the IteratorInitializerHook of docs/porting_from_tf1.md).
class IteratorInitializerHook : public loom::SessionRunHook {
 public:
  std::function<void(loom::Session&)> initialize;
  void AfterCreateSession(loom::Session& session) override { initialize(session); }
};

struct Inputs {
  std::map<std::string, loom::Output> batch;
  std::shared_ptr<IteratorInitializerHook> hook;  // null for the direct way
};

// The workaround: a dataset over placeholders, fed by the hook in AfterCreateSession.
Inputs WorkaroundInput(const loom::Scope& s, loom::Tensor features, loom::Tensor labels) {
  auto hook = std::make_shared<IteratorInitializerHook>();
  auto x = loom::Placeholder(s.WithOpName("features"), loom::kFloat32, {-1, kFeatures});
  auto y = loom::Placeholder(s.WithOpName("labels"), loom::kFloat32, {-1, 1});
  auto dataset = loom::data::FromTensorSlices({{"x", x}, {"label", y}})
                     .Shuffle(100000, {.seed = 1})
                     .Repeat()
                     .Batch(256);
  auto iterator = dataset.MakeInitializableIterator(s);
  hook->initialize = [=](loom::Session& session) {
    session.Run({{x, features}, {y, labels}}, /*fetches=*/{}, /*targets=*/{iterator.initializer()});
  };
  return {iterator.GetNext(), hook};
}

// The direct Loom way: the dataset wraps the arrays themselves, zero-copy.
Inputs DirectInput(const loom::Scope& s, loom::Tensor features, loom::Tensor labels) {
  auto iterator = loom::data::FromTensorSlices({{"x", features}, {"label", labels}})
                      .Shuffle(100000, {.seed = 1})
                      .Repeat()
                      .Batch(256)
                      .MakeOneShotIterator(s);
  return {iterator.GetNext(), nullptr};
}

}  // namespace

int main(int argc, char** argv) {
  std::string mode = "workaround", dir = "/tmp/loom_placeholder_iterator_hook";
  double gib = 0.01;
  int64_t steps = 300;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--mode"))
      mode = argv[i + 1];
    else if (!std::strcmp(argv[i], "--gib"))
      gib = std::atof(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--steps"))
      steps = std::atoll(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--dir"))
      dir = argv[i + 1];
    else {
      std::fprintf(stderr, "unknown flag %s\n", argv[i]);
      return 2;
    }
  }
  if (mode != "workaround" && mode != "direct") {
    std::fprintf(stderr, "--mode must be workaround or direct, got %s\n", mode.c_str());
    return 2;
  }
  try {
    loom::Env* env = loom::Env::Default();
    if (env->FileExists(dir)) env->DeleteRecursively(dir);
    const int64_t rows = static_cast<int64_t>(gib * (1 << 30) / (kFeatures * 4));
    loom::Tensor features(loom::kFloat32, {rows, kFeatures}), labels(loom::kFloat32, {rows, 1});
    std::mt19937 rng(0);
    std::uniform_real_distribution<float> u(-1, 1);
    float* xf = features.data<float>();
    for (int64_t i = 0; i < rows * kFeatures; ++i) xf[i] = u(rng);
    for (int64_t r = 0; r < rows; ++r) {  // y = mean of the first 8 features
      float sum = 0;
      for (int k = 0; k < 8; ++k) sum += xf[r * kFeatures + k];
      labels.data<float>()[r] = sum / 8;
    }

    loom::Graph graph({.seed = 3});
    loom::Scope s(graph);
    Inputs in = mode == "workaround" ? WorkaroundInput(s, features, labels)
                                     : DirectInput(s, features, labels);
    auto pred = loom::layers::Dense(s, in.batch.at("x"), {.units = 1});
    auto loss = loom::losses::MeanSquaredError(s, in.batch.at("label"), pred);
    auto global_step = loom::train::GlobalStep(s);
    auto train_op =
        loom::train::GradientDescent({.learning_rate = 0.5}).Minimize(s, loss, global_step);
    loom::train::ScalarSummary(s, "loss", loss);
    auto scaffold = std::make_shared<loom::train::Scaffold>();
    scaffold->summary_op = loom::train::MergeAllSummaries(s);

    loom::HookList hooks = {std::make_shared<loom::train::StopAtStepHook>(
        loom::train::StopAtStepOptions{.last_step = steps})};
    if (in.hook) hooks.push_back(in.hook);
    auto session = loom::train::MonitoredTrainingSession(graph, {.checkpoint_dir = dir,
                                                                 .scaffold = scaffold,
                                                                 .hooks = hooks,
                                                                 .save_checkpoint_steps = 100,
                                                                 .save_summaries_steps = 50,
                                                                 .log_step_count_steps = 100});
    double last = 0;
    while (!session->ShouldStop()) last = session->Run({}, {loss}, {train_op})[0].scalar<float>();
    session->Close();

    const uint64_t data_bytes = features.TotalBytes() + labels.TotalBytes();
    bool ok = true;
    for (const std::string& name : env->GetChildren(dir)) {
      std::string path = loom::JoinPath(dir, name);
      if (env->IsDirectory(path)) continue;
      uint64_t size = env->GetFileSize(path);
      bool checkpoint = name.find(".safetensors") != std::string::npos;
      std::printf("  %-60s %10llu bytes%s\n", name.c_str(), (unsigned long long)size,
                  checkpoint ? " (checkpoint)" : "");
      if (!checkpoint && size > (1u << 20)) ok = false;
    }
    rusage usage;
    getrusage(RUSAGE_SELF, &usage);
    const double rss = usage.ru_maxrss * 1024.0;
    std::printf(
        "mode %s: %lld steps, final loss %.5f, data %.3f GiB, peak RSS %.3f GiB (%.2fx data)\n",
        mode.c_str(), (long long)steps, last, data_bytes / double(1 << 30), rss / double(1 << 30),
        rss / data_bytes);
    if (!ok) {
      std::fprintf(stderr, "a file other than a checkpoint is larger than 1 MiB\n");
      return 1;
    }
  } catch (const loom::Error& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
  return 0;
}
