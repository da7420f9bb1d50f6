#!/usr/bin/env node
/**
 * `node bench/heap-per-connection.js [--connections=2000] [--room-size=50] [--top=40] [--owners]`
 *
 * What an idle authenticated connection keeps in the JS heap, by constructor: the service (SQLite)
 * and R1 (the bare Socket.IO relay) each take a heap snapshot (through the inspector, after a full
 * GC) before and after `--connections` clients connect in rooms of `--room-size`; the difference of
 * the two, per connection, grouped by the snapshot's node type and name. What the service holds
 * above R1 is its own per-connection state (scenario 17's KB per connection, docs/benchmarks.md).
 * `--owners`: arrays (property and element stores, closures' arrays) are grouped by the object that
 * holds them, so that a dictionary-mode object or a growing list shows under its own constructor.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { arg } from './lib/args.js';
import { connectInspector } from './lib/inspector.js';
import { pinSelf } from './lib/processes.js';
import { jwtMinter, newJwtSecret, startBaseline, startService } from './lib/service.js';
import { baselineClients, serviceClients } from './scenarios/rooms.js';

const connections = Number(arg('connections', 2000));
const roomSize = Number(arg('room-size', 50));
const top = Number(arg('top', 40));
const byOwner = process.argv.includes('--owners');

/** A heap snapshot after a full GC: {`type:name`: {count, bytes}}. */
async function heapByConstructor(proc) {
  const chunks = [];
  const { call, close } = await connectInspector(proc, { onEvent: (msg) => msg.method === 'HeapProfiler.addHeapSnapshotChunk' && chunks.push(msg.params.chunk) });
  await call('HeapProfiler.enable');
  await call('HeapProfiler.collectGarbage');
  await call('HeapProfiler.takeHeapSnapshot', { reportProgress: false, captureNumericValue: false });
  close();
  const snapshot = JSON.parse(chunks.join(''));
  const fields = snapshot.snapshot.meta.node_fields;
  const types = snapshot.snapshot.meta.node_types[0];
  const [typeAt, nameAt, sizeAt] = ['type', 'name', 'self_size'].map((f) => fields.indexOf(f));
  const out = new Map();
  const { nodes, strings, edges } = snapshot;
  const nameOf = (i) => {
    const type = types[nodes[i + typeAt]];
    // Strings are grouped by type only: their names are their contents.
    return type === 'string' || type === 'concatenated string' || type === 'sliced string' || type === 'number' ? '' : strings[nodes[i + nameAt]].slice(0, 60);
  };
  // --owners: the first object found holding each array (node offset of the array -> of its owner).
  const owner = new Map();
  if (byOwner) {
    const edgeFields = snapshot.snapshot.meta.edge_fields.length;
    const toAt = snapshot.snapshot.meta.edge_fields.indexOf('to_node');
    const countAt = fields.indexOf('edge_count');
    for (let i = 0, e = 0; i < nodes.length; i += fields.length) {
      const ownerType = types[nodes[i + typeAt]];
      for (let k = 0; k < nodes[i + countAt]; k++, e += edgeFields) {
        const to = edges[e + toAt];
        if (ownerType !== 'array' && types[nodes[to + typeAt]] === 'array' && !owner.has(to)) owner.set(to, i);
      }
    }
  }
  for (let i = 0; i < nodes.length; i += fields.length) {
    const type = types[nodes[i + typeAt]];
    const held = owner.get(i);
    const key = held === undefined ? `${type}:${nameOf(i)}` : `${type}:${nameOf(i)} of ${types[nodes[held + typeAt]]}:${nameOf(held)}`;
    const entry = out.get(key) ?? { count: 0, bytes: 0 };
    entry.count++;
    entry.bytes += nodes[i + sizeAt];
    out.set(key, entry);
  }
  return out;
}

function perConnection(before, after) {
  const rows = [];
  for (const [key, a] of after) {
    const b = before.get(key) ?? { count: 0, bytes: 0 };
    rows.push({ key, count: (a.count - b.count) / connections, bytes: (a.bytes - b.bytes) / connections });
  }
  return rows.sort((x, y) => y.bytes - x.bytes);
}

async function measure(name, start, clientsOf) {
  const target = await start();
  try {
    const before = await heapByConstructor(target.proc);
    const set = await clientsOf(target); // connected
    const after = await heapByConstructor(target.proc);
    for (const c of set.clients) c.close();
    const rows = perConnection(before, after);
    const total = rows.reduce((sum, r) => sum + r.bytes, 0);
    console.log(`\n${name}: ${(total / 1024).toFixed(2)} KB of JS heap per connection (${connections} connections, rooms of ${roomSize})`);
    return new Map(rows.map((r) => [r.key, r]));
  } finally {
    await target.proc.stop();
  }
}

pinSelf();
const tmp = mkdtempSync(join(tmpdir(), 'ams-heap-'));
const jwtSecret = newJwtSecret();
const mint = jwtMinter(jwtSecret);
const fixture = { rooms: Math.ceil(connections / roomSize), roomSize, mint };
try {
  const inspect = ['--inspect=127.0.0.1:0'];
  const service = await measure('service', () => startService({ name: 'heap-service', databaseUrl: `sqlite:${join(tmp, 'h.sqlite')}`, jwtSecret, nodeArgs: inspect }), (s) => serviceClients(s, fixture));
  const r1 = await measure('R1', () => startBaseline({ name: 'heap-r1', script: 'bench/baselines/relay.js', env: { BASELINE_MODE: 'r1' }, nodeArgs: inspect }), (b) => baselineClients(b.url, fixture));
  console.log(`\nper connection, the service above R1 (bytes; objects), the ${top} largest differences:`);
  const keys = new Set([...service.keys(), ...r1.keys()]);
  const diffs = [...keys].map((key) => {
    const s = service.get(key) ?? { bytes: 0, count: 0 };
    const r = r1.get(key) ?? { bytes: 0, count: 0 };
    return { key, bytes: s.bytes - r.bytes, count: s.count - r.count, service: s.bytes, r1: r.bytes };
  }).sort((a, b) => Math.abs(b.bytes) - Math.abs(a.bytes));
  for (const d of diffs.slice(0, top)) {
    console.log(`${d.bytes.toFixed(0).padStart(7)} B ${d.count.toFixed(2).padStart(7)} obj  (service ${d.service.toFixed(0)}, R1 ${d.r1.toFixed(0)})  ${d.key}`);
  }
} finally {
  rmSync(tmp, { recursive: true, force: true });
}
process.exit(0);
