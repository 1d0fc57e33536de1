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
about the same loss, not the accuracy the long run reaches."""
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


def run(name, cmd, log, busy):
    """Runs cmd, echoing its output; returns the evaluation dicts it printed, in order,
    each with the seconds this side has run so far (busy[name], the curve's time axis)."""
    print("== %s: %s" % (name, " ".join(cmd)), flush=True)
    start = time.time()
    busy.setdefault(name, 0.0)
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    evals = []
    for line in proc.stdout:
        if log:
            log.write(line)
            log.flush()
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
    args = parser.parse_args()
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
    shutil.rmtree(args.work_dir, ignore_errors=True)
    results = {"python": [], "cpp": []}
    busy = {}
    for _ in range(args.segments):
        results["python"] += run("python", py, log, busy)
        results["cpp"] += run("cpp", cpp, log, busy)
    p, c = results["python"][-1], results["cpp"][-1]
    diff = 100 * abs(p["accuracy"] - c["accuracy"])
    print("after %d steps: test accuracy Python %.4f, C++ %.4f: difference %.2f points "
          "(limit %.2f); loss Python %.4f, C++ %.4f"
          % (p["global_step"], p["accuracy"], c["accuracy"], diff, args.max_diff, p["loss"],
             c["loss"]))
    ok = diff <= args.max_diff and p["global_step"] == c["global_step"]
    if args.max_loss_diff is not None and abs(p["loss"] - c["loss"]) > args.max_loss_diff:
        ok = False
    print("comparison %s" % ("PASSED" if ok else "FAILED"))
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
