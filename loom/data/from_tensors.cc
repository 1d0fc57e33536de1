// FromTensors: a single element made of the given tensors (shared, not copied).
#include "loom/data/dataset_impl.h"

namespace loom::data {
namespace {

class TensorsIterator : public Iterator {
 public:
  TensorsIterator(ElementSpec spec, Element element)
      : Iterator("FromTensors", std::move(spec)), element_(std::move(element)) {}

 protected:
  std::optional<Element> GetNextInternal() override {
    if (done_) return std::nullopt;
    done_ = true;
    return element_;
  }
  void SaveInternal(StateWriter& w) override { w.Write<uint8_t>(done_); }
  void RestoreInternal(StateReader& r) override { done_ = r.Read<uint8_t>() != 0; }

 private:
  Element element_;
  bool done_ = false;
};

class TensorsDataset : public DatasetImpl {
 public:
  explicit TensorsDataset(Element element)
      : DatasetImpl("FromTensors", SpecOf(Checked(element)), {}), element_(std::move(element)) {}

 protected:
  std::unique_ptr<Iterator> MakeIteratorInternal(const IteratorContext&) const override {
    return std::make_unique<TensorsIterator>(spec(), element_);
  }

 private:
  static const Element& Checked(const Element& e) {
    CheckArg(!e.empty(), "FromTensors", "needs at least one component");
    for (const auto& [name, t] : e) {
      CheckArg(t.defined(), "FromTensors", "component '", name, "' is an empty Tensor");
    }
    return e;
  }
  Element element_;
};

}  // namespace

Dataset FromTensors(std::map<std::string, Tensor> components) {
  return Dataset(std::make_shared<TensorsDataset>(std::move(components)));
}
Dataset FromTensors(const Tensor& x) { return FromTensors(Element{{"x", x}}); }

}  // namespace loom::data
