// fencegate/memory: the in-memory host store, the same class as the main entry's
// `MemoryHostStore` (one module; the CommonJS copy requires the main bundle).
export { MemoryHostStore } from '../lib/memory.mjs';
