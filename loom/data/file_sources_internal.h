#ifndef LOOM_DATA_FILE_SOURCES_INTERNAL_H_
#define LOOM_DATA_FILE_SOURCES_INTERNAL_H_

// Pieces shared by the file sources (file_sources.h); not a public API.
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
  TextFileReader(Env* env, const std::string& path, Compression compression,
                 size_t buffer_size);
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

}  // namespace loom::data::internal

#endif  // LOOM_DATA_FILE_SOURCES_INTERNAL_H_
