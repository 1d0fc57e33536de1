#include "loom/distribute/replica_agreement.h"

#include <variant>

#include "loom/base/crc32c.h"
#include "loom/base/error.h"
#include "loom/data/dataset_impl.h"
#include "loom/graph/attr_value.h"

namespace loom::distribute {
namespace {

// Section markers: a rank's signature is "<graph lines>" kSeparator "<pipeline lines>".
constexpr std::string_view kSeparator = "\n--- input pipeline ---\n";

std::string AttrSignature(const AttrValue& value) {
  if (const Tensor* t = std::get_if<Tensor>(&value)) {
    std::string out = StrCat("<tensor ", DTypeName(t->dtype()), t->shape());
    uint32_t crc = 0;
    if (t->dtype() == kString) {
      for (const std::string& s : t->flat<std::string>())
        crc = crc32c::Extend(crc, s.data(), s.size());
    } else {
      crc = crc32c::Extend(crc, static_cast<const char*>(t->raw_data()), t->TotalBytes());
    }
    out += StrCat(" crc32c=", crc);
    // A small tensor (a learning rate, a scale) also shows its values, as DebugString
    // prints them after the dtype and shape.
    if (t->NumElements() <= 8) {
      const std::string shown = t->DebugString(8);
      out += shown.substr(shown.find(" ["));
    }
    return out + ">";
  }
  return AttrValueToString(value);
}

std::vector<std::string_view> Lines(std::string_view text) {
  std::vector<std::string_view> lines;
  while (!text.empty()) {
    const size_t end = text.find('\n');
    lines.push_back(text.substr(0, end));
    if (end == std::string_view::npos) break;
    text.remove_prefix(end + 1);
  }
  return lines;
}

// The first line where `theirs` differs from `ours` (rank 0's), described; "" when equal.
std::string FirstDifference(std::string_view ours, std::string_view theirs, int rank,
                            std::string_view what) {
  if (ours == theirs) return "";
  const std::vector<std::string_view> a = Lines(ours), b = Lines(theirs);
  size_t i = 0;
  while (i < a.size() && i < b.size() && a[i] == b[i]) ++i;
  if (i >= a.size()) {
    return StrCat(what, " of rank ", rank, " has more than rank 0's ", a.size(),
                  " lines; its line ", i + 1, " is `", b[i], "`, which rank 0 lacks");
  }
  if (i >= b.size()) {
    return StrCat(what, " of rank ", rank, " ends after ", b.size(), " lines; rank 0's line ",
                  i + 1, " is `", a[i], "`, which rank ", rank, " lacks");
  }
  return StrCat(what, " differs at line ", i + 1, ": rank 0 has `", a[i], "`, rank ", rank,
                " has `", b[i], "`");
}

}  // namespace

std::string ReplicaGraphSignature(const Graph& graph) {
  std::string out;
  for (int id = 0; id < graph.num_nodes(); ++id) {
    const Node* node = graph.node(id);
    out += StrCat("node '", node->name(), "' ", node->op(), "(");
    for (size_t i = 0; i < node->inputs().size(); ++i) {
      out += StrCat(i ? ", " : "", node->inputs()[i].name());
    }
    for (const Node* control : node->control_inputs()) out += StrCat(", ^", control->name());
    out += ")";
    for (const auto& [key, value] : node->attrs().map()) {
      // Rank r's graph seed is tf_random_seed + r by design (data_parallel.h).
      if (key == "seed") continue;
      out += StrCat(" ", key, "=", AttrSignature(value));
    }
    out += " ->";
    for (int i = 0; i < node->num_outputs(); ++i) out += StrCat(" ", node->output_shape(i));
    out += "\n";
  }
  return out;
}

void CheckReplicasAgree(Communicator& comm, const Graph& graph, const data::Dataset* input) {
  std::string mine = ReplicaGraphSignature(graph);
  mine += kSeparator;
  if (input != nullptr) mine += data::PipelineIdentity(*input->impl());
  const std::vector<std::string> all = comm.AllGather(mine);
  auto split = [](std::string_view s) {
    const size_t at = s.find(kSeparator);
    return std::pair{s.substr(0, at), s.substr(at + kSeparator.size())};
  };
  const auto [graph0, input0] = split(all[0]);
  for (int r = 1; r < static_cast<int>(all.size()); ++r) {
    if (all[r] == all[0]) continue;
    const auto [graph_r, input_r] = split(all[r]);
    std::string difference =
        FirstDifference(input0, input_r, r, "the input pipeline (global batches)");
    if (difference.empty()) difference = FirstDifference(graph0, graph_r, r, "the training graph");
    throw FailedPrecondition(
        "data-parallel training over ", all.size(), " ranks: rank ", r,
        " did not build what rank 0 built, so the ranks would exchange gradients and "
        "variables of different models; ",
        difference,
        ". Every rank must run the same program with the same model_fn, params, RunConfig "
        "and input (batch_size is the global batch, the same on every rank)");
  }
}

void CheckReplicasAgreeOn(Communicator& comm, std::string_view what, const std::string& value) {
  const std::vector<std::string> all = comm.AllGather(value);
  for (int r = 1; r < static_cast<int>(all.size()); ++r) {
    if (all[r] == all[0]) continue;
    throw FailedPrecondition("data-parallel training over ", all.size(), " ranks: rank ", r,
                             " has ", what, " `", all[r], "` where rank 0 has `", all[0],
                             "`; every rank must run the same program with the same arguments");
  }
}

}  // namespace loom::distribute
