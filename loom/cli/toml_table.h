#ifndef LOOM_CLI_TOML_TABLE_H_
#define LOOM_CLI_TOML_TABLE_H_

// The job file's TOML reader for the parsers (job.cc, schedule.cc): typed getters whose
// errors name the file, the line and the key, and a check that every key was read.
#include <toml++/toml.h>

#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace loom::cli {

// Reads one TOML table of the job file, `name` in messages ("optimizer.schedule"), and
// remembers which keys were read, so that the rest are errors. The typed getters return
// nullopt (or empty) for a missing key and throw InvalidArgument naming the file, line and
// key for one of the wrong type. A misspelt key is reported as unknown, with the key it
// resembles ("[model] unknown key 'hiden_units' (did you mean 'hidden_units'?)"), also
// when the error would otherwise be about the correct key being missing. Borrows
// `table`, which must outlive it.
class Table {
 public:
  Table(const toml::table& table, std::string name, const std::string& path);

  // "path:line" of `node` (just the path when it has no line).
  std::string Where(const toml::node* node) const;
  // Throws InvalidArgument about `key`; when `key` is absent and an unread key of the table
  // looks like a misspelling of it, about that unknown key instead.
  [[noreturn]] void Fail(const std::string& key, const std::string& what) const;
  // Throws the unknown-key error when `key` is absent and an unread key looks like a
  // misspelling of it; for a missing required key or table checked outside Fail.
  void CheckNotMisspelt(const std::string& key) const;
  const toml::node* Get(const std::string& key);
  std::optional<std::string> String(const std::string& key);
  std::optional<int64_t> Int(const std::string& key);
  std::optional<double> Double(const std::string& key);  // an integer or a float
  std::optional<bool> Bool(const std::string& key);
  std::vector<int64_t> Ints(const std::string& key);
  std::vector<double> Doubles(const std::string& key);
  std::vector<std::string> Strings(const std::string& key);  // one string or an array
  const toml::table* SubTable(const std::string& key);
  // Throws InvalidArgument for the first key not read, suggesting the read key nearest to it.
  void CheckAllUsed() const;
  const std::string& path() const { return path_; }

 private:
  // "[name] ", or "" for the file's top level.
  std::string Section() const;

  const toml::table& table_;
  std::string name_;
  std::string path_;
  std::set<std::string> used_;
};

}  // namespace loom::cli

#endif  // LOOM_CLI_TOML_TABLE_H_
