#ifndef LOOM_DATA_ELEMENT_H_
#define LOOM_DATA_ELEMENT_H_

// An element of a dataset is a set of named tensors ("x", "label", ...). Its ElementSpec
// gives each component's dtype and partial shape, known before anything runs; every
// transformation checks specs when it is built, and every Iterator checks what it produces
// against its spec. Both are std::maps, so components are always in name order (the order
// of IteratorGetNext's outputs). Value types.
#include <map>
#include <string>

#include "loom/tensor/tensor.h"

namespace loom::data {

struct TensorSpec {
  DType dtype = DType::kInvalid;
  Shape shape = Shape::Unknown();
  bool operator==(const TensorSpec&) const = default;
};

using ElementSpec = std::map<std::string, TensorSpec>;
using Element = std::map<std::string, Tensor>;

// "{label: int64[], x: float32[784]}".
std::string SpecString(const ElementSpec& spec);
// The spec of a concrete element (fully defined shapes).
ElementSpec SpecOf(const Element& element);
// True when `element` has exactly the spec's components with the spec's dtypes and
// compatible shapes (the check CheckElement makes, without building a message).
bool ElementMatchesSpec(const ElementSpec& spec, const Element& element);
// Throws InvalidArgument, prefixed with `context`, unless `element` has exactly the spec's
// components with the spec's dtypes and compatible shapes.
void CheckElement(const ElementSpec& spec, const Element& element, const std::string& context);
// The most general shape that covers both (dims that differ become unknown).
Shape MostGeneralShape(const Shape& a, const Shape& b);
// The spec with every shape prefixed by `leading_dim` (kUnknownDim for "?").
ElementSpec WithLeadingDim(const ElementSpec& spec, int64_t leading_dim);

}  // namespace loom::data

#endif  // LOOM_DATA_ELEMENT_H_
