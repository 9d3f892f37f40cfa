// Node.js (CommonJS) entry: the same API, bundled to CommonJS at build time.
'use strict';
const { readFileSync } = require('node:fs');
const { join } = require('node:path');
const bundle = require('./dist/fencegate.cjs');

bundle.__initSync(readFileSync(join(__dirname, 'dist', 'fencegate_bg.wasm')));
// Node 18 has no global crypto (lease ids of the Issuer): node:crypto's, loaded on first use
// (loading it at start-up is about 3 ms of cold start; docs/design.md "Issue 14: cold start").
bundle.__setWebCrypto(() => require('node:crypto').webcrypto);
// The issuer side, read when an Issuer or reconcile is first used (docs/design.md "Issue 12: two .wasm modules").
bundle.__setIssuerSource(() => readFileSync(join(__dirname, 'dist', 'fencegate_issuer_bg.wasm')));

const api = { ...bundle };
delete api.__initSync;
delete api.__setWebCrypto;
delete api.__setIssuerSource;
module.exports = api;
