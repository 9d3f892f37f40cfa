
/** Moves the empty slot `slot` from the master `from` to the master `to` (both `{ host, port }`): IMPORTING, MIGRATING, then NODE on every master. */
async function moveSlot(Redis, slot, from, to) {
  const all = nodes().map((n) => new Redis({ ...n, maxRetriesPerRequest: 2 }));
  try {
    const id = async (n) => all[nodes().findIndex((x) => x.port === n.port)].cluster('MYID');
    const [fromId, toId] = [await id(from), await id(to)];
    const at = (n) => all[nodes().findIndex((x) => x.port === n.port)];
    await at(to).cluster('SETSLOT', slot, 'IMPORTING', fromId);
    await at(from).cluster('SETSLOT', slot, 'MIGRATING', toId);
    assert.equal(await at(from).cluster('COUNTKEYSINSLOT', slot), 0);
    await at(to).cluster('SETSLOT', slot, 'NODE', toId);
    for (const c of all) if (c !== at(to)) await c.cluster('SETSLOT', slot, 'NODE', toId);
  } finally {
    for (const c of all) c.disconnect();
  }
}

test('Redis Cluster: a slot moved to another master after the client read the slot map: MOVED followed, the transaction lands on the new owner', { skip }, async () => {
  const { default: Redis } = await import('ioredis');
  const c = await cluster(); // slot map read now
  const p = `fg-cl-move-${process.pid}:`;
  const store = new RedisStore(c, { prefix: p });
  const gate = new Gate(store);
  const tag = `{move-${process.pid}}`;
  const slot = hashSlot(tag);
  const owner = await ownerOf(c, tag);
  const from = nodes().find((n) => `${n.host}:${n.port}` === owner);
  const to = nodes().find((n) => n !== from);
  await moveSlot(Redis, slot, from, to);
  const direct = new Redis({ ...to, maxRetriesPerRequest: 2 });
  try {
    // c still maps the slot to `from`: it gets MOVED and follows
    assert.deepEqual(await gate.transaction(tag, 2, [['SET', `${tag}:v`, 'moved']]), {
      key: tag, ok: true, outcome: 'advance', code: null, token: 2, markBefore: 0, markAfter: 2, result: ['OK'],
    });
    assert.equal(await direct.get(`${tag}:v`), 'moved');
    assert.equal(await direct.hget(store.redisKey(tag), 'version'), '1');
    assert.equal((await gate.transaction(tag, 1, [['SET', `${tag}:v`, 'stale']])).code, 'STALE_TOKEN');
    assert.equal(await direct.get(`${tag}:v`), 'moved');
  } finally {
    await direct.del(`${tag}:v`, store.redisKey(tag));
    direct.disconnect();
    c.disconnect();
    await moveSlot(Redis, slot, to, from); // back, empty again
  }
});
