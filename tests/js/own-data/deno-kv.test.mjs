// The caller's own data on Deno KV (docs/stores.md "Your own data"), in Deno 2.9 (npm
// `deno`) on a local KV file: the body's sum/set/check join the fence's one atomic()
// (tests/deno/own-data.mjs). Exact verdicts, balances, the order entry and the mark after
// each step: stale refused with nothing written, a throwing body CALLBACK_FAILED with
// nothing written, one op id applied once, the caller's moved versionstamp retried (the
// body runs again on a fresh read), a never-holding check COMMIT_CONFLICT after
// 1 + maxRetries attempts, commit/fence-key misuse refused; fenceIn on an AtomicOperation
// the caller commits (a refusal poisons it: a caught refusal cannot commit; two callers
// racing: the second commit fails its check).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('../../../', import.meta.url));

test('Deno KV own data: gate.transaction joins the atomic operation; fenceIn on the caller\'s AtomicOperation', () => {
  const dir = mkdtempSync(join(tmpdir(), 'fencegate-denokv-own-'));
  let out;
  try {
    out = execFileSync(join(root, 'node_modules/.bin/deno'), ['run', '--quiet', '--unstable-kv', '-A', 'tests/deno/own-data.mjs', dir], {
      cwd: root, encoding: 'utf8', env: { ...process.env, NO_COLOR: '1', DENO_NO_UPDATE_CHECK: '1' },
    });
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  assert.deepEqual(JSON.parse(out.trim().split('\n').at(-1)), EXPECTED);
});

const EXPECTED = {
  "verdicts": [
    {
      "key": "orders/42",
      "ok": true,
      "outcome": "advance",
      "code": null,
      "token": 33,
      "markBefore": 0,
      "markAfter": 33,
      "result": 1
    },
    {
      "key": "orders/42",
      "ok": true,
      "outcome": "advance",
      "code": null,
      "token": 34,
      "markBefore": 33,
      "markAfter": 34,
      "result": 2
    },
    {
      "key": "orders/42",
      "ok": true,
      "outcome": "accept",
      "code": null,
      "token": 34,
      "markBefore": 34,
      "markAfter": 34,
      "result": 3
    },
    {
      "key": "orders/42",
      "ok": false,
      "outcome": "reject",
      "code": "STALE_TOKEN",
      "token": 33,
      "markBefore": 34,
      "markAfter": 34
    }
  ],
  "calls": 3,
  "data": {
    "a": "100",
    "b": "16",
    "order": "shipped-2"
  },
  "mark": 34,
  "fence": {
    "state": "{\"v\":1,\"mark\":\"34\"}",
    "value": null
  },
  "thrown": {
    "error": {
      "code": "CALLBACK_FAILED",
      "message": "the statements of the fenced transaction on \"orders/42\" failed, so it was rolled back (the mark and your data are as before): insufficient funds",
      "causeIsBody": true,
      "verdict": {
        "key": "orders/42",
        "ok": true,
        "outcome": "advance",
        "code": null,
        "token": 35,
        "markBefore": 34,
        "markAfter": 35
      }
    }
  },
  "afterThrown": {
    "order": "shipped-2",
    "mark": 34
  },
  "first": {
    "key": "orders/43",
    "ok": true,
    "outcome": "advance",
    "code": null,
    "token": 7,
    "markBefore": 0,
    "markAfter": 7,
    "result": 1
  },
  "again": {
    "key": "orders/43",
    "ok": true,
    "outcome": "duplicate",
    "code": null,
    "original": "advance",
    "token": 7,
    "markBefore": 7,
    "markAfter": 7
  },
  "dupCalls": 1,
  "afterDup": {
    "a": "100",
    "b": "18"
  },
  "ownCheck": {
    "key": "orders/42",
    "ok": true,
    "outcome": "advance",
    "code": null,
    "token": 35,
    "markBefore": 34,
    "markAfter": 35,
    "result": 2
  },
  "ownCheckTries": 2,
  "afterOwnCheck": "moved by someone+checked",
  "neverHolds": {
    "error": {
      "code": "COMMIT_CONFLICT",
      "message": "the host transaction on \"orders/42\" conflicted 3 times (DenoKvStore: a check of the atomic operation failed (the fence entry or an entry you checked changed): nothing was written); nothing was written by this call"
    }
  },
  "neverHoldsTries": 3,
  "afterNever": {
    "order": "moved by someone+checked",
    "mark": 35
  },
  "commitInBody": {
    "error": {
      "code": "CALLBACK_FAILED",
      "message": "the statements of the fenced transaction on \"orders/42\" failed, so it was rolled back (the mark and your data are as before): DenoKvStore: gate.transaction commits the atomic operation itself, after your body",
      "verdict": {
        "key": "orders/42",
        "ok": true,
        "outcome": "advance",
        "code": null,
        "token": 36,
        "markBefore": 35,
        "markAfter": 36
      }
    }
  },
  "fenceKeyInBody": {
    "error": {
      "code": "CALLBACK_FAILED",
      "message": "the statements of the fenced transaction on \"orders/42\" failed, so it was rolled back (the mark and your data are as before): DenoKvStore: a mutation of the caller under the fence prefix (the fence entries belong to fencegate)",
      "verdict": {
        "key": "orders/42",
        "ok": true,
        "outcome": "advance",
        "code": null,
        "token": 36,
        "markBefore": 35,
        "markAfter": 36
      }
    }
  },
  "notAFunction": {
    "error": {
      "code": "INVALID_ARGUMENT",
      "message": "transaction: the statements must be a function (tx) => …, got an array"
    }
  },
  "afterMisuse": 35,
  "fenceIn": {
    "v": {
      "key": "orders/44",
      "ok": true,
      "outcome": "advance",
      "code": null,
      "token": 9,
      "markBefore": 0,
      "markAfter": 9
    },
    "ok": true
  },
  "fenceInStale": {
    "error": {
      "code": "STALE_TOKEN",
      "message": "fenceIn \"orders/44\": token 8 is below the mark 9; the surrounding transaction must not commit (throwing rolls it back)",
      "verdict": {
        "key": "orders/44",
        "ok": false,
        "outcome": "reject",
        "code": "STALE_TOKEN",
        "token": 8,
        "markBefore": 9,
        "markAfter": 9
      }
    }
  },
  "caughtAndCommitted": {
    "code": "STALE_TOKEN",
    "ok": false
  },
  "fenceInOnce": {
    "v": {
      "key": "orders/44",
      "ok": true,
      "outcome": "advance",
      "code": null,
      "token": 10,
      "markBefore": 9,
      "markAfter": 10
    },
    "ok": true
  },
  "fenceInTwice": {
    "error": {
      "code": "DUPLICATE_OPERATION",
      "message": "fenceIn \"orders/44\": operation id already applied in epoch 10; the surrounding transaction must not commit (throwing rolls it back)",
      "verdict": {
        "key": "orders/44",
        "ok": true,
        "outcome": "duplicate",
        "code": null,
        "original": "advance",
        "token": 10,
        "markBefore": 10,
        "markAfter": 10
      }
    }
  },
  "raced": [
    true,
    false
  ],
  "fenceInKv": {
    "error": {
      "code": "INVALID_ARGUMENT",
      "message": "DenoKvStore.fenceIn: the handle must be an AtomicOperation (kv.atomic()) that you commit after it"
    }
  },
  "after44": {
    "order": "a",
    "mark": 11
  }
};
