#include <gtest/gtest.h>

#include "loom/data/dataset.h"
#include "loom/data/test_util.h"
#include "loom/ops/state.h"
#include "loom/runtime/session.h"

namespace loom::data {
namespace {
using testing::CodeOf;
using testing::Iota;

TEST(IteratorOpsTest, OneShotIteratorRunsToOutOfRange) {
  Graph graph;
  Scope s(graph);
  auto it =
      FromTensorSlices({{"x", Iota(5, 2)}, {"label", Iota(5)}}).Batch(2).MakeOneShotIterator(s);
  auto next = it.GetNext();
  ASSERT_EQ(next.size(), 2u);
  EXPECT_EQ(next.at("x").dtype(), kInt64);
  EXPECT_EQ(next.at("x").shape(), Shape({-1, 2}));
  Session session(graph);
  std::vector<int64_t> labels;
  for (int i = 0; i < 3; ++i) {
    auto out = session.Run({}, {next.at("label"), next.at("x")});
    for (int64_t v : out[0].flat<int64_t>()) labels.push_back(v);
  }
  EXPECT_EQ(labels, (std::vector<int64_t>{0, 1, 2, 3, 4}));
  std::string message;
  EXPECT_EQ(CodeOf([&] { session.Run({}, {next.at("label")}); }, &message), ErrorCode::kOutOfRange);
  EXPECT_NE(message.find("End of sequence"), std::string::npos) << message;
  // The graph holds no data: no node carries more than the iterator's attrs.
  for (int id = 0; id < graph.num_nodes(); ++id) {
    for (const auto& [name, v] : graph.node(id)->attrs().map()) {
      if (auto* t = std::get_if<Tensor>(&v)) {
        EXPECT_EQ(t->NumElements(), 0);
      }
    }
  }
}

TEST(IteratorOpsTest, PlaceholderBackedInitializableIteratorAsInApiSketch) {
  Graph graph;
  Scope s(graph);
  auto x = Placeholder(s.WithOpName("x"), kFloat32, {-1, 2});
  auto dataset = FromTensorSlices(x).Shuffle(100000).Repeat().Batch(3);
  auto iterator = dataset.MakeInitializableIterator(s);
  auto features = iterator.GetNext();
  Session session(graph);

  Tensor a = Tensor::FromVector<float>({1, 1, 1, 1, 1, 1}, {3, 2});
  session.Run({{x, a}}, {}, {iterator.initializer()});
  Tensor batch = session.Run({}, {features.at("x")})[0];
  EXPECT_EQ(batch.shape(), Shape({3, 2}));
  for (float v : batch.flat<float>()) EXPECT_EQ(v, 1.0f);

  // Re-running the initializer with other arrays restarts over them.
  Tensor b = Tensor::FromVector<float>({7, 7, 7, 7}, {2, 2});
  session.Run({{x, b}}, {}, {iterator.initializer()});
  batch = session.Run({}, {features.at("x")})[0];
  for (float v : batch.flat<float>()) EXPECT_EQ(v, 7.0f);

  // A wrong dtype or shape names the placeholder.
  std::string message;
  EXPECT_EQ(CodeOf(
                [&] {
                  session.Run({{x, Tensor::FromVector<double>({1, 2}, {1, 2})}}, {},
                              {iterator.initializer()});
                },
                &message),
            ErrorCode::kInvalidArgument);
  EXPECT_NE(message.find("'x'"), std::string::npos) << message;
  EXPECT_EQ(CodeOf(
                [&] {
                  session.Run({{x, Tensor::FromVector<float>({1, 2, 3}, {1, 3})}}, {},
                              {iterator.initializer()});
                },
                &message),
            ErrorCode::kInvalidArgument);
  EXPECT_NE(message.find("'x'"), std::string::npos) << message;
}

// TF's dataset.repeat(num_epochs) with num_epochs a placeholder: the count is read when
// the initializer runs, so each initialization may repeat a different number of times.
TEST(IteratorOpsTest, RepeatCountFromAPlaceholder) {
  Graph graph;
  Scope s(graph);
  auto epochs = Placeholder(s.WithOpName("epochs"), kInt64, {});
  auto iterator = Range(3).Repeat(epochs).MakeInitializableIterator(s);
  auto next = iterator.GetNext();
  Session session(graph);
  auto drain = [&] {
    std::vector<int64_t> seen;
    for (;;) {
      try {
        seen.push_back(session.Run({}, {next.begin()->second})[0].scalar<int64_t>());
      } catch (const Error& e) {
        EXPECT_EQ(e.code(), ErrorCode::kOutOfRange) << e.what();
        return seen;
      }
    }
  };
  session.Run({{epochs, Tensor::Scalar<int64_t>(2)}}, {}, {iterator.initializer()});
  EXPECT_EQ(drain(), (std::vector<int64_t>{0, 1, 2, 0, 1, 2}));
  session.Run({{epochs, Tensor::Scalar<int64_t>(1)}}, {}, {iterator.initializer()});
  EXPECT_EQ(drain(), (std::vector<int64_t>{0, 1, 2}));
  session.Run({{epochs, Tensor::Scalar<int64_t>(0)}}, {}, {iterator.initializer()});
  EXPECT_EQ(drain(), (std::vector<int64_t>{}));
  // Not fed: the initializer names the placeholder.
  std::string message;
  EXPECT_EQ(CodeOf([&] { session.Run({}, {}, {iterator.initializer()}); }, &message),
            ErrorCode::kInvalidArgument);
  EXPECT_NE(message.find("epochs"), std::string::npos) << message;
  // A count that is not an integer scalar is refused when the dataset is built.
  auto wrong = Placeholder(s.WithOpName("wrong"), kFloat32, {});
  EXPECT_EQ(CodeOf([&] { Range(3).Repeat(wrong); }, &message), ErrorCode::kInvalidArgument);
  EXPECT_NE(message.find("'wrong:0'"), std::string::npos) << message;
  EXPECT_EQ(CodeOf([&] { Range(3).Repeat(Placeholder(s, kInt32, {2})); }),
            ErrorCode::kInvalidArgument);
}

TEST(IteratorOpsTest, InitializerBindsTheFedTensorZeroCopy) {
  Graph graph;
  Scope s(graph);
  auto x = Placeholder(s.WithOpName("x"), kFloat32, {-1, 3});
  auto iterator = FromTensorSlices(x).MakeInitializableIterator(s);
  Session session(graph);
  Tensor fed = Tensor::Zeros(kFloat32, {4, 3});
  session.Run({{x, fed}}, {}, {iterator.initializer()});
  auto* resource = session.resources().Lookup<IteratorResource>(
      std::string(kIteratorResourcePrefix) + iterator.resource_name());
  ASSERT_NE(resource, nullptr);
  auto e = resource->GetNext([]() -> std::unique_ptr<Iterator> {
    ADD_FAILURE() << "the initializer made no iterator";
    return nullptr;
  });
  EXPECT_EQ(e->at("x").raw_data(), fed.raw_data());
}

TEST(IteratorOpsTest, UninitializedIteratorIsAFailedPrecondition) {
  Graph graph;
  Scope s(graph);
  auto x = Placeholder(s.WithOpName("x"), kFloat32, {-1});
  auto iterator = FromTensorSlices(x).MakeInitializableIterator(s);
  auto next = iterator.GetNext();
  Session session(graph);
  EXPECT_EQ(CodeOf([&] { session.Run({}, {next.at("x")}); }), ErrorCode::kFailedPrecondition);
  EXPECT_EQ(CodeOf([&] { FromTensorSlices(x).MakeIterator(); }), ErrorCode::kFailedPrecondition);
  EXPECT_EQ(CodeOf([&] { FromTensorSlices(x).MakeOneShotIterator(s); }),
            ErrorCode::kInvalidArgument);
}

TEST(IteratorOpsTest, ReinitializableIteratorSwitchesDatasets) {
  Graph graph;
  Scope s(graph);
  auto train = Range(100).Batch(10);
  auto eval = Range(1000, 1003).Batch(10);
  auto iterator = GraphIterator::FromStructure(s, train.spec());
  auto train_init = iterator.MakeInitializer(train);
  auto eval_init = iterator.MakeInitializer(eval);
  auto next = iterator.GetNext().at("x");
  Session session(graph);
  session.RunTarget(train_init);
  EXPECT_EQ(session.Eval(next).flat<int64_t>()[0], 0);
  EXPECT_EQ(session.Eval(next).flat<int64_t>()[0], 10);
  session.RunTarget(eval_init);
  Tensor e = session.Eval(next);
  EXPECT_EQ(e.shape(), Shape({3}));
  EXPECT_EQ(e.flat<int64_t>()[0], 1000);
  EXPECT_EQ(CodeOf([&] { session.Eval(next); }), ErrorCode::kOutOfRange);
  session.RunTarget(train_init);
  EXPECT_EQ(session.Eval(next).flat<int64_t>()[0], 0);
  EXPECT_EQ(
      CodeOf([&] { iterator.MakeInitializer(FromTensorSlices(Tensor::Zeros(kFloat32, {4}))); }),
      ErrorCode::kInvalidArgument);
}

TEST(IteratorOpsTest, ResourcesAreFoundSavedAndRestored) {
  Graph graph;
  Scope s(graph);
  auto iterator = Range(100).Shuffle(10, {.seed = 2}).MakeOneShotIterator(s);
  auto next = iterator.GetNext().at("x");
  Session session(graph);
  for (int i = 0; i < 7; ++i) session.Eval(next);
  auto names = IteratorResourceNames(session.resources());
  ASSERT_EQ(names.size(), 1u);
  auto* resource = session.resources().Lookup<IteratorResource>(names[0]);
  std::string blob = resource->Save();
  std::vector<int64_t> expected;
  for (int i = 0; i < 5; ++i) expected.push_back(session.Eval(next).scalar<int64_t>());

  // A fresh session restored before the iterator exists resumes there.
  Session restored(graph);
  restored.resources().LookupOrCreate<IteratorResource>(names[0])->Restore(blob);
  std::vector<int64_t> got;
  for (int i = 0; i < 5; ++i) got.push_back(restored.Eval(next).scalar<int64_t>());
  EXPECT_EQ(got, expected);
}

TEST(IteratorOpsTest, RegistersOps) {
  OpRegistry registry;
  RegisterDataOps(registry);
  EXPECT_NE(registry.Find("IteratorGetNext"), nullptr);
  EXPECT_NE(registry.Find("MakeIterator"), nullptr);
}

}  // namespace
}  // namespace loom::data
