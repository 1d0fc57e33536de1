// Overlap of the gradient all-reduce with the backward pass: the communication thread,
// the Session's placement of AllReduceStart (right after its bucket's gradients), the
// kernels that run while a bucket is reduced, and bitwise equality with the
// non-overlapped path.
#include <gtest/gtest.h>
#include <sys/time.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "loom/distribute/collective_ops.h"
#include "loom/distribute/distributed_optimizer.h"
#include "loom/estimator/layers.h"
#include "loom/estimator/losses.h"
#include "loom/ops/math.h"
#include "loom/ops/nn.h"
#include "loom/ops/random.h"
#include "loom/ops/state.h"
#include "loom/train/adam.h"
#include "loom/train/global_step.h"

namespace loom::distribute {
namespace {

int64_t NowMicros() {  // the clock of RunMetadata's step stats
  timeval tv;
  gettimeofday(&tv, nullptr);
  return static_cast<int64_t>(tv.tv_sec) * 1000000 + tv.tv_usec;
}

// A one-process stand-in for a job of two identical ranks whose all-reduce takes
// `delay`: the sum of two equal values is twice the value. Records when each
// all-reduce ran. Collectives other than AllReduceSum are not used here.
class SlowTwoRanks : public Communicator {
 public:
  explicit SlowTwoRanks(std::chrono::milliseconds delay) : delay_(delay) {}
  int rank() const override { return 0; }
  int size() const override { return 2; }
  int local_rank() const override { return 0; }
  int local_size() const override { return 2; }
  void AllReduceSum(DType dtype, void* data, int64_t count) override {
    const int64_t begin = NowMicros();
    std::this_thread::sleep_for(delay_);
    if (dtype != kFloat32)
      throw InvalidArgument("SlowTwoRanks sums float32 only, not ", DTypeName(dtype));
    float* p = static_cast<float*>(data);
    for (int64_t i = 0; i < count; ++i) p[i] *= 2;
    intervals.push_back({begin, NowMicros()});
  }
  std::vector<std::string> AllGather(std::string_view bytes) override {
    return {std::string(bytes), std::string(bytes)};
  }
  void Broadcast(void*, int64_t, int) override {}
  [[noreturn]] void Abort(int code, std::string_view) override { std::_Exit(code); }

  std::vector<std::pair<int64_t, int64_t>> intervals;  // written by the communication thread

 private:
  std::chrono::milliseconds delay_;
};

// A three-layer MLP whose first layer is wide, so that its backward kernels (which run
// after the last layers' buckets have started) take a while. One bucket per gradient.
constexpr int64_t kInputs = 1024;

struct Mlp {
  Graph graph{GraphOptions{.seed = 7}};
  Operation train_op;
  Output x, y;
};

std::unique_ptr<Mlp> BuildMlp(DistributedOptimizerOptions options, int64_t batch = 64) {
  auto m = std::make_unique<Mlp>();
  Scope s(m->graph);
  Output step = train::GlobalStep(s);
  m->x = Placeholder(s.WithOpName("x"), kFloat32, {batch, kInputs});
  m->y = Placeholder(s.WithOpName("y"), kInt64, {batch});
  Output h = layers::Dense(s, m->x, {.units = 512, .activation = Relu, .name = "h1"});
  h = layers::Dense(s, h, {.units = 64, .activation = Relu, .name = "h2"});
  Output logits = layers::Dense(s, h, {.units = 10, .name = "logits"});
  Output loss = losses::SparseSoftmaxCrossEntropy(s, m->y, logits);
  DistributedOptimizer opt(std::make_unique<train::Adam>(train::AdamOptions{.learning_rate = 1e-2}),
                           options);
  m->train_op = opt.Minimize(s, loss, step);
  return m;
}

FeedList MlpFeeds(const Mlp& m, int64_t batch = 64) {
  Tensor xs(kFloat32, {batch, kInputs}), ys(kInt64, {batch});
  for (int64_t i = 0; i < xs.NumElements(); ++i)
    xs.data<float>()[i] = static_cast<float>((i * 37) % 101) / 50 - 1;
  for (int64_t i = 0; i < batch; ++i) ys.data<int64_t>()[i] = i % 10;
  return {{m.x, xs}, {m.y, ys}};
}

bool IsBackward(const NodeExecStats& st) {
  return st.node_name.find("gradients") != std::string::npos && st.op != "LoomAllReduceStart" &&
         st.op != "LoomAllReduceWait";
}

TEST(OverlapTest, CommunicationThreadKeepsCallOrderAndReportsErrorsAtWait) {
  auto slow = std::make_shared<SlowTwoRanks>(std::chrono::milliseconds(20));
  std::shared_ptr<Communicator> comm = WithCommunicationThread(slow);
  std::vector<float> a = {1, 2}, b = {3};
  const int64_t ta = comm->StartAllReduceSum(kFloat32, a.data(), 2);
  const int64_t tb = comm->StartAllReduceSum(kFloat32, b.data(), 1);
  const int64_t started = NowMicros();
  EXPECT_LT(ta, tb);
  comm->Wait(tb);  // waits for everything before it too
  // Start returned before the first 20 ms all-reduce ended (not reading `a` meanwhile:
  // the communication thread owns it until Wait).
  EXPECT_LT(started, slow->intervals.at(0).second);
  EXPECT_EQ(a, (std::vector<float>{2, 4}));
  EXPECT_EQ(b, (std::vector<float>{6}));
  comm->Wait(ta);  // already done
  // A blocking collective queued behind a started one runs after it.
  std::vector<float> c = {5};
  const int64_t tc = comm->StartAllReduceSum(kFloat32, a.data(), 2);
  comm->AllReduceSum(kFloat32, c.data(), 1);
  EXPECT_EQ(a, (std::vector<float>{4, 8}));
  EXPECT_EQ(c, (std::vector<float>{10}));
  comm->Wait(tc);
  ASSERT_EQ(slow->intervals.size(), 4u);
  for (size_t i = 1; i < slow->intervals.size(); ++i) {
    EXPECT_LE(slow->intervals[i - 1].second, slow->intervals[i].first);  // one at a time
  }
  const Communicator::OverlapStats stats = comm->overlap_stats();
  EXPECT_EQ(stats.collectives, 3);  // the started ones
  EXPECT_GT(stats.busy_seconds, 0.05);
}

TEST(OverlapTest, AnErrorOfAStartedCollectiveIsThrownByItsWait) {
  std::shared_ptr<Communicator> comm =
      WithCommunicationThread(std::make_shared<SlowTwoRanks>(std::chrono::milliseconds(1)));
  std::vector<double> v(4);
  const int64_t ticket = comm->StartAllReduceSum(kFloat64, v.data(), 4);
  try {
    comm->Wait(ticket);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(e.message().find("float64"), std::string::npos) << e.message();
  }
  comm->Wait(ticket);  // reported once
  std::vector<float> f = {1};
  comm->AllReduceSum(kFloat32, f.data(), 1);  // the thread still works
  EXPECT_EQ(f[0], 2);
}

// The Session places each AllReduceStart right after its bucket's last gradient, so
// backward kernels of earlier layers run between a start and its wait, while the
// communication thread reduces the bucket.
TEST(OverlapTest, BackwardKernelsRunBetweenStartAndWaitWhileTheBucketIsReduced) {
  auto slow = std::make_shared<SlowTwoRanks>(std::chrono::milliseconds(30));
  std::shared_ptr<Communicator> comm = WithCommunicationThread(slow);
  auto m = BuildMlp({.fusion_threshold_bytes = 0});  // one bucket per gradient: 6
  ASSERT_EQ(CountAllReduceBuckets(m->graph), 6);
  Session session(m->graph, {.intra_op_threads = 1});
  AttachCommunicator(session, comm);
  session.RunTarget(GlobalVariablesInitializer(Scope(m->graph)));
  // The plan is the same every step; whether the communication thread got a core before
  // the backward pass ended is the scheduler's (a waiter runs a collective the thread has
  // not picked up itself), so up to 5 steps may be needed to see it run during one.
  bool ran_during = false;
  int runs = 0;
  for (; runs < 5 && !ran_during; ++runs) {
    slow->intervals.clear();  // the communication thread is idle between steps
    RunOptions options{.trace = true};
    RunMetadata metadata;
    session.Run(MlpFeeds(*m), {}, {m->train_op}, &options, &metadata);
    const std::vector<NodeExecStats>& order = metadata.step_stats;
    std::vector<size_t> starts, waits;
    size_t last_backward = 0;
    for (size_t i = 0; i < order.size(); ++i) {
      if (order[i].op == "LoomAllReduceStart") starts.push_back(i);
      if (order[i].op == "LoomAllReduceWait") waits.push_back(i);
      if (IsBackward(order[i])) last_backward = i;
    }
    ASSERT_EQ(starts.size(), 6u);
    ASSERT_EQ(waits.size(), 6u);
    // Every start but the last (h1's kernel gradient, the last one computed) comes before
    // some backward kernel; every wait comes after the whole backward pass.
    for (size_t k = 0; k + 1 < starts.size(); ++k) EXPECT_LT(starts[k], last_backward) << k;
    for (size_t w : waits) EXPECT_GT(w, last_backward);
    // The first start (the logits' bias) is followed by the backward kernels of logits,
    // h2 and h1; did one of them run while its all-reduce was in flight?
    size_t between = 0;
    bool h1_between = false;
    ASSERT_EQ(slow->intervals.size(), 6u);
    const auto [reduce_begin, reduce_end] = slow->intervals.front();
    for (size_t i = starts.front() + 1; i < waits.front(); ++i) {
      if (!IsBackward(order[i])) continue;
      ++between;
      if (order[i].node_name.find("h1") != std::string::npos && order[i].op == "MatMul")
        h1_between = true;
      // Overlapping intervals: the kernel ran while the communication thread reduced.
      if (order[i].end_micros >= reduce_begin && order[i].start_micros < reduce_end)
        ran_during = true;
    }
    EXPECT_GE(between, 5u);
    EXPECT_TRUE(h1_between);  // the wide first layer's weight gradient
  }
  EXPECT_TRUE(ran_during) << "in " << runs << " steps";
  EXPECT_EQ(comm->overlap_stats().collectives, 6 * runs);
}

// Overlap changes when the sums happen, never their bits: two in-process ranks train the
// same steps with and without it (and through AverageGradients) to the same values.
TEST(OverlapTest, ResultsAreBitwiseTheSameWithAndWithoutOverlap) {
  auto train = [](DistributedOptimizerOptions options) {
    std::vector<std::shared_ptr<Communicator>> comms = InProcessCommunicators(2);
    std::vector<std::map<std::string, Tensor>> values(2);
    std::vector<std::thread> threads;
    for (int r = 0; r < 2; ++r) {
      threads.emplace_back([&, r] {
        auto m = BuildMlp(options, 16);
        Session session(m->graph, {.intra_op_threads = 1});
        AttachCommunicator(session, comms[r]);
        session.RunTarget(GlobalVariablesInitializer(Scope(m->graph)));
        FeedList feeds = MlpFeeds(*m, 16);
        for (float& v : feeds[0].second.flat<float>()) v += 0.25f * r;  // rank r's rows
        for (int step = 0; step < 4; ++step) session.Run(feeds, {}, {m->train_op});
        for (Node* node : m->graph.Variables())
          values[r][node->name()] = session.ReadVariable(node->name());
      });
    }
    for (auto& t : threads) t.join();
    return values;
  };
  auto bitwise_equal = [](const Tensor& a, const Tensor& b) {
    return a.TotalBytes() == b.TotalBytes() &&
           std::memcmp(a.raw_data(), b.raw_data(), a.TotalBytes()) == 0;
  };
  const auto plain = train({.fusion_threshold_bytes = 4096, .overlap_communication = false});
  const auto overlapped = train({.fusion_threshold_bytes = 4096, .overlap_communication = true});
  ASSERT_FALSE(plain[0].empty());
  for (const auto& [name, value] : plain[0]) {
    EXPECT_TRUE(bitwise_equal(value, plain[1].at(name))) << name << ": ranks differ";
    EXPECT_TRUE(bitwise_equal(value, overlapped[0].at(name))) << name << ": overlap changed it";
    EXPECT_TRUE(bitwise_equal(value, overlapped[1].at(name))) << name;
  }
}

// AverageGradients scales inside the start (no Mul after the backward pass) and gives the
// bits the Mul-then-sum path gives.
TEST(OverlapTest, AverageGradientsScalesInsideTheStart) {
  auto average = [](bool overlap) {
    std::vector<std::shared_ptr<Communicator>> comms = InProcessCommunicators(2);
    std::vector<std::vector<Tensor>> out(2);
    std::vector<std::thread> threads;
    for (int r = 0; r < 2; ++r) {
      threads.emplace_back([&, r] {
        Graph graph;
        Scope s(graph);
        Output var = Variable(s.WithOpName("v"), Tensor::FromVector<float>({1, 2, 3}));
        Output big = Variable(s.WithOpName("big"), Tensor::Zeros(kFloat32, {300000}));
        Output g = Const(s, Tensor::FromVector<float>({0.1f + r, 0.7f * r, 3.3f}));
        Output gb = Add(
            s,
            Mul(s, Const(s, Tensor::Zeros(kFloat32, {300000})), Const(s, Tensor::Scalar<float>(1))),
            Const(s, Tensor::Scalar<float>(0.3f + r)));
        auto averaged =
            AverageGradients(s, {{GradOutput(g), var}, {GradOutput(gb), big}},
                             {.fusion_threshold_bytes = 0, .overlap_communication = overlap});
        EXPECT_EQ(CountAllReduceBuckets(graph), 2);
        Session session(graph);
        AttachCommunicator(session, comms[r]);
        out[r] = session.Run({}, {averaged[0].first.dense, averaged[1].first.dense});
      });
    }
    for (auto& t : threads) t.join();
    return out;
  };
  const auto plain = average(false), overlapped = average(true);
  for (int r = 0; r < 2; ++r) {
    for (int k = 0; k < 2; ++k) {
      ASSERT_EQ(plain[r][k].TotalBytes(), overlapped[r][k].TotalBytes());
      EXPECT_EQ(std::memcmp(plain[r][k].raw_data(), overlapped[r][k].raw_data(),
                            plain[r][k].TotalBytes()),
                0);
    }
  }
  EXPECT_FLOAT_EQ(overlapped[0][0].data<float>()[0], (0.1f + 1.1f) / 2);
  EXPECT_FLOAT_EQ(overlapped[1][1].data<float>()[299999], (0.3f + 1.3f) / 2);
}

}  // namespace
}  // namespace loom::distribute
