#!/bin/sh
# netns_bench.sh: two "machines" on this one (bench/RESULTS.md, docs/distribute.md).
# Each rank runs in its own network namespace; the namespaces are joined by veth pairs to
# a bridge in the root namespace, on a private /24; Open MPI talks TCP between them
# (--mca btl tcp,self: no shared memory), launched through an rsh agent that enters the
# namespace. Optionally each namespace's link is shaped with a token bucket (tc tbf).
#
#   sudo bench/netns_bench.sh [BUILD_DIR] [ITERATIONS]     (as root)
#   MPI_EXTRA="--mca mpi_yield_when_idle 1" BENCH_ARGS=--steps-only sudo -E bench/...
#       (extra mpirun options; dist_bench options after ITERATIONS)
#
# Runs build/bench/dist_bench on 2 ranks unshaped and at `tbf rate 1gbit`, and on one
# process for reference, then removes everything it made (also on error or Ctrl-C).
# Names: namespaces loomns1/loomns2, bridge loombr0, addresses 10.77.0.0/24.
set -eu
BUILD=${1:-build}
ITERATIONS=${2:-4}
BENCH=$(cd "$BUILD" && pwd)/bench/dist_bench
NET=10.77.0
WORK=$(mktemp -d)

teardown() {
  for i in 1 2; do ip netns del loomns$i 2>/dev/null || true; done
  ip link del loombr0 2>/dev/null || true
  rm -rf "$WORK"
}
trap teardown EXIT INT TERM

setup() {
  teardown
  WORK=$(mktemp -d)
  ip link add loombr0 type bridge
  ip addr add $NET.254/24 dev loombr0  # mpirun (root namespace) is reached here
  ip link set loombr0 up
  for i in 1 2; do
    ip netns add loomns$i
    ip link add loomveth$i type veth peer name eth0 netns loomns$i
    ip link set loomveth$i master loombr0 up
    ip netns exec loomns$i ip addr add $NET.$i/24 dev eth0
    ip netns exec loomns$i ip link set eth0 up
    ip netns exec loomns$i ip link set lo up
  done
  # The rsh agent: `agent HOST COMMAND...` runs COMMAND in HOST's namespace.
  cat > "$WORK/agent" <<EOF
#!/bin/sh
host=\$1; shift
case "\$host" in $NET.1) ns=loomns1 ;; $NET.2) ns=loomns2 ;; *) echo "no namespace for \$host" >&2; exit 1 ;; esac
# Each "machine" has its own session directory: the namespaces share /tmp and the host
# name, and Open MPI's daemons would otherwise collide there ("mkdir ... File exists").
mkdir -p "$WORK/\$ns"
exec ip netns exec "\$ns" env TMPDIR="$WORK/\$ns" sh -c "\$*"
EOF
  chmod +x "$WORK/agent"
  printf '%s.1 slots=1\n%s.2 slots=1\n' $NET $NET > "$WORK/hosts"
}

# shape RATE: a token bucket on each namespace's egress (both directions of the link).
shape() {
  for i in 1 2; do
    ip netns exec loomns$i tc qdisc replace dev eth0 root tbf rate "$1" burst 1mb latency 100ms
  done
}

run() {
  OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 \
    mpirun --hostfile "$WORK/hosts" -np 2 --bind-to none \
      --mca plm_rsh_agent "$WORK/agent" --mca btl tcp,self \
      --mca oob_tcp_if_include $NET.0/24 --mca btl_tcp_if_include $NET.0/24 \
      ${MPI_EXTRA:-} "$BENCH" "$ITERATIONS" ${BENCH_ARGS:-}
}

echo "== one process (no network)"
OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 "$BENCH" "$ITERATIONS" --steps-only
setup
echo "== 2 namespaces over TCP, unshaped"
run
shape 1gbit
echo "== 2 namespaces over TCP, tbf rate 1gbit"
run
