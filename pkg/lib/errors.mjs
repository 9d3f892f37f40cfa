/**
 * The one error class fencegate throws. `code` is a stable string (see the
 * README's error table); other fields (token, mark, key, cause…) depend on the code.
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
}
