// FromGenerator: elements from a C++ callable. The state is the number of elements
// produced; Restore makes a fresh generator and replays that many (so an exact restore
// needs a deterministic generator).
#include "loom/data/dataset_impl.h"

namespace loom::data {
namespace {

class GeneratorIterator : public Iterator {
 public:
  GeneratorIterator(ElementSpec spec, std::function<Generator()> make)
      : Iterator("FromGenerator", std::move(spec)), make_(std::move(make)), gen_(make_()) {}

 protected:
  std::optional<Element> GetNextInternal() override {
    if (done_) return std::nullopt;
    std::optional<Element> e = gen_();
    if (!e)
      done_ = true;
    else
      ++produced_;
    return e;
  }
  void SaveInternal(StateWriter& w) override {
    w.Write<int64_t>(produced_);
    w.Write<uint8_t>(done_);
  }
  void RestoreInternal(StateReader& r) override {
    const int64_t target = r.Read<int64_t>();
    const bool done = r.Read<uint8_t>() != 0;
    gen_ = make_();
    produced_ = 0;
    done_ = false;
    while (produced_ < target) {
      if (!gen_()) {
        throw InvalidArgument("FromGenerator: restoring replays ", target,
                              " elements but the generator ended after ", produced_);
      }
      ++produced_;
    }
    done_ = done;
  }

 private:
  std::function<Generator()> make_;
  Generator gen_;
  int64_t produced_ = 0;
  bool done_ = false;
};

class GeneratorDataset : public DatasetImpl {
 public:
  GeneratorDataset(std::function<Generator()> make, ElementSpec spec)
      : DatasetImpl("FromGenerator", std::move(spec), {}), make_(std::move(make)) {
    CheckArg(static_cast<bool>(make_), "FromGenerator", "make_generator is empty");
    CheckArg(!this->spec().empty(), "FromGenerator", "the spec has no components");
  }

 protected:
  std::unique_ptr<Iterator> MakeIteratorInternal(const IteratorContext&) const override {
    return std::make_unique<GeneratorIterator>(spec(), make_);
  }

 private:
  std::function<Generator()> make_;
};

}  // namespace

Dataset FromGenerator(std::function<Generator()> make_generator, ElementSpec spec) {
  return Dataset(std::make_shared<GeneratorDataset>(std::move(make_generator), std::move(spec)));
}

}  // namespace loom::data
