// TF op rules, continued (tf_ops.h): the reductions, selection (TopKV2, TopK, Where,
// Select, SelectV2), gathers and scatters (GatherV2, GatherNd, ScatterNd,
// UnsortedSegmentSum), transposes, batched products and the fills of a shape
// (ZerosLike, OnesLike): among them the ops that tf.nn.top_k, tf.boolean_mask,
// tf.clip_by_norm and TF 1.15's einsum leave in a frozen graph, and the transcendental
// functions of math_trig.h.
#include "loom/base/error.h"
#include "loom/estimator/tf_ops_internal.h"
#include "loom/ops/array.h"
#include "loom/ops/grad_support.h"
#include "loom/ops/math.h"
#include "loom/ops/math_trig.h"
#include "loom/ops/matmul.h"
#include "loom/ops/reduce.h"
#include "loom/ops/scatter.h"
#include "loom/ops/state.h"
#include "loom/ops/topk.h"
#include "loom/ops/unique.h"

namespace loom::tf_import {
namespace {

// TF1's Select: a vector condition with x of higher rank picks whole rows of x (cond[i]
// for x[i, ...]); otherwise the shapes match (or cond is a scalar). Loom's Select
// broadcasts numpy-style, so a vector condition is reshaped to [n, 1, ..., 1] first: with
// rank(x) - 1 ones, counted when it runs where x's rank is not known.
Output SelectRule(OpContext& c) {
  Output cond = c.In(0);
  const Shape& cs = cond.shape();
  const Shape& xs = c.In(1).shape();
  if (!cs.rank_known()) {
    throw Unimplemented(c.source, ": TF node '", c.node.name(),
                        "' (Select): the rank of its condition must be known (a vector "
                        "condition picks rows, another is elementwise)");
  }
  if (cs.rank() == 1 && xs.rank_known() && xs.rank() > 1) {
    std::vector<int64_t> rows(xs.rank(), 1);
    rows[0] = -1;
    cond = Reshape(c.helper, cond, rows);
  } else if (cs.rank() == 1 && !xs.rank_known()) {
    const Scope& h = c.helper;
    const Output one = Const(h, Tensor::Scalar<int64_t>(1));
    Output ones = Fill(h, Reshape(h, Sub(h, Rank(h, c.In(1)), one), {1}), one);
    cond = Reshape(h, cond, Concat(h, {ShapeOf(h, cond), ones}, 0));
  }
  return Select(c.named, cond, c.In(1), c.In(2));
}

using ReduceFn = Output (*)(const Scope&, Input, std::vector<int64_t>, ReduceOptions);

// TF's reduction of input 0 over the constant axes of input 1, keep_dims from the node. An
// empty axes list reduces nothing in TF (tf.reduce_sum(x, axis=[]) is x), where Loom's
// reduces every dim: it becomes an Identity.
Output Reduction(OpContext& c, ReduceFn op) {
  const std::vector<int64_t> axes = c.ConstInts(1);
  if (axes.empty()) return Identity(c.named, c.In(0));
  return op(c.named, c.In(0), axes, {.keep_dims = c.AttrB("keep_dims", false)});
}

// Any(b) = sum(b as 0 / 1) > 0 and All(b) = !Any(!b): Loom has no boolean reductions; both
// are exact (a sum of non-negative values is 0 only when all are), and All of no elements
// is true, as in TF.
Output AnyRule(OpContext& c, Output b, bool negate) {
  const std::vector<int64_t> axes = c.ConstInts(1);
  if (axes.empty()) return Identity(c.named, c.In(0));
  Output count =
      Sum(c.helper, Cast(c.helper, b, kFloat32), axes, {.keep_dims = c.AttrB("keep_dims", false)});
  if (!negate) return Greater(c.named, count, 0.0f);
  return LogicalNot(c.named, Greater(c.helper, count, 0.0f));
}

Output BatchMatMulRule(OpContext& c) {
  return BatchMatMul(
      c.named, c.In(0), c.In(1),
      {.transpose_a = c.AttrB("adj_x", false), .transpose_b = c.AttrB("adj_y", false)});
}

}  // namespace

void AddArrayRules(std::map<std::string, TfOp>& table) {
  const std::map<std::string, TfOp> rules = {
      {"Mean", [](OpContext& c) { return Reduction(c, Mean); }},
      {"Sum", [](OpContext& c) { return Reduction(c, Sum); }},
      {"Min", [](OpContext& c) { return Reduction(c, Min); }},
      {"Max", [](OpContext& c) { return Reduction(c, Max); }},
      {"Prod", [](OpContext& c) { return Reduction(c, Prod); }},
      {"Any", [](OpContext& c) { return AnyRule(c, c.In(0), false); }},
      {"All", [](OpContext& c) { return AnyRule(c, LogicalNot(c.helper, c.In(0)), true); }},
      // (values, indices): output 1 of the node is Loom's int32 indices, as TF's.
      {"TopKV2",
       [](OpContext& c) {
         return TopKV2(c.named, c.In(0), c.In(1), c.AttrB("sorted", true)).values;
       }},
      {"TopK",
       [](OpContext& c) {
         const auto k = static_cast<int32_t>(c.Attr("k").i());
         return TopKV2(c.named, c.In(0), Const(c.helper, Tensor::Scalar<int32_t>(k)),
                       c.AttrB("sorted", true))
             .values;
       }},
      {"Where", [](OpContext& c) { return Where(c.named, c.In(0)); }},
      {"Select", SelectRule},
      {"SelectV2", [](OpContext& c) { return Select(c.named, c.In(0), c.In(1), c.In(2)); }},
      {"GatherV2",
       [](OpContext& c) {
         if (c.node.attr().count("batch_dims") && c.node.attr().at("batch_dims").i() != 0) {
           throw Unimplemented(c.source, ": TF node '", c.node.name(),
                               "' (GatherV2) uses batch_dims; Loom's Gather has none");
         }
         return Gather(c.named, c.In(0), c.In(1), c.ConstInts(2).at(0));
       }},
      {"Gather", [](OpContext& c) { return Gather(c.named, c.In(0), c.In(1)); }},
      {"Transpose", [](OpContext& c) { return Transpose(c.named, c.In(0), c.ConstInts(1)); }},
      {"BatchMatMul", BatchMatMulRule},
      {"BatchMatMulV2", BatchMatMulRule},
      {"GatherNd", [](OpContext& c) { return GatherNd(c.named, c.In(0), c.In(1)); }},
      {"ScatterNd", [](OpContext& c) { return ScatterNd(c.named, c.In(0), c.In(1), c.In(2)); }},
      {"UnsortedSegmentSum",
       [](OpContext& c) { return UnsortedSegmentSum(c.named, c.In(0), c.In(1), c.In(2)); }},
      // (y, idx): output 1 is the positions, in out_idx (int32 by default, as TF's).
      {"Unique",
       [](OpContext& c) {
         const DType out_idx = c.node.attr().count("out_idx")
                                   ? DTypeFromTf(c.node.attr().at("out_idx").type(), c.node.name())
                                   : kInt32;
         return Unique(c.named, c.In(0), out_idx).y;
       }},
      {"Sin", [](OpContext& c) { return Unary(c, Sin); }},
      {"Cos", [](OpContext& c) { return Unary(c, Cos); }},
      {"Tan", [](OpContext& c) { return Unary(c, Tan); }},
      {"Asin", [](OpContext& c) { return Unary(c, Asin); }},
      {"Acos", [](OpContext& c) { return Unary(c, Acos); }},
      {"Atan", [](OpContext& c) { return Unary(c, Atan); }},
      {"Sinh", [](OpContext& c) { return Unary(c, Sinh); }},
      {"Cosh", [](OpContext& c) { return Unary(c, Cosh); }},
      {"Expm1", [](OpContext& c) { return Unary(c, Expm1); }},
      {"Erf", [](OpContext& c) { return Unary(c, Erf); }},
      {"Ceil", [](OpContext& c) { return Unary(c, Ceil); }},
      {"Atan2", [](OpContext& c) { return Binary(c, Atan2); }},
      {"ZerosLike", [](OpContext& c) { return ZerosLike(c.named, c.In(0)); }},
      {"OnesLike", [](OpContext& c) { return OnesLike(c.named, c.In(0)); }},
  };
  table.insert(rules.begin(), rules.end());
}

}  // namespace loom::tf_import
