// Opens a host store from a JSON-able spec, so separate processes can share one.
import { FileCasStore } from './stores.mjs';

export async function openStore(spec) {
  switch (spec.kind) {
    case 'file':
      return { store: new FileCasStore(spec.dir, { staleLockMs: spec.staleLockMs ?? 200 }), close: async () => {} };
    default:
      throw new Error(`unknown store kind ${spec.kind}`);
  }
}

/** The stores the multi-process tests run against: `{ name, store: spec }`. */
export async function storeSpecs(tmpdir) {
  return [{ name: 'file compare-and-set', store: { kind: 'file', dir: tmpdir('issuer-file') } }];
}
