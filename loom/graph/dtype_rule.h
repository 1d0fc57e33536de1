#ifndef LOOM_GRAPH_DTYPE_RULE_H_
#define LOOM_GRAPH_DTYPE_RULE_H_

// How an output's dtype follows from its node, declared in the op record beside the shape
// rule (TF's `Output("y: T")`, `Output("y: out_type")`): the dtype of an input, a fixed
// dtype, or an attribute. Graph::AddNode checks the shape rule's dtypes against it, a shape
// rule may set only a shape and take the dtype from it (InferenceContext::set_output_shape),
// and a generator (the Python front end) reads it to type an op's outputs.
//
//   .output_dtypes = {DTypeRule::SameAsInput(0)}          // Add, Relu, Transpose, ...
//   .output_dtypes = {DTypeRule::Fixed(kInt64)}           // ArgMax, Shape, Size
//   .output_dtypes = {DTypeRule::FromAttr(kDstT)}         // Cast
//   .output_dtypes = {DTypeRule::FromAttrList(kOutputTypes)}  // IteratorGetNext, variadic
//
// A value type; copies are independent.
#include <string>

#include "loom/graph/attr_value.h"

namespace loom {

class Node;

class DTypeRule {
 public:
  enum class Kind {
    kSameAsInput,      // input(input())'s dtype
    kSameAsEachInput,  // output i takes input i's dtype (a variadic op mapping inputs 1:1)
    kFixed,            // dtype()
    kFromAttr,         // the type attribute attr()
    kFromAttrList,     // entry i of the list(type) attribute attr()
    kFromTensorAttr,   // the dtype of the tensor attribute attr() (Const's value)
    kByShapeRule,      // the shape rule computes it; how() says how
  };

  static DTypeRule SameAsInput(int input) { return DTypeRule(Kind::kSameAsInput, input); }
  static DTypeRule SameAsEachInput() { return DTypeRule(Kind::kSameAsEachInput); }
  static DTypeRule Fixed(DType dtype) {
    DTypeRule r(Kind::kFixed);
    r.dtype_ = dtype;
    return r;
  }
  static DTypeRule FromAttr(const Attr<DType>& key) { return Named(Kind::kFromAttr, key.name); }
  static DTypeRule FromAttrList(const Attr<std::vector<DType>>& key) {
    return Named(Kind::kFromAttrList, key.name);
  }
  static DTypeRule FromTensorAttr(const Attr<Tensor>& key) {
    return Named(Kind::kFromTensorAttr, key.name);
  }
  // For dtypes no rule above can state (TfParseExample's four groups of outputs). `how`
  // is the sentence a reader (and a generated docstring) gets.
  static DTypeRule ByShapeRule(std::string how) {
    DTypeRule r(Kind::kByShapeRule);
    r.text_ = std::move(how);
    return r;
  }

  Kind kind() const { return kind_; }
  int input() const { return input_; }
  DType dtype() const { return dtype_; }
  // The attribute's name for the kFromAttr* kinds; the sentence for kByShapeRule.
  const std::string& attr() const { return text_; }
  const std::string& how() const { return text_; }

  // The dtype output `i` of `node` must have, or kInvalid where the rule leaves it to the
  // shape rule (kByShapeRule, an absent optional attribute, a list shorter than i + 1).
  DType Resolve(const Node& node, int i) const;
  // "same as input 0", "int64", "attribute DstT", ... for messages and generated docs.
  std::string ToString() const;

 private:
  explicit DTypeRule(Kind kind, int input = 0) : kind_(kind), input_(input) {}
  static DTypeRule Named(Kind kind, std::string_view name) {
    DTypeRule r(kind);
    r.text_ = std::string(name);
    return r;
  }

  Kind kind_;
  int input_ = 0;
  DType dtype_ = DType::kInvalid;
  std::string text_;
};

}  // namespace loom

#endif  // LOOM_GRAPH_DTYPE_RULE_H_
