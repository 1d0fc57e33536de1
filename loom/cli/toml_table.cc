#include "loom/cli/toml_table.h"

#include <sstream>

#include "loom/base/error.h"
#include "loom/base/strcat.h"

namespace loom::cli {

Table::Table(const toml::table& table, std::string name, const std::string& path)
    : table_(table), name_(std::move(name)), path_(path) {}

std::string Table::Where(const toml::node* node) const {
  std::ostringstream out;
  out << path_;
  if (node != nullptr && node->source().begin.line > 0) out << ":" << node->source().begin.line;
  return out.str();
}

void Table::Fail(const std::string& key, const std::string& what) const {
  throw InvalidArgument(Where(table_.get(key) ? table_.get(key) : &table_), ": [", name_,
                        "] key '", key, "': ", what);
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
    if (e.is_integer()) out.push_back(static_cast<double>(e.as_integer()->get()));
    else if (e.is_floating_point()) out.push_back(e.as_floating_point()->get());
    else Fail(key, "expected an array of numbers");
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
    if (!used_.count(key)) {
      throw InvalidArgument(Where(&v), ": [", name_, "] unknown key '", key, "'");
    }
  }
}

}  // namespace loom::cli
