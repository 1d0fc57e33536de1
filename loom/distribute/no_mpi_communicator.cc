// MpiCommunicator in a build without MPI (CMake found no libopenmpi-dev).
#include "loom/base/error.h"
#include "loom/distribute/communicator.h"

namespace loom::distribute {

bool HaveMpi() { return false; }

std::shared_ptr<Communicator> MpiCommunicator(CommunicationOptions) {
  throw Unimplemented(
      "this Loom was built without MPI, so it cannot join an mpirun job: install "
      "libopenmpi-dev and openmpi-bin (scripts/install-deps.sh) and rebuild");
}

}  // namespace loom::distribute
