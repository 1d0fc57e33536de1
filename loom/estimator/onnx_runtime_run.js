// Runs an ONNX model with ONNX Runtime (npm's onnxruntime-node, CPU) for the ONNX export
// tests (onnx_export_test.cc): node onnx_runtime_run.js MODEL.onnx INPUTS.json OUTPUTS.json
// Inputs and outputs are {"name": {"dtype": "float32", "dims": [2, 3], "data": [...]}};
// int64 values travel as JSON numbers (the tests' ids are small). Exits 1 with ONNX
// Runtime's message when the model does not load or run.
const fs = require('fs');
const ort = require('onnxruntime-node');

const typed = {
  float32: Float32Array, float64: Float64Array, int32: Int32Array, uint8: Uint8Array,
  bool: Uint8Array,
};

async function main() {
  const [model, inputsPath, outputsPath] = process.argv.slice(2);
  const session = await ort.InferenceSession.create(model);
  const spec = JSON.parse(fs.readFileSync(inputsPath, 'utf8'));
  const feeds = {};
  for (const [name, t] of Object.entries(spec)) {
    let data;
    if (t.dtype === 'int64') data = BigInt64Array.from(t.data.map(BigInt));
    else if (t.dtype === 'string') data = t.data;
    else data = typed[t.dtype].from(t.data);
    feeds[name] = new ort.Tensor(t.dtype, data, t.dims);
  }
  const results = await session.run(feeds);
  const out = {};
  for (const [name, t] of Object.entries(results)) {
    out[name] = {dtype: t.type, dims: t.dims, data: Array.from(t.data, v => typeof v === 'bigint' ? Number(v) : v)};
  }
  fs.writeFileSync(outputsPath, JSON.stringify(out));
}

main().catch(e => { console.error(`onnx_runtime_run: ${e.message || e}`); process.exit(1); });
