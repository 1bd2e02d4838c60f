// Filled in by the Redis adapter work (issue 4).
export {};
