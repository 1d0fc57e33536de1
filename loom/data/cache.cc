// Cache: the first complete pass records the elements; later passes (later iterators of
// this dataset, e.g. each epoch under Repeat) replay them instead of running the input.
// In memory (filename ""): a store shared by the dataset's iterators. To a file: the first
// pass writes `filename` (atomically, on completion), later passes stream it back one
// element at a time, so the file is never loaded whole.
// State: a memory cache saves its position only (restored without the cache, it re-reads
// the input that far, recording); a file cache's replay saves the position and offset, its
// recording the input's state, and a restored recording pass no longer records (the file
// is written by a later complete pass). States of the older form restore as before.
#include <mutex>

#include "loom/data/dataset_impl.h"

namespace loom::data {
namespace {

struct MemoryStore {
  std::mutex mu;
  bool complete = false;
  std::vector<Element> elements;
};

// The context of the input's first pass: the cache holds that pass, so every time the
// input is read again (after a restore without the cache) it must give the same elements,
// whatever pass of an enclosing Repeat this is (a Shuffle inside reshuffles by pass: a
// resumed run re-read another order than the one cached before the kill).
IteratorContext FirstPass(IteratorContext ctx) {
  ctx.iteration = 0;
  return ctx;
}

class CacheIterator : public Iterator {
 public:
  CacheIterator(ElementSpec spec, std::shared_ptr<const DatasetImpl> input, IteratorContext ctx,
                std::shared_ptr<MemoryStore> store, std::string filename, Env* env)
      : Iterator("Cache", std::move(spec)),
        input_(std::move(input)),
        ctx_(FirstPass(std::move(ctx))),
        store_(std::move(store)),
        filename_(std::move(filename)),
        env_(env) {
    if (CacheComplete()) {
      StartReplay();
    } else {
      StartRecording(/*record=*/true);
    }
  }

 protected:
  std::optional<Element> GetNextInternal() override {
    if (replaying_) return ReplayNext();
    std::optional<Element> e = input_it_->GetNext();
    if (e) {
      ++position_;
      if (record_) Record(*e);
    } else if (record_) {
      Commit();
    }
    return e;
  }

  void SaveInternal(StateWriter& w) override {
    if (filename_.empty()) {
      // A memory cache saves its position only, in the replay form, whether this pass
      // records, replays or re-reads the input: the state is the same whatever the process
      // did before (a resumed run's checkpoint equals an uninterrupted run's; saving the
      // input's state while recording made it differ for two passes after a resume), and a
      // restore without the cache re-reads the input up to the position, recording it.
      w.Write<uint8_t>(1);
      w.Write<int64_t>(position_);
      w.Write<uint64_t>(0);
      return;
    }
    w.Write<uint8_t>(replaying_);
    w.Write<int64_t>(position_);
    w.Write<uint64_t>(file_offset_);
    if (!replaying_) input_it_->SaveState(w);
  }

  void RestoreInternal(StateReader& r) override {
    const bool replaying = r.Read<uint8_t>() != 0;
    const int64_t position = r.Read<int64_t>();
    const uint64_t offset = r.Read<uint64_t>();
    if (position < 0 || position > kMaxRestoredCount) {
      throw DataLoss("Cache state is corrupt: position ", position);
    }
    if (!replaying) {
      StartRecording(/*record=*/false);
      input_it_->RestoreState(r);
      position_ = position;
      return;
    }
    if (CacheComplete()) {
      StartReplay();
      position_ = position;
      if (reader_) {
        reader_->Skip(offset);
        file_offset_ = offset;
      }
      return;
    }
    // The cache was lost (a new process, memory cache): re-read the input up to the
    // position, recording a memory cache's elements so that the pass fills it (the next
    // pass replays, as in an uninterrupted run).
    StartRecording(/*record=*/filename_.empty());
    for (int64_t i = 0; i < position; ++i) {
      std::optional<Element> e = input_it_->GetNext();
      if (!e) {
        record_ = false;  // the input is shorter than the position: never a whole pass
        break;
      }
      if (record_) Record(*e);
    }
    position_ = position;
  }

 private:
  bool CacheComplete() {
    if (!filename_.empty()) return env_->FileExists(filename_);
    std::lock_guard<std::mutex> lock(store_->mu);
    return store_->complete;
  }

  void StartReplay() {
    replaying_ = true;
    record_ = false;
    input_it_.reset();
    position_ = 0;
    file_offset_ = 0;
    if (!filename_.empty()) reader_ = env_->NewSequentialFile(filename_);
  }

  void StartRecording(bool record) {
    replaying_ = false;
    record_ = record;
    input_it_ = input_->MakeIterator(ctx_);
    position_ = 0;
    pending_.clear();
    writer_.reset();
    if (record_ && !filename_.empty()) {
      temp_ = StrCat(filename_, ".tmp-", RandomSeed());
      writer_ = env_->NewWritableFile(temp_);
    }
  }

  std::optional<Element> ReplayNext() {
    if (filename_.empty()) {
      std::lock_guard<std::mutex> lock(store_->mu);
      if (position_ >= static_cast<int64_t>(store_->elements.size())) return std::nullopt;
      return store_->elements[position_++];
    }
    uint64_t size = 0;
    size_t got = reader_->Read(sizeof(size), reinterpret_cast<char*>(&size));
    if (got == 0) return std::nullopt;
    if (got != sizeof(size))
      throw DataLoss("cache file ", filename_, " is truncated at byte ", file_offset_);
    std::string bytes(std::min<uint64_t>(size, 1ull << 34), '\0');
    if (bytes.size() != size || reader_->Read(size, bytes.data()) != size) {
      throw DataLoss("cache file ", filename_, " is truncated in the element at byte ",
                     file_offset_);
    }
    file_offset_ += sizeof(size) + size;
    ++position_;
    StateReader r(bytes);
    return r.ReadElement();
  }

  void Record(const Element& e) {
    if (writer_) {
      StateWriter w;
      w.WriteElement(e);
      uint64_t size = w.data().size();
      writer_->Append(std::string_view(reinterpret_cast<const char*>(&size), sizeof(size)));
      writer_->Append(w.data());
    } else {
      pending_.push_back(e);
    }
  }

  void Commit() {
    record_ = false;
    if (writer_) {
      writer_->Close();
      writer_.reset();
      env_->RenameFile(temp_, filename_);
      return;
    }
    std::lock_guard<std::mutex> lock(store_->mu);
    if (!store_->complete) {
      store_->elements = std::move(pending_);
      store_->complete = true;
    }
  }

  std::shared_ptr<const DatasetImpl> input_;
  IteratorContext ctx_;
  std::shared_ptr<MemoryStore> store_;
  std::string filename_;
  Env* env_;
  bool replaying_ = false;
  bool record_ = false;
  int64_t position_ = 0;
  uint64_t file_offset_ = 0;
  std::unique_ptr<Iterator> input_it_;
  std::vector<Element> pending_;
  std::unique_ptr<WritableFile> writer_;
  std::unique_ptr<SequentialFile> reader_;
  std::string temp_;
};

class CacheDataset : public DatasetImpl {
 public:
  CacheDataset(const std::shared_ptr<const DatasetImpl>& input, std::string filename, Env* env)
      : DatasetImpl("Cache", input->spec(), {input}),
        filename_(std::move(filename)),
        env_(env ? env : Env::Default()),
        store_(std::make_shared<MemoryStore>()) {}

  std::string Params() const override { return StrCat("filename='", filename_, "'"); }

 protected:
  std::unique_ptr<Iterator> MakeIteratorInternal(const IteratorContext& ctx) const override {
    return std::make_unique<CacheIterator>(spec(), inputs()[0], ctx, store_, filename_, env_);
  }

 private:
  std::string filename_;
  Env* env_;
  std::shared_ptr<MemoryStore> store_;  // filled once; the dataset stays logically immutable
};

}  // namespace

Dataset Dataset::Cache(const std::string& filename, CacheOptions options) const {
  return Dataset(std::make_shared<CacheDataset>(impl(), filename, options.env));
}

}  // namespace loom::data
