// Node.js (CommonJS) entry: the same API, bundled to CommonJS at build time.
'use strict';
const { readFileSync } = require('node:fs');
const { join } = require('node:path');
const bundle = require('./dist/fencegate.cjs');

bundle.__initSync(readFileSync(join(__dirname, 'dist', 'fencegate_bg.wasm')));

const api = { ...bundle };
delete api.__initSync;
module.exports = api;
