// Shape's storage: dims inline up to Shape::kInlineRank, on the heap above it. Every
// operation must behave the same on both sides of that line and across it.
#include "loom/tensor/shape.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <span>
#include <utility>
#include <vector>

#include "loom/tensor/tensor.h"

namespace loom {
namespace {

// Shapes of rank 0 .. 9, dims 2, 3, 4, ...: both sides of kInlineRank.
std::vector<int64_t> Dims(int rank) {
  std::vector<int64_t> dims;
  for (int i = 0; i < rank; ++i) dims.push_back(i + 2);
  return dims;
}

TEST(ShapeStorageTest, RankZeroIsAKnownScalar) {
  Shape s;
  EXPECT_TRUE(s.rank_known());
  EXPECT_EQ(s.rank(), 0);
  EXPECT_TRUE(s.dims().empty());
  EXPECT_EQ(s.dims().begin(), s.dims().end());
  EXPECT_EQ(s.num_elements(), 1);
  EXPECT_EQ(s, Shape{});
  EXPECT_EQ(s, Shape(std::vector<int64_t>{}));
  EXPECT_NE(s, Shape::Unknown());
  EXPECT_EQ(s.ToString(), "[]");
  EXPECT_EQ(Shape::Unknown().rank(), 0);
  EXPECT_TRUE(Shape::Unknown().dims().empty());
}

TEST(ShapeStorageTest, EveryRankKeepsItsDims) {
  for (int rank = 0; rank <= 9; ++rank) {
    const std::vector<int64_t> want = Dims(rank);
    const Shape s(want);
    ASSERT_EQ(s.rank(), rank);
    EXPECT_EQ(s.dims().size(), static_cast<size_t>(rank));
    EXPECT_EQ(s.dims().ToVector(), want) << rank;
    const std::vector<int64_t> converted = s.dims();  // the implicit conversion
    EXPECT_EQ(converted, want);
    const std::span<const int64_t> span = s.dims();
    EXPECT_EQ(std::vector<int64_t>(span.begin(), span.end()), want);
    int64_t product = 1;
    for (int i = 0; i < rank; ++i) {
      EXPECT_EQ(s.dim(i), want[i]);
      EXPECT_EQ(s.dims()[i], want[i]);
      EXPECT_EQ(s.dim(i - rank), want[i]);  // from the end
      product *= want[i];
    }
    EXPECT_EQ(s.num_elements(), product);
    if (rank > 0) {
      EXPECT_EQ(s.dims().front(), 2);
      EXPECT_EQ(s.dims().back(), rank + 1);
    }
    EXPECT_EQ(Shape(s.dims()), s);  // from a view
  }
}

TEST(ShapeStorageTest, CopiesAreIndependentOnBothSidesOfTheInlineRank) {
  for (int rank : {1, Shape::kInlineRank, Shape::kInlineRank + 1, 9}) {
    Shape a(Dims(rank));
    Shape b = a;
    EXPECT_EQ(a, b);
    b.set_dim(-1, 100);
    EXPECT_NE(a, b);
    EXPECT_EQ(a.dim(-1), rank + 1) << "the copy shares storage with the original at rank " << rank;
    Shape c;
    c = b;  // copy assignment over a scalar
    EXPECT_EQ(c, b);
    c = Shape{7};  // a heap shape assigned an inline one, and back
    EXPECT_EQ(c, Shape{7});
    c = b;
    EXPECT_EQ(c.dim(-1), 100);
  }
}

TEST(ShapeStorageTest, MovedFromIsAScalar) {
  for (int rank : {3, Shape::kInlineRank + 2}) {
    Shape a(Dims(rank));
    const Shape copy = a;
    Shape b = std::move(a);
    EXPECT_EQ(b, copy);
    EXPECT_EQ(a.rank(), 0);  // NOLINT(bugprone-use-after-move): the documented state
    EXPECT_TRUE(a.dims().empty());
    Shape c{1, 2};
    c = std::move(b);
    EXPECT_EQ(c, copy);
    Shape& alias = c;
    c = std::move(alias);  // self-move leaves it unchanged
    EXPECT_EQ(c, copy);
  }
}

TEST(ShapeStorageTest, CompareLooksAtRankKnownnessAndEveryDim) {
  const int r = Shape::kInlineRank + 1;
  std::vector<int64_t> d = Dims(r);
  Shape a(d);
  d.back() = 99;
  EXPECT_NE(a, Shape(d));
  d.pop_back();
  EXPECT_NE(a, Shape(d));  // a prefix is not equal
  EXPECT_NE(Shape(d), Shape::Unknown());
  EXPECT_EQ(Shape::Unknown(), Shape::Unknown());
  EXPECT_EQ((Shape{2, 3}).dims(), (Shape{2, 3}).dims());
  EXPECT_FALSE((Shape{2, 3}).dims() == (Shape{2, 3, 1}).dims());
}

TEST(ShapeStorageTest, LeadingDimAcrossTheInlineRank) {
  const Shape six(Dims(Shape::kInlineRank));
  const Shape seven = six.WithLeadingDim(5);
  ASSERT_EQ(seven.rank(), Shape::kInlineRank + 1);
  EXPECT_EQ(seven.dim(0), 5);
  EXPECT_EQ(seven.WithoutLeadingDim(), six);
  EXPECT_EQ(six.WithoutLeadingDim().WithLeadingDim(2), six);
  EXPECT_EQ(Shape().WithLeadingDim(4), Shape{4});
  EXPECT_EQ(Shape::Unknown().WithLeadingDim(4), Shape::Unknown());
}

TEST(ShapeStorageTest, MergeAndCompatibilityOnHeapShapes) {
  std::vector<int64_t> partial = Dims(8), full = Dims(8);
  partial[1] = kUnknownDim;
  partial[7] = kUnknownDim;
  EXPECT_TRUE(Shape(partial).IsCompatibleWith(Shape(full)));
  EXPECT_FALSE(Shape(partial).fully_defined());
  EXPECT_EQ(Shape(partial).MergeWith(Shape(full)), Shape(full));
  EXPECT_EQ(Shape(partial).ToString(), "[2,?,4,5,6,7,8,?]");
  full[0] = 3;
  EXPECT_FALSE(Shape(partial).IsCompatibleWith(Shape(full)));
}

TEST(ShapeStorageTest, TensorsOfRankAboveInline) {
  const Shape s{1, 2, 1, 3, 1, 1, 2};  // rank 7: 12 elements
  Tensor t = Tensor::Zeros(kFloat32, s);
  EXPECT_EQ(t.rank(), 7);
  EXPECT_EQ(t.NumElements(), 12);
  Tensor copy = t;
  EXPECT_EQ(copy.shape(), s);
  Tensor back = t.Reshaped(Shape{12}).Reshaped(s);
  EXPECT_TRUE(back.Equals(t));
  EXPECT_EQ(t.SubTensor(0).shape(), s.WithoutLeadingDim());
}

TEST(DimVectorTest, GrowsAndShrinksAcrossTheInlineSize) {
  DimVector v;
  std::vector<int64_t> want;
  for (int64_t i = 0; i < 9; ++i) {
    v.push_back(i * 10);
    want.push_back(i * 10);
    ASSERT_EQ(v.size(), want.size());
    EXPECT_EQ(v.view().ToVector(), want);
  }
  v.back() = -1;
  EXPECT_EQ(v[8], -1);
  v.resize(3);  // heap -> inline keeps the first three
  EXPECT_EQ(v.view().ToVector(), (std::vector<int64_t>{0, 10, 20}));
  v.resize(5, 7);  // inline growth fills with the value
  EXPECT_EQ(v.view().ToVector(), (std::vector<int64_t>{0, 10, 20, 7, 7}));
  v.resize(8, 1);  // inline -> heap keeps what was there
  EXPECT_EQ(v.view().ToVector(), (std::vector<int64_t>{0, 10, 20, 7, 7, 1, 1, 1}));
  v.assign(2, 4);
  EXPECT_EQ(v, (DimVector{4, 4}));
  const DimVector big(7, 3);
  DimVector copy = big;
  copy[6] = 0;
  EXPECT_EQ(big[6], 3);
  EXPECT_NE(copy, big);
  DimVector moved = std::move(copy);
  EXPECT_TRUE(copy.empty());  // NOLINT(bugprone-use-after-move): the documented state
  EXPECT_EQ(moved.size(), 7u);
  copy.push_back(5);  // a moved-from one is usable
  EXPECT_EQ(copy, (DimVector{5}));
}

}  // namespace
}  // namespace loom
