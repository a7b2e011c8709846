#!/usr/bin/env node
// Compiles the contracts in this directory with solcjs (standard JSON) and writes, for each
// contract, <Name>.abi.json and <Name>.bin into the output directory (default: ./build).
//
//   node contracts/compile.js [outdir]
//
// Settings are fixed so the artifacts are reproducible: solc 0.8.28, evm cancun, optimizer
// 200 runs, metadata bytecodeHash none. The ABI is written in a canonical layout (entries
// sorted by kind then name, keys in a fixed order, two-space indent) so that it can be
// compared byte for byte with spec/EpochAnchor.abi.json.
'use strict';

const fs = require('fs');
const path = require('path');

const here = __dirname;
const SOLC_VERSION = '0.8.28';
const SOURCES = ['EpochAnchor.sol', 'TestWallet.sol'];

function loadSolc() {
  const solc = require(path.join(here, '.solc', 'node_modules', 'solc'));
  const v = solc.version();
  if (!v.startsWith(SOLC_VERSION + '+')) {
    throw new Error(`solc ${SOLC_VERSION} required, found ${v}`);
  }
  return solc;
}

const KIND_ORDER = ['constructor', 'function', 'receive', 'fallback', 'event', 'error'];

function param(p, isEvent) {
  const out = { name: p.name, type: p.type };
  if (p.components) out.components = p.components.map((c) => param(c, false));
  if (isEvent) out.indexed = !!p.indexed;
  if (p.internalType !== undefined) out.internalType = p.internalType;
  return out;
}

function entry(e) {
  const out = { type: e.type };
  if (e.name !== undefined) out.name = e.name;
  const isEvent = e.type === 'event';
  if (e.inputs) out.inputs = e.inputs.map((p) => param(p, isEvent));
  if (e.outputs) out.outputs = e.outputs.map((p) => param(p, false));
  if (e.stateMutability !== undefined) out.stateMutability = e.stateMutability;
  if (isEvent) out.anonymous = !!e.anonymous;
  return out;
}

function canonicalAbi(abi) {
  const sorted = abi.map(entry).sort((a, b) => {
    const k = KIND_ORDER.indexOf(a.type) - KIND_ORDER.indexOf(b.type);
    if (k !== 0) return k;
    const an = a.name || '';
    const bn = b.name || '';
    return an < bn ? -1 : an > bn ? 1 : 0;
  });
  return JSON.stringify(sorted, null, 2) + '\n';
}

function main() {
  const outDir = path.resolve(process.argv[2] || path.join(here, 'build'));
  const solc = loadSolc();

  const sources = {};
  for (const f of SOURCES) {
    sources[f] = { content: fs.readFileSync(path.join(here, f), 'utf8') };
  }
  const input = {
    language: 'Solidity',
    sources,
    settings: {
      evmVersion: 'cancun',
      optimizer: { enabled: true, runs: 200 },
      metadata: { bytecodeHash: 'none' },
      outputSelection: { '*': { '*': ['abi', 'evm.bytecode.object'] } },
    },
  };

  const output = JSON.parse(solc.compile(JSON.stringify(input)));
  let failed = false;
  for (const err of output.errors || []) {
    process.stderr.write((err.formattedMessage || err.message) + '\n');
    if (err.severity === 'error') failed = true;
  }
  if (failed) process.exit(1);

  fs.mkdirSync(outDir, { recursive: true });
  for (const file of SOURCES) {
    const name = path.basename(file, '.sol');
    const c = output.contracts[file][name];
    if (!c || !c.evm.bytecode.object) throw new Error(`no bytecode for ${name}`);
    fs.writeFileSync(path.join(outDir, name + '.abi.json'), canonicalAbi(c.abi));
    fs.writeFileSync(path.join(outDir, name + '.bin'), c.evm.bytecode.object + '\n');
    process.stdout.write(`${name}: ${c.evm.bytecode.object.length / 2} bytes of init code\n`);
  }
}

main();
