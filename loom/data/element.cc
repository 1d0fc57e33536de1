#include "loom/data/element.h"

#include <sstream>

#include "loom/base/error.h"

namespace loom::data {

std::string SpecString(const ElementSpec& spec) {
  std::ostringstream os;
  os << "{";
  bool first = true;
  for (const auto& [name, ts] : spec) {
    if (!first) os << ", ";
    first = false;
    os << name << ": " << DTypeName(ts.dtype) << ts.shape.ToString();
  }
  os << "}";
  return os.str();
}

ElementSpec SpecOf(const Element& element) {
  ElementSpec spec;
  for (const auto& [name, t] : element) spec[name] = {t.dtype(), t.shape()};
  return spec;
}

bool ElementMatchesSpec(const ElementSpec& spec, const Element& element) {
  if (element.size() != spec.size()) return false;
  auto s = spec.begin();
  for (auto e = element.begin(); e != element.end(); ++e, ++s) {
    if (e->first != s->first || !e->second.defined() || e->second.dtype() != s->second.dtype ||
        !e->second.shape().IsCompatibleWith(s->second.shape)) {
      return false;
    }
  }
  return true;
}

void CheckElement(const ElementSpec& spec, const Element& element, const std::string& context) {
  if (ElementMatchesSpec(spec, element)) return;
  for (const auto& [name, ts] : spec) {
    auto it = element.find(name);
    if (it == element.end() || !it->second.defined()) {
      throw InvalidArgument(context, ": the element has no component '", name, "' (declared spec ",
                            SpecString(spec), ", element ", SpecString(SpecOf(element)), ")");
    }
    const Tensor& t = it->second;
    if (t.dtype() != ts.dtype || !t.shape().IsCompatibleWith(ts.shape)) {
      throw InvalidArgument(context, ": component '", name, "' is ", DTypeName(t.dtype()),
                            t.shape(), " but the declared spec says ", DTypeName(ts.dtype),
                            ts.shape);
    }
  }
  for (const auto& [name, t] : element) {
    if (!spec.count(name)) {
      throw InvalidArgument(context, ": the element has an undeclared component '", name,
                            "' (declared spec ", SpecString(spec), ")");
    }
  }
}

Shape MostGeneralShape(const Shape& a, const Shape& b) {
  if (!a.rank_known() || !b.rank_known() || a.rank() != b.rank()) return Shape::Unknown();
  std::vector<int64_t> dims(a.rank());
  for (int i = 0; i < a.rank(); ++i) dims[i] = a.dim(i) == b.dim(i) ? a.dim(i) : kUnknownDim;
  return Shape(dims);
}

ElementSpec WithLeadingDim(const ElementSpec& spec, int64_t leading_dim) {
  ElementSpec out;
  for (const auto& [name, ts] : spec) out[name] = {ts.dtype, ts.shape.WithLeadingDim(leading_dim)};
  return out;
}

}  // namespace loom::data
