#include "loom/tensor/tensor.h"

#include <gtest/gtest.h>

#include <cstdint>

#include "loom/base/error.h"

namespace loom {
namespace {

TEST(TensorTest, OwnedBuffersAre64ByteAligned) {
  for (int64_t n : {0, 1, 3, 17, 1000}) {
    Tensor t(kFloat32, Shape{n});
    EXPECT_EQ(reinterpret_cast<uintptr_t>(t.raw_data()) % kTensorAlignment, 0u) << n;
    EXPECT_TRUE(t.buffer()->owned());
    EXPECT_EQ(t.NumElements(), n);
    EXPECT_EQ(t.TotalBytes(), static_cast<size_t>(n) * 4);
  }
}

TEST(TensorTest, DefaultIsUndefined) {
  Tensor t;
  EXPECT_FALSE(t.defined());
  EXPECT_EQ(t.dtype(), DType::kInvalid);
  EXPECT_FALSE(t.Clone().defined());
}

TEST(TensorTest, ZerosAndScalar) {
  Tensor z = Tensor::Zeros(kInt64, Shape{2, 3});
  for (int64_t v : z.flat<int64_t>()) EXPECT_EQ(v, 0);
  EXPECT_EQ(z.rank(), 2);
  EXPECT_EQ(z.dim(-1), 3);
  Tensor s = Tensor::Scalar<double>(2.5);
  EXPECT_EQ(s.rank(), 0);
  EXPECT_EQ(s.NumElements(), 1);
  EXPECT_EQ(s.scalar<double>(), 2.5);
}

TEST(TensorTest, BorrowedReleaseRunsOnceWhenLastViewDies) {
  std::vector<float> storage = {1, 2, 3, 4, 5, 6};
  int releases = 0;
  {
    Tensor a = Tensor::Borrowed(kFloat32, Shape{2, 3}, storage.data(), [&] { ++releases; });
    EXPECT_FALSE(a.buffer()->owned());
    EXPECT_EQ(a.raw_data(), storage.data());
    Tensor row = a.SubTensor(1);
    Tensor copy = a;
    {
      Tensor flat = a.Reshaped(Shape{6});
      a = Tensor();
      copy = Tensor();
      EXPECT_EQ(releases, 0);
    }
    EXPECT_EQ(releases, 0);
    EXPECT_EQ(row.flat<float>()[2], 6.0f);
  }
  EXPECT_EQ(releases, 1);
}

TEST(TensorTest, BorrowedWithEmptyReleaseIsFine) {
  int32_t value = 7;
  Tensor t = Tensor::Borrowed(kInt32, Shape{}, &value, nullptr);
  EXPECT_EQ(t.scalar<int32_t>(), 7);
}

TEST(TensorTest, ViewsShareTheBuffer) {
  Tensor t = Tensor::FromVector<int32_t>({0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}, Shape{4, 3});
  Tensor slice = t.Slice(1, 3);
  EXPECT_EQ(slice.shape(), (Shape{2, 3}));
  EXPECT_TRUE(slice.SharesBufferWith(t));
  EXPECT_EQ(slice.flat<int32_t>()[0], 3);
  EXPECT_EQ(slice.flat<int32_t>()[5], 8);
  EXPECT_EQ(slice.byte_offset(), 3 * sizeof(int32_t));

  Tensor row = t.SubTensor(3);
  EXPECT_EQ(row.shape(), (Shape{3}));
  EXPECT_EQ(row.flat<int32_t>()[0], 9);
  Tensor sub_of_slice = slice.SubTensor(1);
  EXPECT_EQ(sub_of_slice.flat<int32_t>()[0], 6);

  Tensor reshaped = t.Reshaped(Shape{2, 2, 3});
  EXPECT_TRUE(reshaped.SharesBufferWith(t));
  EXPECT_EQ(reshaped.rank(), 3);

  // A write through one view is seen by the others.
  slice.data<int32_t>()[0] = 100;
  EXPECT_EQ(t.flat<int32_t>()[3], 100);
  EXPECT_EQ(reshaped.flat<int32_t>()[3], 100);

  Tensor empty = t.Slice(2, 2);
  EXPECT_EQ(empty.NumElements(), 0);
  EXPECT_FALSE(t.BufferIsUnique());
}

TEST(TensorTest, SliceOfEmptyLeadingDim) {
  Tensor t(kFloat32, Shape{0, 5});
  Tensor s = t.Slice(0, 0);
  EXPECT_EQ(s.shape(), (Shape{0, 5}));
}

// Shapes come from files: an element count past int64 is an InvalidArgument, never a
// signed overflow; a zero dimension does not excuse huge others.
TEST(ShapeTest, NumElementsIsCheckedArithmetic) {
  constexpr int64_t k2to32 = int64_t{1} << 32;
  EXPECT_EQ((Shape{k2to32, 2}).num_elements(), int64_t{1} << 33);
  EXPECT_EQ((Shape{0, 5}).num_elements(), 0);
  EXPECT_EQ(Shape().num_elements(), 1);
  for (const Shape& s : {Shape{k2to32, k2to32}, Shape{k2to32, k2to32, 0}, Shape{0, k2to32, k2to32},
                         Shape{INT64_MAX, 2}}) {
    try {
      s.num_elements();
      ADD_FAILURE() << s << " was accepted";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
      EXPECT_NE(e.message().find(s.ToString()), std::string::npos) << e.message();
    }
    EXPECT_EQ(s.NumElementsAtMost(INT64_MAX), std::nullopt) << s;
  }
  EXPECT_THROW(Tensor(kFloat32, Shape{k2to32, k2to32, 0}), Error);
  EXPECT_EQ((Shape{3, 0, 4}).NumElementsAtMost(12), 0);
  EXPECT_EQ((Shape{3, 4}).NumElementsAtMost(12), 12);
  EXPECT_EQ((Shape{3, 4}).NumElementsAtMost(11), std::nullopt);
  // A scalar has one element: with room for none it does not fit (fuzz_iterator_state
  // found ReadTensor copying an int64 scalar out of the last 4 bytes of a state blob).
  EXPECT_EQ(Shape().NumElementsAtMost(0), std::nullopt);
  EXPECT_EQ(Shape().NumElementsAtMost(1), 1);
  EXPECT_EQ((Shape{0}).NumElementsAtMost(0), 0);
  EXPECT_EQ((Shape{3, -1}).NumElementsAtMost(100), std::nullopt);
  EXPECT_EQ(Shape::Unknown().NumElementsAtMost(100), std::nullopt);
}

TEST(TensorTest, StringsOwnAndCopy) {
  Tensor t = Tensor::FromVector<std::string>({"a", std::string(1000, 'b'), ""}, Shape{3});
  EXPECT_EQ(t.dtype(), kString);
  EXPECT_EQ(t.flat<std::string>()[1].size(), 1000u);
  Tensor c = t.Clone();
  EXPECT_FALSE(c.SharesBufferWith(t));
  EXPECT_TRUE(c.Equals(t));
  c.flat<std::string>()[0] = "changed";
  EXPECT_EQ(t.flat<std::string>()[0], "a");
  EXPECT_FALSE(c.Equals(t));
  Tensor s = Tensor::ScalarString("hello");
  EXPECT_EQ(s.scalar<std::string>(), "hello");
  EXPECT_EQ(t.SubTensor(1).scalar<std::string>(), std::string(1000, 'b'));
}

TEST(TensorTest, CloneIsDeepAndCompact) {
  Tensor t = Tensor::FromVector<float>({1, 2, 3, 4}, Shape{2, 2});
  Tensor row = t.SubTensor(1);
  Tensor c = row.Clone();
  EXPECT_FALSE(c.SharesBufferWith(t));
  EXPECT_EQ(c.byte_offset(), 0u);
  EXPECT_TRUE(c.BufferIsUnique());
  EXPECT_EQ(c.flat<float>()[0], 3.0f);
  t.data<float>()[2] = -1;
  EXPECT_EQ(c.flat<float>()[0], 3.0f);
}

TEST(TensorTest, EqualsComparesDtypeShapeAndValues) {
  Tensor a = Tensor::FromVector<float>({1, 2, 3, 4});
  EXPECT_TRUE(a.Equals(Tensor::FromVector<float>({1, 2, 3, 4})));
  EXPECT_FALSE(a.Equals(Tensor::FromVector<float>({1, 2, 3, 5})));
  EXPECT_FALSE(a.Equals(a.Reshaped(Shape{2, 2})));
  EXPECT_FALSE(a.Equals(Tensor::FromVector<int32_t>({1, 2, 3, 4})));
  EXPECT_TRUE(Tensor(kFloat32, Shape{0}).Equals(Tensor(kFloat32, Shape{0})));
  Tensor b = Tensor::FromVector<bool>({true, false});
  EXPECT_TRUE(b.Equals(Tensor::FromVector<bool>({true, false})));
}

TEST(TensorTest, CopyFromCopiesElements) {
  Tensor dst = Tensor::Zeros(kInt32, Shape{2, 2});
  dst.CopyFrom(Tensor::FromVector<int32_t>({1, 2, 3, 4}));
  EXPECT_EQ(dst.flat<int32_t>()[3], 4);
}

TEST(TensorTest, DebugStringAbbreviates) {
  Tensor t = Tensor::FromVector<int32_t>({1, 2, 3, 4, 5, 6}, Shape{2, 3});
  EXPECT_EQ(t.DebugString(), "int32[2,3] [1 2 3 4 5 6]");
  EXPECT_EQ(t.DebugString(2), "int32[2,3] [1 2 ...]");
  EXPECT_EQ(Tensor::FromVector<uint8_t>({7}).DebugString(), "uint8[1] [7]");
}

TEST(ShapeTest, BasicsAndToString) {
  Shape s{32, 784};
  EXPECT_EQ(s.rank(), 2);
  EXPECT_EQ(s.num_elements(), 32 * 784);
  EXPECT_EQ(s.ToString(), "[32,784]");
  EXPECT_EQ(Shape().ToString(), "[]");
  EXPECT_EQ(Shape().num_elements(), 1);
  EXPECT_EQ((Shape{kUnknownDim, 784}).ToString(), "[?,784]");
  EXPECT_EQ(Shape::Unknown().ToString(), "<unknown>");
  EXPECT_FALSE(Shape::Unknown().fully_defined());
  EXPECT_FALSE((Shape{kUnknownDim, 3}).fully_defined());
  EXPECT_EQ(s.WithLeadingDim(4), (Shape{4, 32, 784}));
  EXPECT_EQ(s.WithoutLeadingDim(), (Shape{784}));
  EXPECT_EQ(s.dim(-1), 784);
}

TEST(ShapeTest, CompatibilityAndMerge) {
  const Shape partial{kUnknownDim, 784};
  EXPECT_TRUE(partial.IsCompatibleWith(Shape{32, 784}));
  EXPECT_FALSE(partial.IsCompatibleWith(Shape{32, 10}));
  EXPECT_FALSE(partial.IsCompatibleWith(Shape{784}));
  EXPECT_TRUE(Shape::Unknown().IsCompatibleWith(Shape{1, 2, 3}));
  EXPECT_EQ(partial.MergeWith(Shape{32, kUnknownDim}), (Shape{32, 784}));
  EXPECT_EQ(Shape::Unknown().MergeWith(partial), partial);
  EXPECT_EQ(partial.MergeWith(Shape::Unknown()), partial);
  try {
    partial.MergeWith(Shape{32, 10});
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(e.message().find("[?,784]"), std::string::npos) << e.what();
  }
  EXPECT_FALSE(Shape::Unknown() == Shape());
}

TEST(DTypeTest, NamesAndSizes) {
  EXPECT_EQ(DTypeName(kFloat32), "float32");
  EXPECT_EQ(DTypeFromName("double"), kFloat64);
  EXPECT_THROW(DTypeFromName("complex64"), Error);
  EXPECT_EQ(DTypeSize(kInt64), 8u);
  EXPECT_EQ(DTypeSize(kBool), 1u);
  EXPECT_TRUE(IsValidDType(1));
  EXPECT_FALSE(IsValidDType(5));
}

}  // namespace
}  // namespace loom
