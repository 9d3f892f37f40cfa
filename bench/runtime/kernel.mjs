// The measuring loop shared by bench/runtime-stores.mjs in workerd, Chromium
// and Deno: sequential fenced writes through a Gate over the adapter, against
// raw unfenced writes of the same value to the same storage entry.
export async function measure(label, n, fn) {
  for (let i = 0; i < Math.min(100, n); i++) await fn(i); // warm-up
  const t0 = performance.now();
  for (let i = 0; i < n; i++) await fn(i);
  const s = (performance.now() - t0) / 1000;
  return { label, n, perSecond: Math.round(n / s), usPerOp: +((s / n) * 1e6).toFixed(1) };
}

/** `[fenced, raw]` for one adapter: `gate` over it, `rawWrite(i)` writes `value` unfenced. */
export async function pair(gate, rawWrite, n) {
  const value = { status: 'paid', total: 42 };
  let t = 1;
  await gate.write('bench', t, value);
  const fenced = await measure('fenced (Gate over the adapter)', n, () => gate.write('bench', ++t, value));
  const raw = await measure('raw (same entry, no fence)', n, (i) => rawWrite(i, value));
  return [fenced, raw];
}
