#include "loom/graph/dtype_rule.h"

#include "loom/base/strcat.h"
#include "loom/graph/graph.h"

namespace loom {

DType DTypeRule::Resolve(const Node& node, int i) const {
  switch (kind_) {
    case Kind::kSameAsInput:
      return input_ < node.num_inputs() ? node.input(input_).dtype() : DType::kInvalid;
    case Kind::kSameAsEachInput:
      return i < node.num_inputs() ? node.input(i).dtype() : DType::kInvalid;
    case Kind::kFixed:
      return dtype_;
    case Kind::kFromAttr:
      if (const DType* d = node.attrs().Find<DType>(text_)) return *d;
      return DType::kInvalid;
    case Kind::kFromAttrList:
      if (const auto* list = node.attrs().Find<std::vector<DType>>(text_)) {
        if (i < static_cast<int>(list->size())) return (*list)[i];
      }
      return DType::kInvalid;
    case Kind::kFromTensorAttr:
      if (const Tensor* t = node.attrs().Find<Tensor>(text_)) return t->dtype();
      return DType::kInvalid;
    case Kind::kByShapeRule:
      return DType::kInvalid;
  }
  return DType::kInvalid;
}

std::string DTypeRule::ToString() const {
  switch (kind_) {
    case Kind::kSameAsInput:
      return StrCat("same as input ", input_);
    case Kind::kSameAsEachInput:
      return "output i same as input i";
    case Kind::kFixed:
      return std::string(DTypeName(dtype_));
    case Kind::kFromAttr:
      return StrCat("attribute ", text_);
    case Kind::kFromAttrList:
      return StrCat("entry i of attribute ", text_);
    case Kind::kFromTensorAttr:
      return StrCat("the dtype of attribute ", text_);
    case Kind::kByShapeRule:
      return StrCat("by the shape rule: ", text_);
  }
  return "?";
}

}  // namespace loom
