// The TF op rules of tf_ops_nn.cc (and Cumprod, Atan2), each on a GraphDef built node by
// node, against values worked out by hand from TF's definitions.
#include <gtest/gtest.h>

#include <numbers>
#include <string>
#include <vector>

#include "loom/estimator/estimator_test_util.h"
#include "loom/estimator/tf_graph_test_util.h"
#include "loom/estimator/tf_saved_model.h"
#include "loom/testing/error_of.h"

namespace loom {
namespace {

using tf_testing::GraphBuilder;

std::vector<float> FloatsOf(const Tensor& t) {
  return {t.flat<float>().begin(), t.flat<float>().end()};
}

// TF's DepthwiseConv2dNative: a 2x2 image of two channels, (1, 10) (2, 20) / (3, 30) (4, 40);
// each tap of the filter multiplies channel 0 by (1, -1) and channel 1 by (1, 0.5), so the
// one VALID output holds the channel sums 10 and 100 times those: 10, -10, 100, 50.
TEST(TfNnOpsTest, DepthwiseConv2dNative) {
  GraphBuilder g;
  g.Placeholder("img", proto::DT_FLOAT);
  std::vector<float> taps;
  for (int t = 0; t < 4; ++t) taps.insert(taps.end(), {1, -1, 1, 0.5f});
  g.Floats("w", taps, {2, 2, 2, 2});
  proto::NodeDef* dw = g.Add("dw", "DepthwiseConv2dNative", {"img", "w"});
  GraphBuilder::SetInts(dw, "strides", {1, 1, 1, 1});
  (*dw->mutable_attr())["padding"].set_s("VALID");
  (*dw->mutable_attr())["data_format"].set_s("NHWC");
  GraphBuilder::SetInts(dw, "dilations", {1, 1, 1, 1});
  // SAME at stride 2 over the same image: one output, the window at the top left covers all.
  proto::NodeDef* same = g.Add("same", "DepthwiseConv2dNative", {"img", "w"});
  GraphBuilder::SetInts(same, "strides", {1, 2, 2, 1});
  (*same->mutable_attr())["padding"].set_s("SAME");
  estimator_testing::TempDir dir;
  auto model = TfModel::LoadFrozenGraph(Env::Default(), g.Write(dir), {{"img", "img"}},
                                        {{"dw", "dw"}, {"same", "same"}});
  const Tensor img = Tensor::FromVector<float>({1, 10, 2, 20, 3, 30, 4, 40}, Shape{1, 2, 2, 2});
  auto out = model->Run("serving_default", {{"img", img}});
  EXPECT_EQ(out["dw"].shape(), Shape({1, 1, 1, 4}));
  EXPECT_EQ(FloatsOf(out["dw"]), (std::vector<float>{10, -10, 100, 50}));
  EXPECT_EQ(FloatsOf(out["same"]), (std::vector<float>{10, -10, 100, 50}));
}

// TF's Conv2DBackpropInput (tf.nn.conv2d_transpose): at stride 2 with a 2x2 filter of ones
// each of the four values fills its own 2x2 block of the [1, 4, 4, 1] input_sizes; at
// stride 1 VALID one value 2 times the filter 1..4 is the filter doubled.
TEST(TfNnOpsTest, Conv2DBackpropInputIsTheTransposedConvolution) {
  GraphBuilder g;
  g.Placeholder("v", proto::DT_FLOAT);  // [1, 2, 2, 1]: 1, 2, 3, 4
  g.Floats("ones", std::vector<float>(4, 1.f), {2, 2, 1, 1});
  g.Ints("sizes", {1, 4, 4, 1}, {4});
  proto::NodeDef* up = g.Add("up", "Conv2DBackpropInput", {"sizes", "ones", "v"});
  GraphBuilder::SetInts(up, "strides", {1, 2, 2, 1});
  (*up->mutable_attr())["padding"].set_s("SAME");
  (*up->mutable_attr())["data_format"].set_s("NHWC");
  g.Floats("one", {2}, {1, 1, 1, 1});
  g.Floats("ramp", {1, 2, 3, 4}, {2, 2, 1, 1});
  g.Ints("sizes2", {1, 2, 2, 1}, {4});
  proto::NodeDef* spread = g.Add("spread", "Conv2DBackpropInput", {"sizes2", "ramp", "one"});
  GraphBuilder::SetInts(spread, "strides", {1, 1, 1, 1});
  (*spread->mutable_attr())["padding"].set_s("VALID");
  estimator_testing::TempDir dir;
  auto model = TfModel::LoadFrozenGraph(Env::Default(), g.Write(dir), {{"v", "v"}},
                                        {{"up", "up"}, {"spread", "spread"}});
  auto out = model->Run("serving_default",
                        {{"v", Tensor::FromVector<float>({1, 2, 3, 4}, Shape{1, 2, 2, 1})}});
  EXPECT_EQ(out["up"].shape(), Shape({1, 4, 4, 1}));
  EXPECT_EQ(FloatsOf(out["up"]),
            (std::vector<float>{1, 1, 2, 2, 1, 1, 2, 2, 3, 3, 4, 4, 3, 3, 4, 4}));
  EXPECT_EQ(FloatsOf(out["spread"]), (std::vector<float>{2, 4, 6, 8}));
}

// TF's SpaceToBatchND example: [1, 4, 4, 1] of 1..16 with block [2, 2] is [4, 2, 2, 1] of
// the four interleaved sub-images; BatchToSpaceND puts them back.
TEST(TfNnOpsTest, SpaceToBatchNDAndBack) {
  GraphBuilder g;
  g.Placeholder("x", proto::DT_FLOAT);
  g.Ints("block", {2, 2}, {2});
  g.Ints("pads", {0, 0, 0, 0}, {2, 2});
  g.Add("s2b", "SpaceToBatchND", {"x", "block", "pads"});
  g.Add("b2s", "BatchToSpaceND", {"s2b", "block", "pads"});
  estimator_testing::TempDir dir;
  auto model = TfModel::LoadFrozenGraph(Env::Default(), g.Write(dir), {{"x", "x"}},
                                        {{"s2b", "s2b"}, {"b2s", "b2s"}});
  std::vector<float> ramp(16);
  for (int i = 0; i < 16; ++i) ramp[i] = i + 1;
  auto out =
      model->Run("serving_default", {{"x", Tensor::FromVector<float>(ramp, Shape{1, 4, 4, 1})}});
  EXPECT_EQ(out["s2b"].shape(), Shape({4, 2, 2, 1}));
  EXPECT_EQ(FloatsOf(out["s2b"]),
            (std::vector<float>{1, 3, 9, 11, 2, 4, 10, 12, 5, 7, 13, 15, 6, 8, 14, 16}));
  EXPECT_EQ(FloatsOf(out["b2s"]), ramp);
}

// TF's Cumprod (exclusive, reverse) and Atan2 on x = [2, 3, 5]: cumprod reversed and
// exclusive is [15, 5, 1]; atan2(x, -x) = 3 pi / 4 in the second quadrant.
TEST(TfNnOpsTest, CumprodAndAtan2) {
  GraphBuilder g;
  g.Placeholder("x", proto::DT_FLOAT);
  g.Ints("axis", {0}, {});
  proto::NodeDef* cp = g.Add("cp", "Cumprod", {"x", "axis"});
  (*cp->mutable_attr())["exclusive"].set_b(true);
  (*cp->mutable_attr())["reverse"].set_b(true);
  g.Add("neg", "Neg", {"x"});
  g.Add("at", "Atan2", {"x", "neg"});
  estimator_testing::TempDir dir;
  auto model = TfModel::LoadFrozenGraph(Env::Default(), g.Write(dir), {{"x", "x"}},
                                        {{"cp", "cp"}, {"at", "at"}});
  auto out = model->Run("serving_default", {{"x", Tensor::FromVector<float>({2, 3, 5})}});
  EXPECT_EQ(FloatsOf(out["cp"]), (std::vector<float>{15, 5, 1}));
  for (float v : FloatsOf(out["at"])) EXPECT_NEAR(v, 3 * std::numbers::pi / 4, 1e-6);
}

// TF's MaxPoolWithArgmax: a [1, 2, 2, 1] image 3 9 / 4 1 pooled whole is 9, at flat index
// (0 * 2 + 1) * 1 + 0 = 1, in int32 (Targmax); output 1 of the node is the argmax.
TEST(TfNnOpsTest, MaxPoolWithArgmax) {
  GraphBuilder g;
  g.Placeholder("img", proto::DT_FLOAT);
  proto::NodeDef* p = g.Add("pool", "MaxPoolWithArgmax", {"img"});
  GraphBuilder::SetInts(p, "ksize", {1, 2, 2, 1});
  GraphBuilder::SetInts(p, "strides", {1, 2, 2, 1});
  (*p->mutable_attr())["padding"].set_s("VALID");
  (*p->mutable_attr())["Targmax"].set_type(proto::DT_INT32);
  estimator_testing::TempDir dir;
  auto model = TfModel::LoadFrozenGraph(Env::Default(), g.Write(dir), {{"img", "img"}},
                                        {{"max", "pool:0"}, {"arg", "pool:1"}});
  auto out = model->Run("serving_default",
                        {{"img", Tensor::FromVector<float>({3, 9, 4, 1}, Shape{1, 2, 2, 1})}});
  EXPECT_EQ(FloatsOf(out["max"]), (std::vector<float>{9}));
  ASSERT_EQ(out["arg"].dtype(), kInt32);
  EXPECT_EQ(out["arg"].flat<int32_t>()[0], 1);
}

// TF's dilations attribute: a 2x2 filter of ones dilated by 2 over a 3x3 image of 1..9
// (VALID) sums the four corners, 1 + 3 + 7 + 9 = 20; Conv2DBackpropInput dilated the same
// way spreads one value 2 onto those corners of a [1, 3, 3, 1] output.
TEST(TfNnOpsTest, DilatedDepthwiseAndConv2DBackpropInput) {
  GraphBuilder g;
  g.Placeholder("img", proto::DT_FLOAT);
  g.Floats("w", std::vector<float>(4, 1.f), {2, 2, 1, 1});
  proto::NodeDef* dw = g.Add("y", "DepthwiseConv2dNative", {"img", "w"});
  GraphBuilder::SetInts(dw, "strides", {1, 1, 1, 1});
  (*dw->mutable_attr())["padding"].set_s("VALID");
  GraphBuilder::SetInts(dw, "dilations", {1, 2, 2, 1});
  g.Floats("two", {2.f}, {1, 1, 1, 1});
  g.Ints("sizes", {1, 3, 3, 1}, {4});
  proto::NodeDef* up = g.Add("up", "Conv2DBackpropInput", {"sizes", "w", "two"});
  GraphBuilder::SetInts(up, "strides", {1, 1, 1, 1});
  (*up->mutable_attr())["padding"].set_s("VALID");
  GraphBuilder::SetInts(up, "dilations", {1, 2, 2, 1});
  estimator_testing::TempDir dir;
  auto model = TfModel::LoadFrozenGraph(Env::Default(), g.Write(dir), {{"img", "img"}},
                                        {{"y", "y:0"}, {"up", "up:0"}});
  auto out = model->Run(
      "serving_default",
      {{"img", Tensor::FromVector<float>({1, 2, 3, 4, 5, 6, 7, 8, 9}, Shape{1, 3, 3, 1})}});
  EXPECT_EQ(out["y"].shape(), Shape({1, 1, 1, 1}));
  EXPECT_EQ(FloatsOf(out["y"]), (std::vector<float>{20}));
  EXPECT_EQ(FloatsOf(out["up"]), (std::vector<float>{2, 0, 2, 0, 0, 0, 2, 0, 2}));
}

TEST(TfNnOpsTest, NchwDepthwiseIsAClearError) {
  GraphBuilder g;
  g.Placeholder("img", proto::DT_FLOAT);
  g.Floats("w", std::vector<float>(4, 1.f), {2, 2, 1, 1});
  proto::NodeDef* dw = g.Add("y", "DepthwiseConv2dNative", {"img", "w"});
  GraphBuilder::SetInts(dw, "strides", {1, 1, 1, 1});
  (*dw->mutable_attr())["padding"].set_s("VALID");
  (*dw->mutable_attr())["data_format"].set_s("NCHW");
  estimator_testing::TempDir dir;
  const std::string path = g.Write(dir);
  const std::string m = testing::ErrorOf(
      [&] {
        TfModel::LoadFrozenGraph(Env::Default(), path, {{"img", "img"}}, {{"y", "y:0"}});
      },
      ErrorCode::kUnimplemented);
  EXPECT_NE(m.find("NCHW"), std::string::npos) << m;
}

}  // namespace
}  // namespace loom
