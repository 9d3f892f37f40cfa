/**
 * The brand every FencegateError carries, a registered symbol: the same in
 * every copy of this file (the ESM bundle, the CommonJS bundle, an unbundled
 * import, another version of the package), so `instanceof` holds across them.
 */
const BRAND = Symbol.for('fencegate.FencegateError');

/**
 * The one error class fencegate throws. `code` is a stable string (see the
 * README's error table); other fields (token, mark, key, cause…) depend on the code.
 *
 * `err instanceof FencegateError` is true for an error from any copy of the
 * class in the process: a program that both imports and requires the package
 * (two module systems, two copies of the class) sees one error type. It tests
 * the brand, not the prototype chain (`Symbol.hasInstance`).
 */
export class FencegateError extends Error {
  constructor(code, message, details) {
    super(message);
    this.name = 'FencegateError';
    this.code = code;
    if (details) {
      for (const k of Object.keys(details)) {
        if (k !== 'name' && k !== 'code' && k !== 'message') this[k] = details[k];
      }
    }
  }

  static [Symbol.hasInstance](value) {
    return typeof value === 'object' && value !== null && value[BRAND] === true;
  }
}
Object.defineProperty(FencegateError.prototype, BRAND, { value: true });

/**
 * Whether `e` is a database guard's refusal (fencegate/guard, docs/guard.md):
 * SQLSTATE FG001 (a change to a protected row without the fence for its key)
 * or FG002 (a fence row write the guard refuses) as pg (`code`) and mysql2
 * (`sqlState`) report it, a SQLite trigger's RAISE whose message starts with
 * that SQLSTATE, or a FencegateError GUARD_REFUSED (SQLite's fencegate_pass).
 */
export function isGuardRefusal(e) {
  if (e === null || typeof e !== 'object') return false;
  if (e instanceof FencegateError) return e.code === 'GUARD_REFUSED';
  const state = typeof e.sqlState === 'string' ? e.sqlState : e.code;
  if (state === 'FG001' || state === 'FG002') return true;
  return typeof e.code === 'string' && e.code.startsWith('SQLITE_CONSTRAINT') && typeof e.message === 'string' && /^FG00[12] /.test(e.message);
}
