#include <gtest/gtest.h>

#include "loom/data/dataset.h"
#include "loom/data/test_util.h"

namespace loom::data {
namespace {
using testing::CodeOf;
using testing::Ints;
using testing::Iota;

TEST(FromTensorSlicesTest, SlicesEveryComponentAlongDimZero) {
  auto d = FromTensorSlices({{"x", Iota(3, 2)}, {"label", Iota(3)}});
  EXPECT_EQ(d.spec().at("x").shape, Shape({2}));
  EXPECT_EQ(d.spec().at("label").shape, Shape({}));
  auto it = d.MakeIterator();
  for (int64_t i = 0; i < 3; ++i) {
    auto e = it->GetNext();
    ASSERT_TRUE(e);
    EXPECT_EQ(e->at("label").scalar<int64_t>(), i);
    EXPECT_EQ(e->at("x").flat<int64_t>()[1], 2 * i + 1);
  }
  EXPECT_FALSE(it->GetNext());
  EXPECT_FALSE(it->GetNext());  // stays at the end
}

TEST(FromTensorSlicesTest, ElementsViewTheSourceBuffer) {
  Tensor x = Iota(4, 3);
  auto it = FromTensorSlices(x).MakeIterator();
  auto e = it->GetNext();
  EXPECT_TRUE(e->at("x").SharesBufferWith(x));
  EXPECT_EQ(e->at("x").raw_data(), x.raw_data());
  e = it->GetNext();
  EXPECT_EQ(e->at("x").raw_data(), static_cast<char*>(x.raw_data()) + 3 * sizeof(int64_t));
}

TEST(FromTensorSlicesTest, BorrowedReleaseRunsOnlyWhenDatasetAndIteratorsAreGone) {
  std::vector<float> storage(12, 1.0f);
  bool released = false;
  {
    Tensor borrowed = Tensor::Borrowed(kFloat32, {4, 3}, storage.data(), [&] { released = true; });
    auto d = FromTensorSlices(borrowed).Shuffle(4, {.seed = 1}).Batch(1);
    borrowed = Tensor();
    auto it = d.MakeIterator();
    { auto d2 = std::move(d); }
    EXPECT_FALSE(released);
    auto e = it->GetNext();
    EXPECT_EQ(e->at("x").shape(), Shape({1, 3}));
    auto unbatched = FromTensorSlices(Tensor::Borrowed(kFloat32, {4, 3}, storage.data(), nullptr))
                         .MakeIterator()
                         ->GetNext();
    EXPECT_EQ(unbatched->at("x").raw_data(), storage.data());
    it.reset();
  }
  EXPECT_TRUE(released);
}

TEST(FromTensorSlicesTest, MismatchedRowCountsNameBothComponents) {
  std::string message;
  EXPECT_EQ(CodeOf(
                [&] {
                  FromTensorSlices({{"x", Iota(3, 2)}, {"label", Iota(4)}});
                },
                &message),
            ErrorCode::kInvalidArgument);
  EXPECT_NE(message.find("'label'"), std::string::npos) << message;
  EXPECT_NE(message.find("'x'"), std::string::npos) << message;
  EXPECT_EQ(CodeOf([&] { FromTensorSlices(Tensor::Scalar<int64_t>(3)); }),
            ErrorCode::kInvalidArgument);
}

TEST(FromTensorsTest, OneElementSharingTheTensors) {
  Tensor x = Iota(5);
  auto it = FromTensors(x).MakeIterator();
  auto e = it->GetNext();
  EXPECT_TRUE(e->at("x").SharesBufferWith(x));
  EXPECT_FALSE(it->GetNext());
}

TEST(RangeTest, CountsWithSteps) {
  EXPECT_EQ(Ints(Range(5)), (std::vector<int64_t>{0, 1, 2, 3, 4}));
  EXPECT_EQ(Ints(Range(2, 9, 3)), (std::vector<int64_t>{2, 5, 8}));
  EXPECT_EQ(Ints(Range(5, 0, -2)), (std::vector<int64_t>{5, 3, 1}));
  EXPECT_TRUE(Ints(Range(3, 3)).empty());
  EXPECT_EQ(CodeOf([] { Range(0, 5, 0); }), ErrorCode::kInvalidArgument);
}

TEST(FromGeneratorTest, EachIteratorGetsAFreshGenerator) {
  auto make = [] {
    return Generator([i = int64_t{0}]() mutable -> std::optional<Element> {
      if (i == 3) return std::nullopt;
      return Element{{"x", Tensor::Scalar<int64_t>(i++)}};
    });
  };
  auto d = FromGenerator(make, {{"x", {kInt64, Shape{}}}});
  EXPECT_EQ(Ints(d), (std::vector<int64_t>{0, 1, 2}));
  EXPECT_EQ(Ints(d), (std::vector<int64_t>{0, 1, 2}));
}

TEST(FromGeneratorTest, ElementBreakingTheSpecIsAClearError) {
  auto make = [] {
    return Generator([]() -> std::optional<Element> {
      return Element{{"x", Tensor::Scalar<float>(1)}};
    });
  };
  auto it = FromGenerator(make, {{"x", {kInt64, Shape{}}}}).MakeIterator();
  std::string message;
  EXPECT_EQ(CodeOf([&] { it->GetNext(); }, &message), ErrorCode::kInvalidArgument);
  EXPECT_NE(message.find("FromGenerator"), std::string::npos) << message;
  EXPECT_NE(message.find("float32"), std::string::npos) << message;
}

}  // namespace
}  // namespace loom::data
