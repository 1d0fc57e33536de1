// The bf16 copies of variables that bf16 products read (ops/bf16_weights.h): a product
// reading a cached copy gives the bits of one that converts its operands, the copy is
// made once per version and shared by the forward and the transposed backward product,
// and after every kind of write (Assign, AssignAdd, AssignSub, Session::WriteVariable,
// the optimizers' dense and sparse updates, a Saver restore) the next product reads the
// new value. Also: a reader and a writer on two threads never see a stale copy, and the
// cache holds no reference to the float32 value (updates stay in place).
#include "loom/ops/bf16_weights.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <thread>
#include <tuple>
#include <vector>

#include "loom/autodiff/gradients.h"
#include "loom/graph/resource.h"
#include "loom/ops/array.h"
#include "loom/ops/bf16.h"
#include "loom/ops/matmul.h"
#include "loom/ops/nn.h"
#include "loom/ops/reduce.h"
#include "loom/ops/state.h"
#include "loom/runtime/gradient_checker.h"
#include "loom/runtime/session.h"
#include "loom/testing/temp_dir.h"
#include "loom/train/adam.h"
#include "loom/train/gradient_descent.h"
#include "loom/train/saver.h"
#include "loom/train/training_ops.h"

namespace loom {
namespace {

Tensor RandomFloats(const Shape& shape, uint64_t seed) {
  const Tensor d = RandomDoubles(shape, seed);
  Tensor out(kFloat32, shape);
  for (int64_t i = 0; i < d.NumElements(); ++i) {
    out.data<float>()[i] = static_cast<float>(d.data<double>()[i]);
  }
  return out;
}

bool SameBits(const Tensor& a, const Tensor& b) {
  return a.dtype() == b.dtype() && a.shape() == b.shape() &&
         std::memcmp(a.raw_data(), b.raw_data(), a.TotalBytes()) == 0;
}

// op(x) op(w) in bf16 with both operands constants, each read once: nothing cached.
Tensor UncachedProduct(const Tensor& x, const Tensor& w, bool transpose_b = false,
                       bool transpose_a = false) {
  Graph graph;
  Scope s(graph);
  Output y = MatMul(s, Const(s, x), Const(s, w),
                    {.transpose_a = transpose_a,
                     .transpose_b = transpose_b,
                     .precision = Precision::kBf16Strict});
  Session session(graph, {.intra_op_threads = 2});
  return session.Run({}, {y})[0];
}

class Bf16WeightsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (bf16::DetectHardware() == bf16::Hardware::kNone) {
      GTEST_SKIP() << "this CPU (" << bf16::CpuModelName()
                   << ") has no bf16 hardware: bf16 products take no cached copies";
    }
    w_ = Variable(s_, Const(s_, RandomFloats({16, 12}, 2)));
    y_ = MatMul(s_, Const(s_, x_), w_, {.precision = Precision::kBf16Strict});
    session_.RunTarget(GlobalVariablesInitializer(s_));
  }

  // Runs the product and checks it against one that converts both operands, for the
  // variable's current value.
  void ExpectCurrent(const std::string& after) {
    const Tensor got = session_.Run({}, {y_})[0];
    const Tensor w = session_.ReadVariable(w_.node->name());
    EXPECT_TRUE(SameBits(got, UncachedProduct(x_, w))) << "after " << after;
  }
  bf16::VariableBitsCounts Counts() { return bf16::CountVariableBits(session_.resources()); }
  uint64_t Version() {
    auto* var = session_.resources().Lookup<VariableResource>(w_.node->name());
    MutexLock lock(var->mu());
    return var->version();
  }
  const void* ValueAddress() {
    auto* var = session_.resources().Lookup<VariableResource>(w_.node->name());
    MutexLock lock(var->mu());
    return var->value().raw_data();
  }

  Tensor x_ = RandomFloats({8, 16}, 1);
  Graph graph_;
  Scope s_{graph_};
  Variable w_;
  Output y_;
  Session session_{graph_, {.intra_op_threads = 2}};
};

TEST_F(Bf16WeightsTest, CopyIsMadeOncePerVersionAndGivesTheSameBits) {
  ExpectCurrent("initialization");
  EXPECT_EQ(Counts().made, 1);
  EXPECT_EQ(Counts().reused, 0);
  ExpectCurrent("a second run");
  ExpectCurrent("a third run");
  EXPECT_EQ(Counts().made, 1);
  EXPECT_EQ(Counts().reused, 2);
}

TEST_F(Bf16WeightsTest, ForwardAndTransposedBackwardShareOneCopy) {
  // dx = dy w^T reads w transposed: the copy the forward product made serves it.
  Output dx = Gradients(s_, {Sum(s_, y_)}, {y_.node->input(0)})[0];
  const auto before = Counts();
  const std::vector<Tensor> got = session_.Run({}, {y_, dx});
  EXPECT_EQ(Counts().made - before.made, 1);
  EXPECT_EQ(Counts().reused - before.reused, 1);
  const Tensor w = session_.ReadVariable(w_.node->name());
  EXPECT_TRUE(SameBits(got[0], UncachedProduct(x_, w)));
  Tensor ones(kFloat32, Shape{8, 12});
  for (float& v : ones.flat<float>()) v = 1.0f;
  EXPECT_TRUE(SameBits(got[1], UncachedProduct(ones, w, /*transpose_b=*/true)));
}

TEST_F(Bf16WeightsTest, EveryAssignmentIsSeen) {
  ExpectCurrent("initialization");
  Output assign = Assign(s_, w_, Const(s_, RandomFloats({16, 12}, 3)));
  Output add = AssignAdd(s_, w_, Const(s_, RandomFloats({16, 12}, 4)));
  Output sub = AssignSub(s_, w_, 0.25f);
  uint64_t version = Version();
  for (auto [op, what] : {std::pair{assign, "Assign"}, {add, "AssignAdd"}, {sub, "AssignSub"}}) {
    session_.Run({}, {op});
    EXPECT_GT(Version(), version) << what;
    version = Version();
    ExpectCurrent(what);
  }
  session_.WriteVariable(w_.node->name(), RandomFloats({16, 12}, 5));
  EXPECT_GT(Version(), version) << "WriteVariable";
  ExpectCurrent("Session::WriteVariable");
  EXPECT_EQ(Counts().made, 5);
}

TEST_F(Bf16WeightsTest, OptimizerUpdatesAreSeen) {
  Output loss = Sum(s_, y_);
  Operation sgd = train::GradientDescent({.learning_rate = 0.5}).Minimize(s_, loss);
  Operation adam = train::Adam({.learning_rate = 0.1}).Minimize(s_, loss);
  Output rows = Const(s_, RandomFloats({2, 12}, 6));
  Operation sparse = train::SparseApplyGradientDescent(
      s_, w_, 1.0f, rows, Const(s_, std::vector<int32_t>{3, 9}, Shape{2}));
  session_.RunTarget(GlobalVariablesInitializer(s_));
  ExpectCurrent("initialization");
  // The dense updates make the new copy as they go; the sparse one leaves it to the next
  // product.
  for (auto [op, what, by_update] : {std::tuple{sgd, "GradientDescent", true},
                                     {adam, "Adam", true},
                                     {sparse, "SparseApplyGradientDescent", false}}) {
    const uint64_t version = Version();
    const auto before = Counts();
    session_.RunTarget(op);
    EXPECT_GT(Version(), version) << what;
    EXPECT_EQ(Counts().updated - before.updated, by_update ? 1 : 0) << what;
    ExpectCurrent(what);
    EXPECT_EQ(Counts().made - before.made, by_update ? 0 : 1) << what;
  }
}

TEST(Bf16WeightsLargeTest, AnUpdateSplitIntoChunksMakesTheWholeCopy) {
  if (bf16::DetectHardware() == bf16::Hardware::kNone) GTEST_SKIP() << "no bf16 hardware";
  // 300 x 400 = 120,000 elements: several of the dense drivers' chunks on two threads.
  Graph graph;
  Scope s(graph);
  const Tensor x = RandomFloats({4, 300}, 8);
  Variable w(s, Const(s, RandomFloats({300, 400}, 9)));
  Output y = MatMul(s, Const(s, x), w, {.precision = Precision::kBf16Strict});
  Operation adam = train::Adam({.learning_rate = 0.01}).Minimize(s, Sum(s, y));
  Session session(graph, {.intra_op_threads = 2});
  session.RunTarget(GlobalVariablesInitializer(s));
  for (int step = 0; step < 3; ++step) {
    session.Run({}, {y}, {adam});
    const Tensor got = session.Run({}, {y})[0];
    EXPECT_TRUE(SameBits(got, UncachedProduct(x, session.ReadVariable(w.node->name()))))
        << "step " << step;
  }
  EXPECT_EQ(bf16::CountVariableBits(session.resources()).made, 1);
  EXPECT_EQ(bf16::CountVariableBits(session.resources()).updated, 3);
}

TEST_F(Bf16WeightsTest, AValueTwoProductsReadIsConvertedOncePerStep) {
  // h = relu(x w) is read by z = h v and by the backward dv = h^T dz; dz (ones) by
  // dh = dz v^T and by dv; the constant x by x w and by dw = x^T g, g = dh relu'(h). Each
  // is converted once per step. g is read by dw and by the gradient of x (g w^T), which
  // the graph holds but this step does not run: its copy is made and not reused.
  Variable v(s_, Const(s_, RandomFloats({12, 5}, 10)));
  Output h = Relu(s_, y_);
  Output z = MatMul(s_, h, v, {.precision = Precision::kBf16Strict});
  const std::vector<Output> grads = Gradients(s_, {Sum(s_, z)}, {v, w_});
  const Output dv = grads[0], dw = grads[1];
  session_.RunTarget(GlobalVariablesInitializer(s_));
  const auto before = Counts();
  const std::vector<Tensor> got = session_.Run({}, {z, dv, h, dw});
  const auto after = Counts();
  EXPECT_EQ(after.step_made - before.step_made, 4);
  EXPECT_EQ(after.step_reused - before.step_reused, 3);
  // The same bits as products that convert their operands.
  Tensor ones(kFloat32, Shape{8, 5});
  for (float& value : ones.flat<float>()) value = 1.0f;
  EXPECT_TRUE(SameBits(got[0], UncachedProduct(got[2], session_.ReadVariable(v.node->name()))));
  EXPECT_TRUE(SameBits(got[1], UncachedProduct(got[2], ones, /*transpose_b=*/false,
                                               /*transpose_a=*/true)));
  // Copies are per step: the next step makes its own.
  session_.Run({}, {z, dv, dw});
  EXPECT_EQ(Counts().step_made - after.step_made, 4);
}

TEST(Bf16WeightsLargeTest, AWeightManyProductsReadIsRelaidOutOnceAndStaysExact) {
  if (bf16::DetectHardware() == bf16::Hardware::kNone) GTEST_SKIP() << "no bf16 hardware";
  // Predict's case: one version of a 784 x 256 weight read by call after call. From the
  // fourth read on, the product runs on oneDNN's own layout of the copy, made once; every
  // result stays within float32 summation error of the float64 product of the bf16-rounded
  // operands (|got - want| <= k u32 sum|a' b'|), and the relaid results agree with each
  // other exactly.
  constexpr int64_t kRows = 64, kK = 784, kN = 256;
  Graph graph;
  Scope s(graph);
  const Tensor x = RandomFloats({kRows, kK}, 11), w0 = RandomFloats({kK, kN}, 12);
  Variable w(s, Const(s, w0));
  Output y = MatMul(s, Const(s, x), w, {.precision = Precision::kBf16Strict});
  Session session(graph, {.intra_op_threads = 2});
  session.RunTarget(GlobalVariablesInitializer(s));
  std::vector<Tensor> got;
  for (int call = 0; call < 6; ++call) got.push_back(session.Run({}, {y})[0]);
  EXPECT_EQ(bf16::CountVariableBits(session.resources()).relaid, 1);
  EXPECT_EQ(bf16::CountVariableBits(session.resources()).made, 1);
  for (int call = 4; call < 6; ++call) EXPECT_TRUE(SameBits(got[call], got[3])) << call;
  constexpr double kU32 = 1.0 / (1 << 24);
  for (int call = 0; call < 6; ++call) {
    for (int64_t i = 0; i < kRows; ++i) {
      for (int64_t j = 0; j < kN; ++j) {
        double want = 0, mag = 0;
        for (int64_t p = 0; p < kK; ++p) {
          const double t = double{bf16::RoundToBf16(x.data<float>()[i * kK + p])} *
                           bf16::RoundToBf16(w0.data<float>()[p * kN + j]);
          want += t;
          mag += std::abs(t);
        }
        ASSERT_LE(std::abs(got[call].data<float>()[i * kN + j] - want), kK * kU32 * mag)
            << "call " << call << " element " << i << "," << j;
      }
    }
  }
}

TEST_F(Bf16WeightsTest, UpdatesMakeNoCopyOfAVariableNoBf16ProductReads) {
  Variable other(s_, Const(s_, RandomFloats({16, 12}, 7)));
  Output float32 = MatMul(s_, Const(s_, x_), other);
  Operation sgd = train::GradientDescent({.learning_rate = 0.5}).Minimize(s_, Sum(s_, float32));
  session_.RunTarget(GlobalVariablesInitializer(s_));
  session_.Run({}, {float32});
  session_.RunTarget(sgd);
  EXPECT_EQ(Counts().made, 0);
  EXPECT_EQ(Counts().updated, 0);
}

TEST_F(Bf16WeightsTest, RestoreIsSeen) {
  testing::TempDir dir("bf16_weights");
  train::Saver saver(graph_);
  const std::string path = saver.Save(session_, dir.Join("model"));
  const Tensor saved = session_.ReadVariable(w_.node->name());
  session_.Run({}, {AssignAdd(s_, w_, 1.0f)});
  ExpectCurrent("AssignAdd");
  saver.Restore(session_, path);
  ExpectCurrent("Saver::Restore");
  EXPECT_TRUE(SameBits(session_.ReadVariable(w_.node->name()), saved));
}

TEST_F(Bf16WeightsTest, CacheHoldsNoReferenceToTheValue) {
  // An update in place stays in place after a cached product: the cache does not share
  // the float32 buffer (sharing it would force a copy of the weight on every update).
  Output add = AssignAdd(s_, w_, 1.0f);
  ExpectCurrent("initialization");
  session_.Run({}, {add});  // the initializer's value may be shared; this makes it owned
  ExpectCurrent("AssignAdd");
  const void* before = ValueAddress();
  session_.Run({}, {add});
  EXPECT_EQ(ValueAddress(), before);
  ExpectCurrent("a second AssignAdd");
}

TEST_F(Bf16WeightsTest, AReaderNeverSeesAStaleCopyWhileAWriterUpdates) {
  // One thread runs the product while another adds 1 to the weight 40 times: every
  // product must be that of one of the 41 values the weight passes through.
  constexpr int kUpdates = 40;
  Output add = AssignAdd(s_, w_, 1.0f);
  std::vector<Tensor> wants;
  Tensor w = session_.ReadVariable(w_.node->name());
  for (int k = 0; k <= kUpdates; ++k) {
    wants.push_back(UncachedProduct(x_, w));
    for (float& v : w.flat<float>()) v += 1.0f;
  }
  std::vector<Tensor> seen;
  std::thread writer([&] {
    for (int k = 0; k < kUpdates; ++k) session_.Run({}, {add});
  });
  for (int i = 0; i < 4 * kUpdates; ++i) seen.push_back(session_.Run({}, {y_})[0]);
  writer.join();
  seen.push_back(session_.Run({}, {y_})[0]);
  size_t last = 0;
  for (size_t i = 0; i < seen.size(); ++i) {
    size_t match = wants.size();
    for (size_t k = last; k < wants.size(); ++k) {
      if (SameBits(seen[i], wants[k])) {
        match = k;
        break;
      }
    }
    ASSERT_LT(match, wants.size()) << "product " << i << " matches no value of the weight at or "
                                   << "after the last one seen (" << last << ")";
    last = match;
  }
  EXPECT_EQ(last, static_cast<size_t>(kUpdates)) << "the last product is the final weight's";
}

}  // namespace
}  // namespace loom
