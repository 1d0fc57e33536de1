#ifndef LOOM_ESTIMATOR_TF_OPS_H_
#define LOOM_ESTIMATOR_TF_OPS_H_

// The TF op -> Loom op rules behind tf_saved_model.h: one entry per TF op name, each
// building the Loom ops that compute it from the node's attributes and its already
// translated inputs. Internal to the estimator layer (tf_saved_model.cc uses it).
#include <string>
#include <vector>

#include "loom/graph/graph.h"
#include "loom/graph/op_def.h"
#include "loom/graph/scope.h"
#include "loom/io/proto/node_def.pb.h"
#include "loom/io/proto/tensor_shape.pb.h"
#include "loom/io/tf_checkpoint.h"

namespace loom::tf_import {

// TF's DataType (reference types folded to their value type) as a Loom DType;
// Unimplemented naming `what` for one Loom lacks.
DType DTypeFromTf(int tf_dtype, std::string_view what);
// Unknown rank and unknown dims (-1) kept.
Shape ShapeFromTf(const proto::TensorShapeProto& p);

// True for the ops SupportedTfOps lists (Const and Placeholder are handled by the caller:
// constants and feeds).
bool IsSupportedTfOp(const std::string& op);
std::vector<std::string> SupportedTfOps();

// TF1's frame-based while loop ops (Enter, Exit, NextIteration, LoopCond): Loom has no
// frames, so a graph that needs one is refused naming each such node.
bool IsTf1LoopOp(const std::string& op);

// Adds the Loom ops computing `node` (named after it) to `graph`, each with
// `control_inputs` (the translated `^name` inputs, in the node's order) as control
// inputs; variables (VariableV2, VarHandleOp) become constants read from `variables`.
// TF1 control flow keeps TF's dead-tensor meaning: Switch / RefSwitch and Merge /
// RefMerge become Loom's Switch and Merge (ops/control.h). A node without outputs (NoOp,
// Assert) is returned as output 0 of its node. Errors name `source` and the node.
// REQUIRES: IsSupportedTfOp(node.op()) and node.op() is not Const / Placeholder.
Output TranslateTfNode(const proto::NodeDef& node, std::vector<Output> inputs,
                       const std::vector<Node*>& control_inputs, Graph& graph,
                       const TfCheckpointReader* variables, const std::string& source);

// The op records the translation adds beyond the ops layer's (TfParseExample), so a
// translated graph that is exported can be loaded again (AllOps() calls this).
void RegisterTfImportOps(OpRegistry& registry);

}  // namespace loom::tf_import

#endif  // LOOM_ESTIMATOR_TF_OPS_H_
