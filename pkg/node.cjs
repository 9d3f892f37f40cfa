// Node.js (CommonJS) entry: the same API, bundled to CommonJS at build time.
'use strict';
const { readFileSync } = require('node:fs');
const { join } = require('node:path');
const bundle = require('./dist/fencegate.cjs');

bundle.__initSync(readFileSync(join(__dirname, 'dist', 'fencegate_bg.wasm')));
// Node 18 has no global crypto (lease ids of the Issuer): node:crypto's, loaded on first use
// (nothing a gate does not use is loaded at start-up: docs/decisions/cold-start.md).
bundle.__setWebCrypto(() => require('node:crypto').webcrypto);
// The issuer side, read when an Issuer or reconcile is first used (docs/decisions/two-wasm-modules.md).
bundle.__setIssuerSource(() => readFileSync(join(__dirname, 'dist', 'fencegate_issuer_bg.wasm')));

const api = { ...bundle };
delete api.__initSync;
delete api.__setWebCrypto;
delete api.__setIssuerSource;
module.exports = api;
