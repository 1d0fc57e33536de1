#!/usr/bin/env bash
# The C++ examples of the docs stay what tests/doc_examples_test.cc compiles and runs: every
# block there between "// doc-example: FILE" and "// doc-example-end" must appear, line for
# line (common indentation and its clang-format off/on lines aside; a line ending in
# "// doc: TEXT" stands for TEXT), in
# FILE's ```cpp blocks; and every ```cpp block of README.md and docs/ must be covered by
# such a block, be the README's (tests/readme_test.sh), or be listed below with why not.
set -euo pipefail
root=$1
exec /usr/bin/python3 - "$root" <<'PY'
import re, sys, pathlib
root = pathlib.Path(sys.argv[1])
# Doc blocks not compiled, by their first line, and why.
NOT_COMPILED = {
    "auto model_fn = [](loom::Scope& s, const loom::Features& features, loom::Output labels,":
        "the README's example: examples/readme_example.cc, tests/readme_test.sh",
    "auto comm = loom::distribute::MpiCommunicator();   // MPI_Init_thread once per process":
        "needs mpirun: loom/distribute/distribute_mpi_test.cc trains this way",
    "inline constexpr Attr<bool> kTransposeA{\"transpose_a\"};":
        "an op definition sketched with elisions (loom/ops/matmul.cc is the real one)",
    ".attrs = {kDstT.Required(), kSrcT.Optional()},": "fields of an op definition",
    ".sample = [] { return OpSample{{SampleDoubles({2, 3})}, {kAxis(1)}}; },": "fields of an op definition",
    "auto read = loom::Identity(s.WithControlDependencies({increment}), counter);":
        "one line of engine.md's prose example (runtime_test pins control dependencies)",
    "class SessionRunHook {": "a synopsis of loom/train/session_run_hook.h",
    "EstimatorSpec MyModel(Scope& s, const Features& f, Output labels, Mode mode,":
        "a sketch with elisions (the canned estimators pass config.precision the same way)",
    "#include \"loom/estimator/onnx_export.h\"":
        "needs ONNX export of a trained classifier: loom/estimator/onnx_export_test.cc",
}

def dedent(lines):
    lines = [l.rstrip() for l in lines]
    indent = min((len(l) - len(l.lstrip()) for l in lines if l.strip()), default=0)
    return [l[indent:] for l in lines]

def doc_blocks(path):
    text = path.read_text()
    return [(text[:m.start()].count("\n") + 2, dedent(m.group(1).split("\n")[:-1]))
            for m in re.finditer(r"```(?:cpp|c\+\+)\n(.*?)```", text, re.S)]

failures = []
covered = set()  # (file, first line of the doc block)
test = root / "tests/doc_examples_test.cc"
lines = test.read_text().split("\n")
i = 0
while i < len(lines):
    m = re.match(r"\s*// doc-example: (\S+)$", lines[i])
    if not m:
        i += 1
        continue
    doc, start = m.group(1), i + 1
    j = start
    while j < len(lines) and not re.match(r"\s*// doc-example-end$", lines[j]):
        j += 1
    block = []
    body = [l for l in lines[start:j] if not re.match(r"\s*// clang-format (on|off)$", l)]
    for l in dedent(body):
        d = re.search(r"\s*// doc: (.*)$", l)
        block.append((l[:d.start()][:len(l) - len(l.lstrip())] + d.group(1)) if d else l)
    block = dedent(block)
    found = False
    for first, doc_lines in doc_blocks(root / doc):
        for k in range(len(doc_lines) - len(block) + 1):
            if doc_lines[k:k + len(block)] == block:
                found = True
                covered.add((doc, first))
    if not found:
        failures.append(f"{test.name}:{start}: this block is no longer in {doc}:\n  " +
                        "\n  ".join(block))
    i = j + 1

for path in [root / "README.md"] + sorted((root / "docs").rglob("*.md")):
    rel = str(path.relative_to(root))
    for first, doc_lines in doc_blocks(path):
        head = next((l.strip() for l in doc_lines if l.strip()), "")
        if (rel, first) in covered or head in NOT_COMPILED:
            continue
        failures.append(f"{rel}:{first}: a C++ example that {test.name} does not compile "
                        f"(copy it there between doc-example markers, or list it in "
                        f"doc_examples_test.sh with the reason): {head}")

if failures:
    print("\n".join(failures))
    sys.exit(1)
print(f"{len(covered)} doc examples compiled by {test.name}; {len(NOT_COMPILED)} listed as not compiled")
PY
