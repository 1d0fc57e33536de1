// Shared by the streaming file sources: file-list expansion, compression options, the
// check of a restored file position and the offset-tracking text reader
// (file_sources_internal.h).
#include <algorithm>
#include <cstdio>

#include "loom/data/file_sources_internal.h"

namespace loom::data::internal {
namespace {

bool IsGlob(const std::string& path) { return path.find_first_of("*?[") != std::string::npos; }

}  // namespace

std::string FilesParams(const std::vector<std::string>& files) {
  uint64_t h = 0xcbf29ce484222325ULL;  // FNV-1a over the names, each ended by a NUL
  for (const std::string& f : files) {
    for (unsigned char ch : f) h = (h ^ ch) * 0x100000001b3ULL;
    h = h * 0x100000001b3ULL;
  }
  char hex[17];
  std::snprintf(hex, sizeof(hex), "%016llx", static_cast<unsigned long long>(h));
  return StrCat("files=", files.size(), " names=", hex);
}

std::vector<std::string> ExpandFilenames(Env* env, const std::vector<std::string>& filenames,
                                         const std::string& stage) {
  CheckArg(!filenames.empty(), stage, "the list of files is empty");
  std::vector<std::string> out;
  for (const std::string& name : filenames) {
    CheckArg(!name.empty(), stage, "a file name is empty");
    if (IsGlob(name)) {
      std::vector<std::string> matches = env->Glob(name);
      matches.erase(std::remove_if(matches.begin(), matches.end(),
                                   [&](const std::string& p) { return env->IsDirectory(p); }),
                    matches.end());
      if (matches.empty()) {
        throw NotFound(stage, ": the pattern '", name, "' matches no file");
      }
      out.insert(out.end(), matches.begin(), matches.end());
    } else {
      if (!env->FileExists(name)) throw NotFound(stage, ": file '", name, "' not found");
      if (env->IsDirectory(name)) {
        throw NotFound(stage, ": '", name, "' is a directory, not a file; name the files in it ",
                       "or a pattern such as '", name, "/*'");
      }
      out.push_back(name);
    }
  }
  return out;
}

Compression ParseCompressionOption(const std::string& name, const std::string& stage) {
  try {
    return ParseCompression(name);
  } catch (const Error& e) {
    throw WithContext(e, stage, " compression option");
  }
}

void CheckFilePosition(const std::string& stage, uint64_t file_index, bool open, size_t num_files) {
  if (file_index > num_files || (open && file_index == num_files)) {
    throw InvalidArgument(stage, ": iterator state is at file ", file_index, " of a list of ",
                          num_files, ": it was saved over different files");
  }
}

TextFileReader::TextFileReader(Env* env, const std::string& path, Compression compression,
                               size_t buffer_size)
    : path_(path), buffer_size_(std::max<size_t>(buffer_size, 1)) {
  stream_ =
      NewDecompressingInputStream(NewRandomAccessInputStream(env->NewRandomAccessFile(path), path),
                                  compression, path, buffer_size_);
}

bool TextFileReader::Fill() {
  buffer_.resize(buffer_size_);
  const size_t n = stream_->Read(buffer_size_, buffer_.data());
  buffer_.resize(n);
  pos_ = 0;
  if (n == 0 && !stream_->Complete()) {
    throw DataLoss("'", path_, "' is truncated: its compressed stream ends at byte ",
                   stream_->RawPosition(), " without an end marker");
  }
  return n > 0;
}

bool TextFileReader::ReadLine(std::string* line) {
  line->clear();
  bool any = false;
  while (true) {
    if (pos_ == buffer_.size() && !Fill()) break;
    any = true;
    const size_t nl = buffer_.find('\n', pos_);
    if (nl == std::string::npos) {
      line->append(buffer_, pos_, std::string::npos);
      pos_ = buffer_.size();
      continue;
    }
    line->append(buffer_, pos_, nl - pos_);
    pos_ = nl + 1;
    break;
  }
  if (!any) return false;
  if (!line->empty() && line->back() == '\r') line->pop_back();
  ++lines_read_;
  return true;
}

void TextFileReader::Seek(uint64_t offset, int64_t lines_read) {
  buffer_.clear();
  pos_ = 0;
  stream_->Seek(offset);
  if (stream_->Tell() != offset) {
    throw InvalidArgument("iterator state points at byte ", offset, " of '", path_,
                          "', which has only ", stream_->Tell(),
                          " bytes: it was saved over a different file");
  }
  lines_read_ = lines_read;
}

}  // namespace loom::data::internal
