// The layouts and types the shared oneDNN convolution code asks for (onednn_internal.h):
// float32 keeps NHWC activations and `any` weights (onednn_conv.h says why), bf16 reads
// bf16 operands and writes float32 results, all in `any`; and TF's padding as oneDNN's.
// These run on every CPU: no primitive is made (the bf16 ones need AMX or AVX-512 BF16).
#include "loom/ops/onednn_internal.h"

#include <gtest/gtest.h>

namespace loom::onednn_internal {
namespace {

using dnnl::memory;
using Tag = memory::format_tag;
constexpr auto kF32 = memory::data_type::f32;
constexpr auto kBf16 = memory::data_type::bf16;

// in [2, 5, 7, 3], filter [2, 3, 3, 4], strides 2x1, SAME: out [2, 3, 7, 4]; the height's
// padding total 1 goes after the image, the width's 2 splits 1 / 1.
nn_internal::Geometry SameGeometry() {
  return {.batch = 2,
          .in_h = 5,
          .in_w = 7,
          .channels = 3,
          .k_h = 2,
          .k_w = 3,
          .stride_h = 2,
          .stride_w = 1,
          .out_h = 3,
          .out_w = 7,
          .pad_top = 0,
          .pad_left = 1};
}

TEST(OnednnInternalTest, Float32AsksNhwcActivationsAndAnyWeights) {
  const auto d = MakeConvDescs(ConvOperands::kFloat32, SameGeometry(), 4);
  ASSERT_TRUE(d.has_value());
  EXPECT_EQ(d->src, (memory::dims{2, 3, 5, 7}));
  EXPECT_EQ(d->weights, (memory::dims{4, 3, 2, 3}));
  EXPECT_EQ(d->dst, (memory::dims{2, 4, 3, 7}));
  EXPECT_TRUE(d->src_user == memory::desc(d->src, kF32, Tag::nhwc));
  EXPECT_TRUE(d->weights_user == memory::desc(d->weights, kF32, Tag::hwio));
  EXPECT_TRUE(d->dst_user == memory::desc(d->dst, kF32, Tag::nhwc));
  for (ConvRole role : {ConvRole::kOperand, ConvRole::kResult}) {
    // The activations are the user's own layout: Execution passes them without a reorder.
    EXPECT_TRUE(d->Src(role) == d->src_user);
    EXPECT_TRUE(d->Dst(role) == d->dst_user);
    EXPECT_TRUE(d->Weights(role) == memory::desc(d->weights, kF32, Tag::any));
  }
  EXPECT_EQ(d->strides, (memory::dims{2, 1}));
  EXPECT_EQ(d->pad_l, (memory::dims{0, 1}));
  EXPECT_EQ(d->pad_r, (memory::dims{1, 1}));
}

TEST(OnednnInternalTest, Bf16ReadsBf16AndWritesFloat32InAnyLayout) {
  const auto d = MakeConvDescs(ConvOperands::kBf16, SameGeometry(), 4);
  ASSERT_TRUE(d.has_value());
  // The user's layouts stay float32 NHWC / HWIO: the reorders convert.
  EXPECT_TRUE(d->src_user == memory::desc(d->src, kF32, Tag::nhwc));
  EXPECT_TRUE(d->weights_user == memory::desc(d->weights, kF32, Tag::hwio));
  EXPECT_TRUE(d->dst_user == memory::desc(d->dst, kF32, Tag::nhwc));
  EXPECT_TRUE(d->Src(ConvRole::kOperand) == memory::desc(d->src, kBf16, Tag::any));
  EXPECT_TRUE(d->Weights(ConvRole::kOperand) == memory::desc(d->weights, kBf16, Tag::any));
  EXPECT_TRUE(d->Dst(ConvRole::kOperand) == memory::desc(d->dst, kBf16, Tag::any));
  EXPECT_TRUE(d->Src(ConvRole::kResult) == memory::desc(d->src, kF32, Tag::any));
  EXPECT_TRUE(d->Weights(ConvRole::kResult) == memory::desc(d->weights, kF32, Tag::any));
  EXPECT_TRUE(d->Dst(ConvRole::kResult) == memory::desc(d->dst, kF32, Tag::any));
  EXPECT_EQ(d->pad_r, (memory::dims{1, 1}));
}

TEST(OnednnInternalTest, ValidWindowThatLeavesInputUnreadNeedsNoPadding) {
  // in 6 x 6, window 3, stride 2, VALID: out 2 x 2, the last row and column unread.
  const nn_internal::Geometry g{.batch = 1,
                                .in_h = 6,
                                .in_w = 6,
                                .channels = 1,
                                .k_h = 3,
                                .k_w = 3,
                                .stride_h = 2,
                                .stride_w = 2,
                                .out_h = 2,
                                .out_w = 2,
                                .pad_top = 0,
                                .pad_left = 0};
  const auto d = MakeConvDescs(ConvOperands::kFloat32, g, 1);
  ASSERT_TRUE(d.has_value());
  EXPECT_EQ(d->pad_l, (memory::dims{0, 0}));
  EXPECT_EQ(d->pad_r, (memory::dims{0, 0}));
}

TEST(OnednnInternalTest, NoDescriptorsWhenNoPaddingGivesTheOutputSize) {
  // in 7, window 3, stride 1 gives at least 5 rows; a geometry claiming 3 has no oneDNN
  // equivalent, so the callers fall back to im2col (or the emulated bf16 path).
  nn_internal::Geometry g = SameGeometry();
  g.in_h = 7;
  g.k_h = 3;
  g.stride_h = 1;
  g.out_h = 3;
  EXPECT_FALSE(MakeConvDescs(ConvOperands::kFloat32, g, 4).has_value());
  EXPECT_FALSE(MakeConvDescs(ConvOperands::kBf16, g, 4).has_value());
  EXPECT_FALSE(Conv2D(ConvOperands::kFloat32, g, 4, nullptr, nullptr, nullptr, 1));
}

}  // namespace
}  // namespace loom::onednn_internal
