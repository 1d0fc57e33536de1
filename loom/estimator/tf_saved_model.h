#ifndef LOOM_ESTIMATOR_TF_SAVED_MODEL_H_
#define LOOM_ESTIMATOR_TF_SAVED_MODEL_H_

// TensorFlow models run by Loom: a TF SavedModel (saved_model.pb + variables/, TF's
// SavedModelBuilder / estimator.export_saved_model layout) or a frozen GraphDef (.pb with
// weights as Const nodes). Each signature's subgraph, from its outputs back to its inputs,
// is translated node by node into Loom ops (TF op names mapped to Loom op builders, TF1
// variables replaced by constants read from variables/, the save/restore and
// initialization subgraphs left out because no output needs them) and run by a Session.
//
// Supported TF ops (TfModel::SupportedOps): Const, Placeholder, PlaceholderWithDefault,
// Identity, Snapshot, StopGradient, NoOp, VariableV2, VarHandleOp, ReadVariableOp, MatMul,
// BiasAdd, Add, AddV2, Sub, Mul, RealDiv, Div, TruncateDiv, FloorDiv, FloorMod, Range, Cumsum,
// Maximum, Minimum, Neg, Abs, Square, Sqrt, Rsqrt, Exp, Log, Floor, SquaredDifference, Relu, Relu6,
// Sigmoid, Tanh, Softmax, Conv2D, MaxPool, AvgPool (NHWC), Reshape, Squeeze, ExpandDims, ConcatV2,
// Pack, Shape, StridedSlice, Cast, ArgMax, Mean, Sum, Min, Max, All, Any, Equal, NotEqual, Less,
// LessEqual, Greater, GreaterEqual, LogicalAnd, LogicalNot, RandomUniform, Assert, FusedBatchNorm /
// V2 / V3 (NHWC, output y only), TF1 control flow (Switch, RefSwitch, Merge, RefMerge), and
// ParseExample (the tf.Example signatures of TF Serving models: dense FixedLenFeatures of
// fully defined shape, and VarLenFeatures as TF's sparse indices / values / dense_shape).
// TF1 conds (tf.cond, Keras' learning-phase switch in Dropout and BatchNormalization) keep
// TF's dead-tensor meaning: only the branch the predicate picks runs, Merge forwards the
// live input and is dead when none is (fetching it fails naming the Switch). Control edges
// (`^name` inputs) are followed and kept as control inputs in the node's order, so a
// branch constant hanging off a cond's pivot is dead with its branch and an Assert that an
// output waits on by a control edge runs (a false one fails the Run naming it). TF1 while
// loops (Enter / Exit / NextIteration / LoopCond frames) are refused, naming their nodes.
// A TF1 partitioned variable's parts ("emb/part_0", ...) are read from the checkpoint's
// full tensor "emb" (TfCheckpointReader::GetPart).
// Axis, shape-list and slice arguments must be Const nodes (they are in exported graphs).
// A signature whose subgraph has other ops is unavailable, with one error listing every
// unsupported op and its count; a model none of whose signatures is available fails at
// load with that error.
//
//   auto model = loom::LoadTFSavedModel(env, "half_plus_two/00000123");
//   auto out = model->Run("serving_default", {{"x", x}});   // out["y"]
//
// Thread-safety: Run may be called from one thread at a time.
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "loom/base/env.h"
#include "loom/tensor/tensor.h"

namespace loom {

// One input or output of a signature: the TF tensor ("x:0"), its dtype and static shape.
struct TfTensorInfo {
  std::string name;
  DType dtype = DType::kInvalid;
  Shape shape = Shape::Unknown();
};

// A feature that a signature parses out of serialized tf.Example input (a ParseExample
// node of its graph): what a caller needs to build the records (TfExamplesFromCsv).
struct TfExampleFeature {
  std::string key;
  DType dtype = kFloat32;    // kFloat32, kInt64 or kString
  Shape shape;               // dense: per-record shape (fully defined); var_len: unknown
  bool var_len = false;      // a VarLenFeature (TF's sparse output)
  bool has_default = false;  // dense only: the graph gives a default for a missing feature
};

struct TfSignature {
  std::string method_name;  // "tensorflow/serving/predict", ...
  std::map<std::string, TfTensorInfo> inputs;
  std::map<std::string, TfTensorInfo> outputs;
  // Set when input `example_input` (a string vector) is serialized tf.Example records that
  // the graph parses with ParseExample: the features it reads, by key order. Empty for a
  // signature that takes tensors, and for one whose ParseExample keys are not constants.
  std::string example_input;
  std::vector<TfExampleFeature> example_features;
};

class TfModel {
 public:
  // Reads dir/saved_model.pb, takes the MetaGraphDef whose tag set equals `tags` and
  // restores its variables from dir/variables/variables. Throws NotFound (files, tags),
  // DataLoss (unparsable files), Unimplemented (no signature can run: lists the ops).
  static std::unique_ptr<TfModel> LoadSavedModel(Env* env, const std::string& dir,
                                                 const std::set<std::string>& tags = {"serve"});
  // A frozen GraphDef with one signature "serving_default" whose inputs and outputs map a
  // key to a TF tensor name (inputs must be Placeholder or PlaceholderWithDefault outputs:
  // dtype and shape come from them; a PlaceholderWithDefault not named keeps its default,
  // e.g. keras_learning_phase false). Every node the outputs need must be supported.
  // Empty `inputs`: every Placeholder the outputs need, keyed by its node name ("X" for
  // "X:0"). A node input (data or `^control`) naming no node is InvalidArgument naming
  // both.
  static std::unique_ptr<TfModel> LoadFrozenGraph(
      Env* env, const std::string& path, const std::map<std::string, std::string>& inputs,
      const std::map<std::string, std::string>& outputs);
  ~TfModel();
  TfModel(const TfModel&) = delete;
  TfModel& operator=(const TfModel&) = delete;

  // Every signature of the file, runnable or not.
  const std::map<std::string, TfSignature>& signatures() const { return signatures_; }
  // Signatures that cannot run, with the reason (e.g. "unsupported TF ops: ParseExample x1").
  const std::map<std::string, std::string>& unavailable() const { return unavailable_; }
  const std::vector<std::string>& tags() const { return tags_; }

  // Feeds `inputs` (by signature key; each one required, dtype checked) and returns every
  // output by key. Throws NotFound for an unknown signature, Unimplemented for an
  // unavailable one, InvalidArgument for missing or mistyped inputs.
  std::map<std::string, Tensor> Run(const std::string& signature,
                                    const std::map<std::string, Tensor>& inputs);

  static std::vector<std::string> SupportedOps();

 private:
  struct Compiled;
  TfModel();
  std::map<std::string, TfSignature> signatures_;
  std::map<std::string, std::string> unavailable_;
  std::vector<std::string> tags_;
  std::map<std::string, std::unique_ptr<Compiled>> compiled_;
  friend class TfModelBuilder;
};

// TfModel::LoadSavedModel, TF's tf.saved_model.loader.load.
inline std::unique_ptr<TfModel> LoadTFSavedModel(Env* env, const std::string& dir,
                                                 const std::set<std::string>& tags = {"serve"}) {
  return TfModel::LoadSavedModel(env, dir, tags);
}

// The signatures of a SavedModel's MetaGraphDef `tags` as the file states them, without
// translating the graph (so also for a model Loom cannot run; dtypes Loom lacks are
// kInvalid, example_features are not filled). Throws NotFound, DataLoss as LoadSavedModel.
std::map<std::string, TfSignature> ReadTfSavedModelSignatures(Env* env, const std::string& dir,
                                                              const std::set<std::string>& tags = {
                                                                  "serve"});

}  // namespace loom

#endif  // LOOM_ESTIMATOR_TF_SAVED_MODEL_H_
