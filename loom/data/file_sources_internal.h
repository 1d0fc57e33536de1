#ifndef LOOM_DATA_FILE_SOURCES_INTERNAL_H_
#define LOOM_DATA_FILE_SOURCES_INTERNAL_H_

// Pieces shared by the file sources (file_sources.h); not a public API.
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "loom/data/dataset_impl.h"
#include "loom/data/file_sources.h"
#include "loom/io/byte_stream.h"

namespace loom::data::internal {

inline Env* EnvOr(Env* env) { return env ? env : Env::Default(); }

// Expands globs (sorted) and checks that plain paths exist. Throws InvalidArgument for an
// empty list, NotFound naming the path or the pattern. `stage` prefixes messages.
std::vector<std::string> ExpandFilenames(Env* env, const std::vector<std::string>& filenames,
                                         const std::string& stage);

// ParseCompression with `stage` in the message.
Compression ParseCompressionOption(const std::string& name, const std::string& stage);

// An index-addressable dataset over whole host tensors (rows along dim 0), named `stage`
// (FromNpy, FromIdx). `paths` (component -> file) is only for messages.
Dataset ArraySlices(const std::string& stage, Element tensors,
                    const std::map<std::string, std::string>& paths);

// Buffered lines of one text file, possibly compressed, tracking the byte offset (in the
// uncompressed stream) and the number of lines consumed, so that a reader can be
// reopened where another stopped. Not thread-safe.
class TextFileReader {
 public:
  TextFileReader(Env* env, const std::string& path, Compression compression, size_t buffer_size);
  // The next line without its "\n" or "\r\n", or false at the end of the file. Throws
  // DataLoss when a compressed stream ends without its end marker.
  bool ReadLine(std::string* line);
  // Offset of the first byte not yet returned, and lines returned so far.
  uint64_t offset() const { return stream_->Tell() - (buffer_.size() - pos_); }
  int64_t lines_read() const { return lines_read_; }
  // REQUIRES: offset is a line start reached by this file's reader (with lines_read).
  void Seek(uint64_t offset, int64_t lines_read);
  const std::string& path() const { return path_; }

 private:
  bool Fill();

  std::string path_;
  std::unique_ptr<InputStream> stream_;
  size_t buffer_size_;
  std::string buffer_;
  size_t pos_ = 0;
  int64_t lines_read_ = 0;
};

// Throws InvalidArgument naming `stage` unless a saved position (file_index, whether a
// file was open) fits a list of num_files files.
void CheckFilePosition(const std::string& stage, uint64_t file_index, bool open, size_t num_files);

// "files=<n> names=<fingerprint of the list>": a streaming source's part of the pipeline
// identity (a saved position is a file index and an offset into that file).
std::string FilesParams(const std::vector<std::string>& files);

// The walk of a streaming source (TFRecord, text lines, CSV) through its list of files,
// one Reader open at a time, and the save/restore of its place: the file's index, whether
// it is open, the reader's offset() and, for a Reader with lines_read() (TextFileReader),
// the line count. Reader needs offset() and Seek(offset) or Seek(offset, lines_read).
// Not thread-safe; owned by one iterator.
template <typename Reader>
class FileWalk {
 public:
  // open(path, restoring) opens a file; `restoring` is true when Restore opens it and then
  // seeks to the saved place (so a CSV header is skipped only when it is false).
  using OpenFn = std::function<std::unique_ptr<Reader>(const std::string& path, bool restoring)>;

  // REQUIRES: `files` outlives the walk.
  FileWalk(std::string stage, const std::vector<std::string>& files, OpenFn open)
      : stage_(std::move(stage)), files_(files), open_(std::move(open)) {}

  // Calls read(Reader&) -> bool on the open file until it returns true, opening the next
  // file whenever the current one is done (read returned false). False after the last file.
  template <typename ReadFn>
  bool Next(const ReadFn& read) {
    while (file_index_ < files_.size()) {
      if (!reader_) reader_ = open_(files_[file_index_], /*restoring=*/false);
      if (read(*reader_)) return true;
      reader_.reset();
      ++file_index_;
    }
    return false;
  }

  // The open reader, or null between files.
  Reader* reader() const { return reader_.get(); }

  void Save(StateWriter& w) const {
    w.Write<uint64_t>(file_index_);
    w.Write<uint8_t>(reader_ != nullptr);
    w.Write<uint64_t>(reader_ ? reader_->offset() : 0);
    if constexpr (kTracksLines) w.Write<int64_t>(reader_ ? reader_->lines_read() : 0);
  }

  void Restore(StateReader& r) {
    const uint64_t file_index = r.Read<uint64_t>();
    const bool open = r.Read<uint8_t>() != 0;
    const uint64_t offset = r.Read<uint64_t>();
    int64_t lines = 0;
    if constexpr (kTracksLines) lines = r.Read<int64_t>();
    CheckFilePosition(stage_, file_index, open, files_.size());
    reader_.reset();
    file_index_ = file_index;
    if (!open) return;
    reader_ = open_(files_[file_index_], /*restoring=*/true);
    if constexpr (kTracksLines) {
      reader_->Seek(offset, lines);
    } else if (offset > 0) {
      reader_->Seek(offset);
    }
  }

 private:
  static constexpr bool kTracksLines = requires(const Reader& reader) { reader.lines_read(); };

  std::string stage_;
  const std::vector<std::string>& files_;
  OpenFn open_;
  uint64_t file_index_ = 0;
  std::unique_ptr<Reader> reader_;
};

}  // namespace loom::data::internal

#endif  // LOOM_DATA_FILE_SOURCES_INTERNAL_H_
