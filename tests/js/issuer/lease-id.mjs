// The shape of an issuer lease id (issue 20): `<epoch>.<tag><key>`, where tag
// is base64url(SHA-256(scope)[0..6]) (8 characters) and key is 16 random bytes
// as canonical unpadded base64url (22 characters, the last one of A/Q/g/w).
import { createHash } from 'node:crypto';

/** The scope tag of a lease id. */
export function scopeTag(scope) {
  return createHash('sha256').update(scope, 'utf8').digest().subarray(0, 6).toString('base64url');
}

/** A RegExp matching exactly the lease ids of `epoch` in `scope`. */
export function leaseIdOf(epoch, scope) {
  return new RegExp(`^${String(epoch)}\\.${scopeTag(scope).replace(/[-]/g, '\\-')}[A-Za-z0-9_-]{21}[AQgw]$`);
}
