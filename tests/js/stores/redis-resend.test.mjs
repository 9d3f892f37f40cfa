// Issue 16 (found by the history workload, tests/history, seed 2026 on Redis):
// ioredis sends an unanswered command again after a reconnect
// (`autoResendUnfulfilledCommands`, on by default). When the reply to the
// compare-and-set is lost after Redis ran it, and another owner commits before
// the reconnect, the resent compare-and-set finds a newer version and answers
// 0. The store must not report that as a lost compare-and-set (the gate would
// decide again and answer STALE_TOKEN, "nothing changed", for a write that
// landed): a compare-and-set lost across a closed connection is COMMIT_UNKNOWN.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Gate, FencegateError } from '../../../pkg/node.mjs';
import { RedisStore } from '../../../pkg/adapters/redis.mjs';
import { startProxy } from '../../history/proxy.mjs';
import { REQUIRE_SERVICES } from './targets.mjs';

const url = process.env.FENCEGATE_REDIS_URL;

test('a compare-and-set whose reply was lost and that ioredis resent after a newer commit: COMMIT_UNKNOWN, not STALE_TOKEN', { skip: !url && !REQUIRE_SERVICES && 'FENCEGATE_REDIS_URL is not set' }, async () => {
  assert.ok(url, 'FENCEGATE_REDIS_URL');
  const { default: Redis } = await import('ioredis');
  const proxy = await startProxy(Number(new URL(url).port));
  const prefix = `fg-resend-${process.pid}-${Date.now()}:`;
  // A: through the proxy, default resend, reconnects after 300 ms. B: direct.
  const a = new Redis(`redis://127.0.0.1:${proxy.port}`, { retryStrategy: () => 300 });
  a.on('error', () => {});
  const b = new Redis(url);
  try {
    const gateA = new Gate(new RedisStore(a, { prefix }));
    const gateB = new Gate(new RedisStore(b, { prefix }));
    assert.equal((await gateA.establish('k', 5, { holder: 'A' })).outcome, 'advance');

    proxy.arm('cut', { forMs: 10_000, match: /evalsha|eval/i }); // the reply to A's compare-and-set is lost
    const pending = gateA.write('k', 5, 'by A', { opId: 'a1', holder: 'A' }).then(
      (v) => ({ verdict: v }),
      (e) => ({ error: e }),
    );
    for (let i = 0; proxy.counts.cut === 0; i++) {
      assert.ok(i < 200, 'the proxy never cut the compare-and-set');
      await new Promise((r) => setTimeout(r, 10));
    }
    proxy.arm('cut', { forMs: 0 });
    // A's write ran: B sees it, then a new owner (epoch 6) commits before A reconnects.
    assert.deepEqual(await gateB.read('k'), { mark: 5, value: 'by A', hasValue: true });
    const v6 = await gateB.establish('k', 6, { holder: 'B' });
    assert.deepEqual([v6.outcome, v6.markBefore, v6.markAfter], ['advance', 5, 6]);

    const r = await pending;
    assert.equal(r.verdict, undefined, `A was told ${JSON.stringify(r.verdict)} for a write that landed`);
    assert.ok(r.error instanceof FencegateError, String(r.error));
    assert.equal(r.error.code, 'COMMIT_UNKNOWN');
    assert.deepEqual(await gateB.read('k'), { mark: 6, value: 'by A', hasValue: true });
    // A retries with the same op id: the epoch has moved on, so it is refused, and nothing changes.
    const retry = await gateA.write('k', 5, 'by A', { opId: 'a1', holder: 'A' });
    assert.deepEqual([retry.ok, retry.code, retry.markBefore, retry.markAfter], [false, 'STALE_TOKEN', 6, 6]);
  } finally {
    const keys = await b.keys(`${prefix}*`);
    if (keys.length) await b.del(...keys);
    a.disconnect();
    b.disconnect();
    await proxy.close();
  }
});
