export type * from './types.js';
export type * from './operations.js';
export { checkFence, isLive, expiredEnding } from './verdict.js';
export { claim, renew, checkpoint, release, revoke, recover, inspect, type Transition } from './transitions.js';
export { mintToken } from './token.js';

