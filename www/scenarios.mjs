// The guided scenarios: one action and one sentence per step. `d` is the demo's
// action API (the same functions the manual controls call).

const R = 'orders/42';

export const SCENARIOS = {
  seed: {
    title: "The seed's quick verification",
    steps: [
      { run: (d) => d.acquire('A'), say: "A acquires the lease and gets epoch 1: it plays the seed's old leader." },
      { run: (d) => d.pass(10_000), say: "Ten seconds pass and A's lease runs out at 10 s, but A is only slow, not stopped." },
      { run: (d) => d.acquire('B'), say: 'B acquires the lease and gets epoch 2; issuing epoch 2 tells no resource about it.' },
      {
        run: (d) => d.write('A', R, 'arrived-before-new-epoch'),
        say: 'A writes with epoch 1 and it lands, because orders/42 has not seen epoch 2 yet: fencing is not instant revocation.',
      },
      { run: (d) => d.write('B', R, 'from-new-leader'), say: "B writes with epoch 2: the mark advances to 2 and B's value is stored." },
      {
        run: (d) => d.write('A', R, 'must-not-land'),
        say: 'A writes with epoch 1 again and is rejected as STALE_TOKEN; neither the mark nor the value changes.',
      },
      {
        run: (d) => d.write('B', R, 'second-write-in-same-epoch'),
        say: 'B writes again with the same epoch 2 and is accepted: one owner may write many times per epoch.',
      },
      { run: (d) => d.forge('missing', R), say: 'A request with no token is rejected as MISSING_TOKEN: a missing token never skips the check.' },
      {
        run: (d) => d.forge('text', R),
        say: 'The text "2" is not a token and is rejected as MALFORMED_TOKEN; text from a header must go through parseToken first.',
      },
      { run: (d) => d.forge('bool', R), say: 'The boolean true is not a token either: MALFORMED_TOKEN, and nothing changes.' },
      { run: (d) => d.pass(10_000), say: "Ten more seconds pass and B's lease runs out at 21 s." },
      { run: (d) => d.acquire('C'), say: 'C acquires the lease and gets epoch 3.' },
      { run: (d) => d.write('C', R, 'newest'), say: 'C writes with epoch 3: the mark advances to 3.' },
      {
        run: (d) => d.write('B', R, 'must-not-land'),
        say: 'Now epoch 2 is stale too: B is rejected and orders/42 keeps mark 3 and "newest", as in the seed\'s PASS line.',
      },
    ],
  },
  paused: {
    title: 'The paused leader',
    steps: [
      { run: (d) => d.acquire('A'), say: 'A acquires the lease and gets epoch 1, valid until 10 s.' },
      { run: (d) => d.write('A', R, 'A: draft 1'), say: 'A writes with epoch 1: orders/42 advances its mark from 0 to 1.' },
      {
        run: (d) => d.write('A', R, 'A: draft 2', 15_000),
        say: 'A sends another write, but the network holds it for 15 s: it is in flight with epoch 1.',
      },
      { run: (d) => d.pause('A'), say: 'A stops for a long garbage-collection pause; it still believes it holds the lease.' },
      { run: (d) => d.pass(10_000), say: "Ten seconds pass: A's lease ran out at 10 s, while A was paused and could not notice." },
      { run: (d) => d.acquire('B'), say: 'B acquires the lease and gets epoch 2, valid until 23 s.' },
      {
        run: (d) => d.establish('B', R),
        say: 'Before working, B establishes epoch 2 on orders/42: the mark rises to 2 with no data change, which fences out epoch 1.',
      },
      {
        run: (d) => d.pass(3_000),
        say: "A's delayed write arrives at 17 s and bounces with STALE_TOKEN; without B's establish it would have landed.",
      },
      { run: (d) => d.write('B', R, 'B: final'), say: "B writes with epoch 2: accepted, since B's own epoch equals the mark." },
      { run: (d) => d.resume('A'), say: 'A wakes up from its pause and still believes it holds epoch 1.' },
      {
        run: (d) => d.write('A', R, 'A: zombie write'),
        say: "A's zombie write with epoch 1 is rejected as STALE_TOKEN: orders/42 keeps mark 2 and B's value.",
      },
      {
        run: (d) => d.acquire('A'),
        say: "A cannot simply take a newer number: the issuer answers LEASE_HELD while B's lease is live.",
      },
    ],
  },
  restore: {
    title: 'The issuer restored from an old backup',
    needs: 'recovery',
    steps: [
      { run: (d) => d.acquire('A'), say: 'A acquires the lease and gets epoch 1.' },
      { run: (d) => d.backup(), say: "An operator backs up the issuer's storage: it records that epoch 1 was the last one issued." },
      { run: (d) => d.write('A', R, 'A: v1'), say: 'A writes with epoch 1: orders/42 advances to mark 1.' },
      { run: (d) => d.pass(10_000), say: "Ten seconds pass and A's lease runs out." },
      { run: (d) => d.acquire('B'), say: 'B acquires the lease and gets epoch 2.' },
      { run: (d) => d.establish('B', R), say: 'B establishes epoch 2 on orders/42 before working: mark 2.' },
      { run: (d) => d.write('B', R, 'B: v2'), say: 'B writes with epoch 2 and is accepted.' },
      { run: (d) => d.pass(10_000), say: "Ten seconds pass and B's lease runs out." },
      {
        run: (d) => d.restore(),
        say: "The issuer's storage is lost and restored from the old backup: it now says epoch 1, below the mark 2 that orders/42 has accepted, which gives the restore away.",
      },
      {
        run: (d) => d.repair(),
        say: 'The repair raises the issuer to the highest mark its resources accepted, 2; without it the next owner would get epoch 2 again, which B already used.',
      },
      { run: (d) => d.acquire('C'), say: 'C acquires the lease and gets epoch 3: no epoch is issued twice.' },
      { run: (d) => d.write('C', R, 'C: v3'), say: 'C writes with epoch 3: orders/42 advances to mark 3.' },
    ],
  },
  signed: {
    title: 'Forged tokens against signed tokens',
    needs: 'signed',
    steps: [
      {
        run: (d) => d.requireSigned(true),
        say: "The resources now require tokens signed with the issuer's key: a plain number is no longer enough.",
      },
      { run: (d) => d.acquire('A'), say: 'A acquires the lease and gets epoch 1, with a token for each resource signed by the issuer.' },
      { run: (d) => d.write('A', R, 'A: v1'), say: "A writes with its signed token for orders/42: the signature verifies and the mark advances to 1." },
      {
        run: (d) => d.forge('huge', R),
        say: 'A forged plain 18446744073709551615 is refused as UNSIGNED_TOKEN, so it cannot raise the mark and lock every owner out.',
      },
      {
        run: (d) => d.forge('guessed', R),
        say: 'A forged token claiming epoch 2^63, signed with a guessed key, fails its signature check: BAD_SIGNATURE.',
      },
      {
        run: (d) => d.forge('replay', R),
        say: "A's genuine token for invoices/9, replayed at orders/42, is refused as WRONG_SCOPE: a token is valid only where it was minted for.",
      },
      { run: (d) => d.write('A', R, 'A: v2'), say: 'A, the real owner, writes again with the same signed token and is accepted.' },
    ],
  },
};
