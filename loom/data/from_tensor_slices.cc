// FromTensorSlices: element i is row i of every component. Index-addressable; rows are
// views of the source buffers (zero-copy), over host tensors or over placeholders bound by
// an initializer op.
#include "loom/data/row_source.h"
#include "loom/data/symbolic.h"

namespace loom::data {
namespace {

constexpr const char* kSlicesStage = "FromTensorSlices";

// Checks that every component has rank >= 1 and that dim 0 agrees.
void CheckSliceable(const Element& tensors) {
  CheckArg(!tensors.empty(), kSlicesStage, "needs at least one component");
  const auto& [first_name, first] = *tensors.begin();
  for (const auto& [name, t] : tensors) {
    CheckArg(t.defined(), kSlicesStage, "component '", name, "' is an empty Tensor");
    CheckArg(t.rank() >= 1, kSlicesStage, "component '", name, "' is a scalar (", t.shape(),
             "); slicing needs rank >= 1");
    CheckArg(t.dim(0) == first.dim(0), kSlicesStage, "components must have the same dim 0, but '",
             first_name, "' has ", first.dim(0), " rows and '", name, "' has ", t.dim(0));
  }
}

class TensorSlicesDataset : public DatasetImpl {
 public:
  explicit TensorSlicesDataset(Element tensors)
      : DatasetImpl(kSlicesStage, SliceSpec(tensors), {}), tensors_(std::move(tensors)) {}

  std::string Params() const override { return StrCat("rows=", tensors_.begin()->second.dim(0)); }

  bool indexed() const override { return true; }
  std::shared_ptr<const RowSource> MakeRows(const IteratorContext&) const override {
    return MakeTensorRows(tensors_);
  }
  std::unique_ptr<IndexCursor> MakeIndexCursor(const IteratorContext&) const override {
    return MakeSequentialIndexCursor(tensors_.begin()->second.dim(0));
  }

 private:
  static ElementSpec SliceSpec(const Element& tensors) {
    CheckSliceable(tensors);
    ElementSpec spec;
    for (const auto& [name, t] : tensors) spec[name] = {t.dtype(), t.shape().WithoutLeadingDim()};
    return spec;
  }
  Element tensors_;
};

class SymbolicSlicesDataset : public DatasetImpl {
 public:
  explicit SymbolicSlicesDataset(std::map<std::string, Output> components)
      : DatasetImpl(kSlicesStage, SliceSpec(components), {}), components_(std::move(components)) {}

  std::vector<Output> symbolic_inputs() const override {
    std::vector<Output> out;
    for (const auto& [name, o] : components_) out.push_back(o);
    return out;
  }
  bool indexed() const override { return true; }
  std::shared_ptr<const RowSource> MakeRows(const IteratorContext& ctx) const override {
    Element tensors = ResolveBindings(kSlicesStage, components_, ctx);
    CheckSliceable(tensors);
    return MakeTensorRows(std::move(tensors));
  }
  std::unique_ptr<IndexCursor> MakeIndexCursor(const IteratorContext& ctx) const override {
    Element tensors = ResolveBindings(kSlicesStage, components_, ctx);
    CheckSliceable(tensors);
    return MakeSequentialIndexCursor(tensors.begin()->second.dim(0));
  }

 private:
  static ElementSpec SliceSpec(const std::map<std::string, Output>& components) {
    CheckArg(!components.empty(), kSlicesStage, "needs at least one component");
    ElementSpec spec;
    for (const auto& [name, o] : components) {
      CheckArg(o.valid(), kSlicesStage, "component '", name, "' is an empty Output");
      TensorSpec ts = SpecOfOutput(o);
      CheckArg(!ts.shape.rank_known() || ts.shape.rank() >= 1, kSlicesStage, "component '", name,
               "' (", o.name(), ") is a scalar; slicing needs rank >= 1");
      spec[name] = {ts.dtype, ts.shape.rank_known() ? ts.shape.WithoutLeadingDim() : ts.shape};
    }
    return spec;
  }
  std::map<std::string, Output> components_;
};

}  // namespace

Dataset FromTensorSlices(std::map<std::string, Tensor> components) {
  return Dataset(std::make_shared<TensorSlicesDataset>(std::move(components)));
}
Dataset FromTensorSlices(const Tensor& x) { return FromTensorSlices(Element{{"x", x}}); }
Dataset FromTensorSlices(std::map<std::string, Output> components) {
  return Dataset(std::make_shared<SymbolicSlicesDataset>(std::move(components)));
}
Dataset FromTensorSlices(const Output& x) {
  return FromTensorSlices(std::map<std::string, Output>{{"x", x}});
}

}  // namespace loom::data
