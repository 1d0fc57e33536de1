"""Kill and resume from Python: a TF1 training script (kill_resume_train.py: a shuffled,
repeated tf.data pipeline, dropout, Adam, MonitoredTrainingSession saving every 5 steps)
is SIGKILLed at random points several times and relaunched each time; the run it makes
in the end must equal an uninterrupted one exactly (Loom saves the input iterator's
position, the random streams and the optimizer slots in each checkpoint), resume from
the newest complete checkpoint, and leave no temporary files."""
import os
import random
import re
import signal
import subprocess
import sys
import time

import numpy as np

SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "kill_resume_train.py")
LAST_STEP = 60


def _launch(model_dir, out, pause):
    return subprocess.Popen([sys.executable, SCRIPT, model_dir, out, str(pause)],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT)


def _latest_step(model_dir):
    """The step of the newest complete checkpoint: a checkpoint file is complete once
    renamed from its temporary name, which may be before the `checkpoint` state file
    names it (a kill between the two); Loom resumes from it then, as it should."""
    try:
        names = os.listdir(model_dir)
    except FileNotFoundError:
        return None
    steps = [int(m.group(1)) for m in (re.fullmatch(r"model\.ckpt-(\d+)\.safetensors", n)
                                       for n in names) if m]
    return max(steps) if steps else None


def _run_to_end(model_dir, out, pause=0.0):
    p = _launch(model_dir, out, pause)
    log = p.communicate(timeout=120)[0].decode()
    assert p.returncode == 0, log
    return log


def test_sigkill_at_random_points_then_resume_equals_an_uninterrupted_run(tmp_path):
    rng = random.Random(int(os.environ.get("LOOM_KILL_SEED", "1234")))
    reference = str(tmp_path / "reference")
    _run_to_end(reference, str(tmp_path / "reference.npy"))
    want = np.load(str(tmp_path / "reference.npy"))

    killed = str(tmp_path / "killed")
    seen = []
    for _ in range(3):
        before = _latest_step(killed) or 0
        p = _launch(killed, str(tmp_path / "unused.npy"), 0.02)
        # Wait for a checkpoint newer than the last run's, then kill at a random moment
        # (mid-step, mid-save or between steps).
        deadline = time.time() + 60
        while (_latest_step(killed) or 0) <= before and p.poll() is None and \
                time.time() < deadline:
            time.sleep(0.01)
        time.sleep(rng.uniform(0.0, 0.12))
        if p.poll() is None:
            p.send_signal(signal.SIGKILL)
        out = p.communicate(timeout=60)[0].decode()
        # It resumed from the newest checkpoint when it started (0: a fresh start).
        assert re.search(r"^start %d$" % before, out, re.M), out
        step = _latest_step(killed)
        assert step is not None and step > before, "no progress before the kill"
        seen.append(step)
    assert seen[-1] < LAST_STEP, "the runs ended before the kills: %s" % seen
    resumed_from = seen[-1]
    log = _run_to_end(killed, str(tmp_path / "killed.npy"))
    assert re.search(r"^start %d$" % resumed_from, log, re.M), log
    got = np.load(str(tmp_path / "killed.npy"))
    assert got[-1] == LAST_STEP and want[-1] == LAST_STEP
    np.testing.assert_array_equal(got, want)  # exact: the same batches, dropout and updates
    leftovers = [f for f in os.listdir(killed) if ".tmp" in f]
    assert not leftovers, leftovers


TAE_SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "kill_resume_tae.py")
TAE_LAST_STEP = 40


def _tae(model_dir, out, train_pause=0.0, eval_pause=0.0):
    return subprocess.Popen([sys.executable, TAE_SCRIPT, model_dir, out, str(train_pause),
                             str(eval_pause)], stdout=subprocess.PIPE, stderr=subprocess.STDOUT)


def _exports(model_dir, name):
    """{export directory name: its global step} under model_dir/export/<name>."""
    base = os.path.join(model_dir, "export", name)
    out = {}
    for d in os.listdir(base):
        assert not d.startswith("temp-"), "a killed export stayed behind: %s" % d
        with open(os.path.join(base, d, "saved_model.json")) as f:
            out[d] = int(re.search(r'"global_step": "(\d+)"', f.read()).group(1))
    return out


def test_sigkill_during_train_and_evaluate_then_resume_equals_an_uninterrupted_run(tmp_path):
    """train_and_evaluate (an evaluation and two exports after every checkpoint) killed
    at random moments, mid-step, mid-evaluation or mid-export, and relaunched: the final
    variables (and Adam's slots) equal an uninterrupted run's bit for bit, and each
    exporter's newest export is of the final step with the largest name; the unfinished
    export of a killed run is removed."""
    rng = random.Random(int(os.environ.get("LOOM_KILL_SEED", "4321")))
    reference = str(tmp_path / "reference")
    p = _tae(reference, str(tmp_path / "reference.npy"))
    log = p.communicate(timeout=120)[0].decode()
    assert p.returncode == 0, log
    want = np.load(str(tmp_path / "reference.npy"))

    killed = str(tmp_path / "killed")
    for _ in range(3):
        before = _latest_step(killed) or 0
        p = _tae(killed, str(tmp_path / "unused.npy"), 0.01, 0.02)
        deadline = time.time() + 60
        while (_latest_step(killed) or 0) <= before and p.poll() is None and \
                time.time() < deadline:
            time.sleep(0.01)
        time.sleep(rng.uniform(0.0, 0.3))  # an evaluation and its exports take ~0.2 s
        if p.poll() is None:
            p.send_signal(signal.SIGKILL)
        out = p.communicate(timeout=60)[0].decode()
        assert re.search(r"^start %d$" % before, out, re.M), out
    p = _tae(killed, str(tmp_path / "killed.npy"))
    log = p.communicate(timeout=120)[0].decode()
    assert p.returncode == 0, log
    np.testing.assert_array_equal(np.load(str(tmp_path / "killed.npy")), want)
    for name in ("latest", "best"):
        exports = _exports(killed, name)
        newest = max(exports, key=int)
        assert exports[newest] == TAE_LAST_STEP, (name, exports)
    assert not [f for f in os.listdir(killed) if ".tmp" in f]
