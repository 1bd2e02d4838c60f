/**
 * `leasefence/election`: fenced leader election on the lease API. A term is a grant of the election's key and
 * its token is the fencing token, so a deposed leader's `fencedWrite` and `gateWrite` are refused where they
 * land. Re-exports only; the guide is docs/election.md.
 */
export { createElection, type Demotion, type Election, type ElectionOptions, type Term } from './election.js';
