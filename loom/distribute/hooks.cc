#include "loom/distribute/hooks.h"

#include <cstring>

#include "loom/data/iterator_ops.h"
#include "loom/distribute/collective_ops.h"

namespace loom::distribute {
namespace {

void BroadcastVariable(Communicator& comm, Session& session, const std::string& name, int root) {
  if (!session.VariableInitialized(name)) {
    throw FailedPrecondition("BroadcastGlobalVariablesHook: variable '", name, "' is not ",
                             "initialized on rank ", comm.rank(),
                             "; every rank must "
                             "initialize or restore the same graph");
  }
  Tensor value = session.ReadVariable(name);  // a private copy
  if (value.dtype() == kString) {
    std::string blob;
    for (const std::string& s : value.flat<std::string>()) {
      const int64_t n = static_cast<int64_t>(s.size());
      blob.append(reinterpret_cast<const char*>(&n), sizeof n).append(s);
    }
    BroadcastString(comm, blob, root);
    size_t pos = 0;
    for (std::string& s : value.flat<std::string>()) {
      int64_t n;
      std::memcpy(&n, blob.data() + pos, sizeof n);
      s = blob.substr(pos + sizeof n, n);
      pos += sizeof n + n;
    }
  } else {
    comm.Broadcast(value.raw_data(), static_cast<int64_t>(value.TotalBytes()), root);
  }
  session.WriteVariable(name, value);
}

}  // namespace

void BroadcastSessionState(Communicator& comm, Session& session, const BroadcastOptions& options) {
  for (Node* node : session.graph().Variables()) {
    BroadcastVariable(comm, session, node->name(), options.root);
  }
  for (const std::string& name : options.iterator_resources) {
    auto* it = session.resources().Lookup<data::IteratorResource>(name);
    if (it == nullptr || !it->initialized()) {
      throw FailedPrecondition("BroadcastGlobalVariablesHook: iterator '", name,
                               "' is not initialized on rank ", comm.rank());
    }
    std::string state = comm.rank() == options.root ? it->Save() : std::string();
    BroadcastString(comm, state, options.root);
    if (comm.rank() != options.root) it->Restore(state);
  }
}

BroadcastGlobalVariablesHook::BroadcastGlobalVariablesHook(std::shared_ptr<Communicator> comm,
                                                           BroadcastOptions options)
    : comm_(std::move(comm)), options_(std::move(options)) {
  if (comm_ == nullptr) throw InvalidArgument("BroadcastGlobalVariablesHook: null communicator");
  if (options_.root < 0 || options_.root >= comm_->size()) {
    throw InvalidArgument("BroadcastGlobalVariablesHook: root ", options_.root,
                          " is not a rank of this job of ", comm_->size());
  }
}

void BroadcastGlobalVariablesHook::AfterCreateSession(Session& session) {
  AttachCommunicator(session, comm_);
  BroadcastSessionState(*comm_, session, options_);
}

train::SessionRunArgs StopAgreementHook::BeforeRun(train::SessionRunContext& context) {
  if (AnyRank(*comm_, context.stop_requested())) context.RequestStop();
  return {};
}

void StopAgreementHook::AfterRun(train::SessionRunContext& context,
                                 const train::SessionRunValues&) {
  if (AnyRank(*comm_, context.stop_requested())) context.RequestStop();
}

}  // namespace loom::distribute
