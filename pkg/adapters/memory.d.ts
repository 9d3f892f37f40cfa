/**
 * fencegate/memory — the in-memory host store (compare-and-set shape) for one
 * process: the default store of `new Issuer()`. The same class as the main
 * entry's `MemoryHostStore`.
 */
export { MemoryHostStore } from 'fencegate';
