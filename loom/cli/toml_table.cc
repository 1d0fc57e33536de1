#include "loom/cli/toml_table.h"

#include <algorithm>
#include <cctype>
#include <sstream>
#include <vector>

#include "loom/base/error.h"
#include "loom/base/strcat.h"

namespace loom::cli {
namespace {

// Edit distance counting a swap of two neighbours as one edit (optimal string
// alignment), case-insensitive. Keys are short.
size_t EditDistance(const std::string& a, const std::string& b) {
  auto lower = [](char c) { return std::tolower(static_cast<unsigned char>(c)); };
  std::vector<std::vector<size_t>> d(a.size() + 1, std::vector<size_t>(b.size() + 1));
  for (size_t i = 0; i <= a.size(); ++i) d[i][0] = i;
  for (size_t j = 0; j <= b.size(); ++j) d[0][j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t change = lower(a[i - 1]) == lower(b[j - 1]) ? 0 : 1;
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + change});
      if (i > 1 && j > 1 && lower(a[i - 1]) == lower(b[j - 2]) &&
          lower(a[i - 2]) == lower(b[j - 1]))
        d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
    }
  }
  return d[a.size()][b.size()];
}

// A typo rather than another word: one edit per four characters, at least one.
bool LooksLikeMisspelling(const std::string& typed, const std::string& meant) {
  return typed != meant && EditDistance(typed, meant) <=
                               std::max<size_t>(1, std::max(typed.size(), meant.size()) / 4);
}

}  // namespace

std::string Table::Section() const { return name_.empty() ? "" : StrCat("[", name_, "] "); }

Table::Table(const toml::table& table, std::string name, const std::string& path)
    : table_(table), name_(std::move(name)), path_(path) {}

std::string Table::Where(const toml::node* node) const {
  std::ostringstream out;
  out << path_;
  if (node != nullptr && node->source().begin.line > 0) out << ":" << node->source().begin.line;
  return out.str();
}

void Table::Fail(const std::string& key, const std::string& what) const {
  CheckNotMisspelt(key);
  throw InvalidArgument(Where(table_.get(key) ? table_.get(key) : &table_), ": [", name_, "] key '",
                        key, "': ", what);
}

void Table::CheckNotMisspelt(const std::string& key) const {
  if (table_.contains(key)) return;
  for (const auto& [k, v] : table_) {
    std::string typed(k.str());
    if (!used_.count(typed) && LooksLikeMisspelling(typed, key)) {
      throw InvalidArgument(Where(&v), ": ", Section(), "unknown key '", typed, "' (did you mean '",
                            key, "'?)");
    }
  }
}

const toml::node* Table::Get(const std::string& key) {
  used_.insert(key);
  return table_.get(key);
}

std::optional<std::string> Table::String(const std::string& key) {
  const toml::node* n = Get(key);
  if (n == nullptr) return std::nullopt;
  if (!n->is_string()) Fail(key, "expected a string");
  return n->as_string()->get();
}

std::optional<int64_t> Table::Int(const std::string& key) {
  const toml::node* n = Get(key);
  if (n == nullptr) return std::nullopt;
  if (!n->is_integer()) Fail(key, "expected an integer");
  return n->as_integer()->get();
}

std::optional<double> Table::Double(const std::string& key) {
  const toml::node* n = Get(key);
  if (n == nullptr) return std::nullopt;
  if (n->is_integer()) return static_cast<double>(n->as_integer()->get());
  if (!n->is_floating_point()) Fail(key, "expected a number");
  return n->as_floating_point()->get();
}

std::optional<bool> Table::Bool(const std::string& key) {
  const toml::node* n = Get(key);
  if (n == nullptr) return std::nullopt;
  if (!n->is_boolean()) Fail(key, "expected true or false");
  return n->as_boolean()->get();
}

std::vector<int64_t> Table::Ints(const std::string& key) {
  std::vector<int64_t> out;
  const toml::node* n = Get(key);
  if (n == nullptr) return out;
  if (!n->is_array()) Fail(key, "expected an array of integers");
  for (const auto& e : *n->as_array()) {
    if (!e.is_integer()) Fail(key, "expected an array of integers");
    out.push_back(e.as_integer()->get());
  }
  return out;
}

std::vector<double> Table::Doubles(const std::string& key) {
  std::vector<double> out;
  const toml::node* n = Get(key);
  if (n == nullptr) return out;
  if (!n->is_array()) Fail(key, "expected an array of numbers");
  for (const auto& e : *n->as_array()) {
    if (e.is_integer())
      out.push_back(static_cast<double>(e.as_integer()->get()));
    else if (e.is_floating_point())
      out.push_back(e.as_floating_point()->get());
    else
      Fail(key, "expected an array of numbers");
  }
  return out;
}

std::vector<std::string> Table::Strings(const std::string& key) {
  std::vector<std::string> out;
  const toml::node* n = Get(key);
  if (n == nullptr) return out;
  if (n->is_string()) return {n->as_string()->get()};
  if (!n->is_array()) Fail(key, "expected an array of strings");
  for (const auto& e : *n->as_array()) {
    if (!e.is_string()) Fail(key, "expected an array of strings");
    out.push_back(e.as_string()->get());
  }
  return out;
}

const toml::table* Table::SubTable(const std::string& key) {
  const toml::node* n = Get(key);
  if (n == nullptr) return nullptr;
  if (!n->is_table()) Fail(key, "expected a table");
  return n->as_table();
}

void Table::CheckAllUsed() const {
  for (const auto& [k, v] : table_) {
    std::string key(k.str());
    if (used_.count(key)) continue;
    std::string suggestion;
    size_t best = std::string::npos;
    for (const std::string& known : used_) {
      const size_t d = EditDistance(key, known);
      if (d < best && LooksLikeMisspelling(key, known)) {
        best = d;
        suggestion = StrCat(" (did you mean '", known, "'?)");
      }
    }
    throw InvalidArgument(Where(&v), ": ", Section(), "unknown key '", key, "'", suggestion);
  }
}

}  // namespace loom::cli
