#!/usr/bin/env python3
"""Issue 13's acceptance comparison: Fashion-MNIST's own convnet.py run on Loom through
fashion_convnet_benchmark.py (the script with its import lines and data path changed)
against examples/fashion_convnet_port.cc (the same script in C++: same model,
initializers, SGD at 0.001, batch 400, eval batch 128), never at the same time: each
runs --rounds rounds of --steps steps with an evaluation over the test set after each
round, and with --segments K the two take turns K times, each turn going on from its
own checkpoint (so both curves advance under the same machine load, and a run cut short
still has both at the same step). Prints every evaluation of both (the curves, with the
wall time), then the final test accuracies and their difference; exits 1 when it is
above --max-diff (points of accuracy, 0.5 in the issue) or when the final losses differ
by more than --max-loss-diff.

  PYTHONPATH=build/python /usr/bin/python3 examples/python/convnet_comparison.py \
      --port build/examples/fashion_convnet_port --steps 500 --segments 8   # 4000 steps

The suite runs it at a small size (a few steps on a subset): there both stay near the
start (SGD at 0.001 moves slowly), so it checks that the two run the same script to
about the same loss, not the accuracy the long run reaches.

--controlled makes the comparison controlled: both get the graph seed --seed (which
seeds the initializers, dropout and the input order), keep the files' order (no one-off
sklearn shuffles), run on --threads threads and log the loss at every step. Then the
per-step training losses must agree: exits 1 when any of the first --compare-steps
differs by more than --max-step-loss-diff (relative), printing the first that does.
--shared-init (implies --controlled) also copies the Python run's step-0 checkpoint (the
initial variables and the input iterator's state) into the C++ side's model_dir before
it starts, so the C++ port restores the very same values rather than drawing them from
the same seed: it separates a difference in the initializers (caught by --controlled
alone) from one in the training step.

  PYTHONPATH=build/python /usr/bin/python3 examples/python/convnet_comparison.py \
      --port build/examples/fashion_convnet_port --steps 100 --shared-init"""
import argparse
import ast
import os
import re
import shutil
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
RESULT = re.compile(r"^\{.*'accuracy'.*\}")
STEP_LOSS = re.compile(r"\bloss = ([-+0-9.eEnaif]+), step = (\d+)")


def run(name, cmd, log, busy, step_losses=None):
    """Runs cmd, echoing its output; returns the evaluation dicts it printed, in order,
    each with the seconds this side has run so far (busy[name], the curve's time axis).
    The "loss = L, step = N" lines go into step_losses[N] (a dict) when one is given."""
    print("== %s: %s" % (name, " ".join(cmd)), flush=True)
    start = time.time()
    busy.setdefault(name, 0.0)
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    evals = []
    for line in proc.stdout:
        if log:
            log.write(line)
            log.flush()
        if step_losses is not None:
            logged = STEP_LOSS.search(line)
            if logged:
                step_losses[int(logged.group(2))] = float(logged.group(1))
        m = RESULT.match(line.strip())
        if m:
            text = m.group(0)
            values = ast.literal_eval(re.sub(r"np\.\w+\(([^()]*)\)", r"\1", text))
            values = {k: float(v) for k, v in values.items()}
            values["wall_s"] = busy[name] + time.time() - start
            evals.append(values)
            print("%s step %d: accuracy %.4f loss %.4f (%.0f s)"
                  % (name, values["global_step"], values["accuracy"], values["loss"],
                     values["wall_s"]), flush=True)
    busy[name] += time.time() - start
    if proc.wait() != 0:
        raise SystemExit("%s failed with status %d" % (name, proc.returncode))
    if not evals:
        raise SystemExit("%s printed no evaluation" % name)
    return evals


def share_init(python_dir, cpp_dir):
    """Copies the Python run's step-0 checkpoint into cpp_dir as its only checkpoint: the
    C++ Estimator restores it (variables, global step 0, the input iterator's state)."""
    os.makedirs(cpp_dir, exist_ok=True)
    names = [n for n in os.listdir(python_dir) if n.startswith("model.ckpt-0.")]
    if not names:
        raise SystemExit("no step-0 checkpoint (model.ckpt-0.*) in %s: the Python run "
                         "wrote none" % python_dir)
    for n in names:
        shutil.copy2(os.path.join(python_dir, n), os.path.join(cpp_dir, n))
    with open(os.path.join(cpp_dir, "checkpoint"), "w") as f:
        f.write('model_checkpoint_path: "model.ckpt-0"\n'
                'all_model_checkpoint_paths: "model.ckpt-0"\n')


def compare_step_losses(losses, steps, max_rel):
    """Prints and checks the per-step losses of the first `steps` steps both logged."""
    common = sorted(set(losses["python"]) & set(losses["cpp"]))[:steps]
    if not common:
        print("no per-step losses logged by both sides")
        return False
    worst, worst_step, first_bad = 0.0, None, None
    for step in common:
        lp, lc = losses["python"][step], losses["cpp"][step]
        rel = abs(lp - lc) / max(abs(lp), abs(lc), 1e-30)
        if not rel <= max_rel and first_bad is None:  # NaN counts as a difference
            first_bad = (step, lp, lc, rel)
        if rel > worst or worst_step is None:
            worst, worst_step = rel, step
        print("step %d: loss Python %r, C++ %r (relative difference %.2e)" % (step, lp, lc, rel))
    print("per-step losses over %d steps (%d..%d): largest relative difference %.2e at step "
          "%d (limit %.1e)" % (len(common), common[0], common[-1], worst, worst_step, max_rel))
    if first_bad:
        print("per-step losses DIVERGE: first at step %d: Python %r, C++ %r (%.2e)" % first_bad)
        return False
    return True


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", required=True, help="the fashion_convnet_port binary")
    parser.add_argument("--steps", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--segments", type=int, default=1)
    parser.add_argument("--limit-train", type=int, default=None)
    parser.add_argument("--limit-test", type=int, default=None)
    parser.add_argument("--work-dir", default="/tmp/loom_convnet_comparison")
    parser.add_argument("--max-diff", type=float, default=0.5,
                        help="largest accepted |accuracy difference|, in points")
    parser.add_argument("--max-loss-diff", type=float, default=None)
    parser.add_argument("--log", default=None, help="append both programs' output here")
    parser.add_argument("--script", default=None,
                        help="convnet.py.gz for the Python side (default: Debian's)")
    parser.add_argument("--controlled", action="store_true",
                        help="same graph seed, data order and threads; compare the "
                        "per-step losses")
    parser.add_argument("--shared-init", action="store_true",
                        help="--controlled, and the C++ side restores the Python side's "
                        "step-0 checkpoint")
    parser.add_argument("--seed", type=int, default=None,
                        help="the graph seed of both (default with --controlled: 1)")
    parser.add_argument("--threads", type=int, default=None,
                        help="Session threads of both (default with --controlled: 1)")
    parser.add_argument("--compare-steps", type=int, default=100)
    parser.add_argument("--max-step-loss-diff", type=float, default=1e-5,
                        help="largest accepted relative per-step loss difference")
    args = parser.parse_args()
    args.controlled = args.controlled or args.shared_init
    if args.controlled:
        args.seed = 1 if args.seed is None else args.seed
        args.threads = 1 if args.threads is None else args.threads
    log = open(args.log, "a") if args.log else None
    common = ["--steps", str(args.steps), "--rounds", str(args.rounds)]
    py = [sys.executable, os.path.join(HERE, "fashion_convnet_benchmark.py")] + common + \
        ["--model-dir", os.path.join(args.work_dir, "python"), "--resume"]
    cpp = [args.port] + common + ["--model_dir", os.path.join(args.work_dir, "cpp")]
    if args.limit_train:
        py += ["--limit-train", str(args.limit_train)]
        cpp += ["--limit_train", str(args.limit_train)]
    if args.limit_test:
        py += ["--limit-test", str(args.limit_test)]
        cpp += ["--limit_test", str(args.limit_test)]
    if args.script:
        py += ["--script", args.script]
    if args.seed is not None:
        py += ["--seed", str(args.seed)]
        cpp += ["--seed", str(args.seed)]
    if args.threads is not None:
        py += ["--threads", str(args.threads)]
        cpp += ["--threads", str(args.threads)]
    if args.controlled:
        py += ["--no-preshuffle", "--log-every", "1"]
        cpp += ["--no_preshuffle", "1", "--log_every", "1"]
    shutil.rmtree(args.work_dir, ignore_errors=True)
    results = {"python": [], "cpp": []}
    losses = {"python": {}, "cpp": {}}
    busy = {}
    for segment in range(args.segments):
        results["python"] += run("python", py, log, busy, losses["python"])
        if args.shared_init and segment == 0:
            share_init(os.path.join(args.work_dir, "python"), os.path.join(args.work_dir, "cpp"))
        results["cpp"] += run("cpp", cpp, log, busy, losses["cpp"])
    step_ok = True
    if args.controlled:
        step_ok = compare_step_losses(losses, args.compare_steps, args.max_step_loss_diff)
    p, c = results["python"][-1], results["cpp"][-1]
    diff = 100 * abs(p["accuracy"] - c["accuracy"])
    print("after %d steps: test accuracy Python %.4f, C++ %.4f: difference %.2f points "
          "(limit %.2f); loss Python %.4f, C++ %.4f"
          % (p["global_step"], p["accuracy"], c["accuracy"], diff, args.max_diff, p["loss"],
             c["loss"]))
    ok = step_ok and diff <= args.max_diff and p["global_step"] == c["global_step"]
    if args.max_loss_diff is not None and abs(p["loss"] - c["loss"]) > args.max_loss_diff:
        ok = False
    print("comparison %s" % ("PASSED" if ok else "FAILED"))
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
