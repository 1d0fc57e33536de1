#ifndef LOOM_DISTRIBUTE_COMMUNICATOR_H_
#define LOOM_DISTRIBUTE_COMMUNICATOR_H_

// Communicator: the processes (ranks) of one data-parallel job and the collectives Loom
// needs between them. Two implementations: MpiCommunicator(), the world of an `mpirun` /
// `srun` launch (Open MPI moves the bytes), and InProcessCommunicators(n), n ranks that
// are threads of one process (tests, and anything that wants the semantics without MPI).
//
// Every method marked "collective" must be called by every rank, in the same order and
// with the same sizes (the counts and dtypes, not the contents), as in MPI; a rank that
// skips one leaves the others waiting. Loom keeps that order by running collectives only
// from the thread that drives training: graph kernels (collective_ops.h) in plan order,
// and hooks. Results are identical on every rank (same summation order).
// StartAllReduceSum / Wait split an all-reduce so that the caller computes while it runs:
// WithCommunicationThread(comm) runs every collective of `comm` (the blocking ones too)
// on one thread of its own, in call order; a plain communicator runs it inside Start.
// Either way the result does not depend on timing.
// Thread-safety: one thread at a time per Communicator object.
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "loom/tensor/dtype.h"

namespace loom::distribute {

class Communicator {
 public:
  virtual ~Communicator() = default;

  // This process's rank in [0, size); rank 0 is the chief.
  virtual int rank() const = 0;
  virtual int size() const = 0;
  // The rank among the ranks on this machine, and how many share it (threads per rank
  // default to cores / local_size).
  virtual int local_rank() const = 0;
  virtual int local_size() const = 0;

  // Collective. Sums `count` elements of `dtype` (float32, float64, int32 or int64) over
  // all ranks, in place: afterwards every rank holds the same sums.
  virtual void AllReduceSum(DType dtype, void* data, int64_t count) = 0;
  // Collective. Every rank's `bytes` (sizes may differ); result[r] is rank r's.
  virtual std::vector<std::string> AllGather(std::string_view bytes) = 0;
  // Collective. Replaces `data` (the same size on every rank) by rank `root`'s.
  virtual void Broadcast(void* data, int64_t bytes, int root) = 0;
  // Collective, asynchronous: starts AllReduceSum(dtype, data, count) and returns a ticket
  // for Wait. It is ordered with this communicator's other collectives by call order.
  // REQUIRES: `data` stays valid and untouched until Wait(ticket) returns. Default: runs
  // the all-reduce now (returns when done).
  virtual int64_t StartAllReduceSum(DType dtype, void* data, int64_t count) {
    AllReduceSum(dtype, data, count);
    return 0;
  }
  // Blocks until the collective of `ticket` (and every one started before it) is done;
  // rethrows its error. Waiting twice, or for a ticket already waited for, returns at once.
  virtual void Wait(int64_t ticket) { (void)ticket; }

  // Time that started collectives spent communicating (busy_seconds, on the communication
  // thread) and that callers spent blocked in Wait (exposed_seconds): 1 - exposed / busy
  // is the share of communication hidden behind other work. Zero without a communication
  // thread.
  struct OverlapStats {
    int64_t collectives = 0;
    double busy_seconds = 0;
    double exposed_seconds = 0;
  };
  virtual OverlapStats overlap_stats() const { return {}; }

  // Ends every rank of the job now (MPI_Abort): what a rank does when it fails, so that
  // the others do not wait for it forever. Prints `reason` first.
  [[noreturn]] virtual void Abort(int exit_code, std::string_view reason) = 0;
};

// Collective. True on every rank when `value` is true on any rank.
bool AnyRank(Communicator& comm, bool value);
// Collective. Rank root's string on every rank (sizes may differ).
void BroadcastString(Communicator& comm, std::string& value, int root);
// Collective. Rank root's value on every rank.
int64_t BroadcastInt(Communicator& comm, int64_t value, int root);

struct CommunicationOptions {
  // A collective that has not completed after this many seconds ends the job
  // (Communicator::Abort, naming the collective and how long it waited): another rank has
  // left without calling Abort (returned, or caught its error) or is stuck, and waiting
  // longer would hang silently forever (PyTorch's init_process_group timeout). It must
  // exceed the longest time a rank legitimately waits for the others: the chief's
  // checkpoint saves and, in TrainAndEvaluate, its evaluations. 0 waits forever.
  // Default: 1800 (30 minutes, as PyTorch's).
  double collective_timeout_seconds = 1800;
};

// A communicator that runs every collective of `inner` on a thread of its own (the only
// thread that calls into `inner`), in the order they are called: the blocking methods
// queue theirs and wait, StartAllReduceSum queues and returns. So an all-reduce runs while
// the caller's kernels run, and `inner` still sees one caller (MPI_THREAD_SERIALIZED is
// enough). Abort goes to `inner` directly. The destructor waits for queued collectives.
// A watchdog thread enforces options.collective_timeout_seconds.
std::shared_ptr<Communicator> WithCommunicationThread(std::shared_ptr<Communicator> inner,
                                                      CommunicationOptions options = {});

// `n` communicators of one job whose ranks are threads of this process: rank i is
// result[i], to be driven by its own thread; each runs its collectives on a communication
// thread (WithCommunicationThread). REQUIRES: n >= 1.
std::vector<std::shared_ptr<Communicator>> InProcessCommunicators(int n);

// True when this process was started by an MPI launcher (mpirun / mpiexec / srun with
// PMI): the variables Open MPI, MPICH or Slurm set. The environment is read here and only
// here, at the launch boundary (the `loom` command calls it), like argv.
bool LaunchedByMpi();

// The job this process is one rank of: MPI_COMM_WORLD (duplicated, so Loom's collectives
// never mix with the application's), behind a communication thread
// (WithCommunicationThread), the only thread that calls MPI for Loom. MPI is initialized
// on the first call (MPI_Init_thread, MPI_THREAD_SERIALIZED) and finalized at process
// exit; later calls return the same communicator (`options` count on the first call only).
// Throws Unimplemented when Loom was built without MPI and Unavailable when MPI cannot
// start.
std::shared_ptr<Communicator> MpiCommunicator(CommunicationOptions options = {});
// Whether this build has MPI (MpiCommunicator works).
bool HaveMpi();

}  // namespace loom::distribute

#endif  // LOOM_DISTRIBUTE_COMMUNICATOR_H_
