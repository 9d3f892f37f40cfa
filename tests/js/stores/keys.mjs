/** A short unique prefix so runs and cases never share keys in a shared server. */
export function uniqueKey(name) {
  const pid = globalThis.process?.pid ?? 0; // workerd and browsers have no pid
  return `${name}-${pid}-${Date.now().toString(36)}-${Math.random().toString(36).slice(2, 8)}`;
}
