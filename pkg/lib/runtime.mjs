// Loads the WebAssembly module once per realm. Entry files call initSync()
// (Node, workerd) or core.init() calls initAsync() (browsers).
import glueInit, { initSync as glueInitSync, __setErrorClass, __codes } from '../dist/fencegate.js';
import { FencegateError } from './errors.mjs';

/** True once the module is instantiated; live binding read by core.mjs. */
export let ready = false;
/** Code strings indexed like the Rust `Code` discriminants. */
export let CODES = [];

function attach() {
  __setErrorClass(FencegateError);
  CODES = __codes();
  ready = true;
}

/** Instantiates from a `WebAssembly.Module` or the `.wasm` bytes. */
export function initSync(module) {
  if (ready) return;
  glueInitSync({ module });
  attach();
}

/** Instantiates from a URL, Response, bytes or Module (default: the packaged `.wasm` beside the glue). */
export async function initAsync(input) {
  if (ready) return;
  await glueInit(input === undefined ? undefined : { module_or_path: input });
  attach();
}
