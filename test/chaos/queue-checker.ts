/**
 * The checker of the queue workload (claim-next + idempotent submissions, test/chaos/queue.ts): reads the
 * run's history (every grant, every submission attempt with the store's true answer, even when the worker
 * never got it, every release and item removal) and the final ledgers, and lists every violation of:
 *
 * - exactly once: a submitted run's ledger entry is in the store once (its replays wrote nothing), a run any
 *   worker was told landed (`applied` or `replayed`) is in the store, and a re-send of the same payload (keys in
 *   another order) is never `replay-conflict` unless the run was recorded abandoned by the next holder;
 * - no stale submission: every write the store applied ran under the key's current grant at the store's clock
 *   (granted at or before, not expired, released or superseded by then), and every ledger entry is such a write;
 * - one live holder: each item's grants, in token order, do not overlap on the store's clock;
 * - no item lost: each item is finalized (a landed submission), or still in the set; (queue mode) an item is
 *   finalized once, and taken out of the set only after its submission landed (a record-first holder's record of
 *   the abandoned run, under that run's id, is not a finalization).
 *
 * All times are the store's (`now` of its answers), never the harness's.
 */

/** A grant a worker got (claim-next, or claim in the submit-only mode). */
export interface QueueGrant {
  readonly key: string;
  readonly token: string;
  readonly runId: string;
  readonly at: number;
  /** `null`: the grant never expires (the workload always sets a TTL). */
  readonly expiresAt: number | null;
}

/** What the store answered a submission attempt (`lost`: the harness dropped the reply after the store applied it). */
export interface QueueSubmitAttempt {
  readonly key: string;
  readonly token: string;
  readonly runId: string;
  /**
   * `applied`, `replayed`, a refusal reason, `not-sent` (the harness dropped the request before the store) or
   * `error` (the driver threw: the store may or may not have applied it).
   */
  readonly answer: string;
  /** The store's now of the answer (`null` for `not-sent`). */
  readonly now: number | null;
  /** For `replayed`: the token the stored submission was recorded under. */
  readonly recordedToken?: string;
  /** Whether the worker got the answer (false: the reply was lost on the way back). */
  readonly delivered: boolean;
}

/** A release that the store applied (ends the grant at `now`). */
export interface QueueRelease {
  readonly key: string;
  readonly token: string;
  readonly now: number;
}

/** An item a worker took out of the set, and why. */
export interface QueueRemoval {
  readonly key: string;
  readonly runId: string;
}

export interface QueueHistory {
  /** `queue`: claim-next over a set; `submit-only`: claim of known keys (a store without claim-next). */
  readonly mode: 'queue' | 'submit-only';
  readonly items: readonly string[];
  readonly grants: readonly QueueGrant[];
  readonly attempts: readonly QueueSubmitAttempt[];
  readonly releases: readonly QueueRelease[];
  readonly removals: readonly QueueRemoval[];
  /** Each item's ledger as stored, in apply order: the run id and token of each entry. */
  readonly ledgers: ReadonlyMap<string, ReadonlyArray<{ readonly runId: string; readonly token: string }>>;
  /**
   * Runs whose ledger entry is a record-first holder's record of the abandoned run (under that run's id, by the
   * next holder), not a finalization of the item.
   */
  readonly abandonRecords?: ReadonlySet<string>;
  /**
   * (queue mode) unfinalized items still in the set at the end: blocked for recovery (a record-first holder's record
   * of the abandoned run never landed), whatever abandon records their ledger holds; the drain takes out the rest.
   */
  readonly stillQueued: ReadonlySet<string>;
}

export interface QueueViolation {
  readonly rule: 'exactly-once' | 'stale-submission' | 'overlapping-grants' | 'item-lost' | 'finalized-twice';
  readonly key: string;
  readonly detail: string;
  /** (item-lost, finalized-twice) The item's history, one line per event, so a timing-dependent run explains itself. */
  readonly story?: readonly string[];
}

export interface QueueFigures {
  readonly items: number;
  readonly grants: number;
  /** Grants that ended without a release (the worker crashed, paused past its TTL, or lost the race). */
  readonly unreleased: number;
  readonly submissions: number;
  readonly applied: number;
  readonly replayed: number;
  readonly refused: number;
  readonly lostReplies: number;
  /** Submissions answered `replay-conflict` (a worker back after its run was recorded abandoned). */
  readonly conflicts: number;
  /** Abandoned runs a record-first holder recorded. */
  readonly abandonedRecorded: number;
  readonly finalized: number;
  readonly pending: number;
}

const groupBy = <T>(list: readonly T[], keyOf: (item: T) => string): Map<string, T[]> => {
  const groups = new Map<string, T[]>();
  for (const item of list) {
    const group = groups.get(keyOf(item)) ?? [];
    group.push(item);
    groups.set(keyOf(item), group);
  }
  return groups;
};

/** Checks `history`; returns the violations (empty: the run kept every guarantee). */
export function checkQueue(history: QueueHistory): QueueViolation[] {
  const violations: QueueViolation[] = [];
  const grantsByKey = groupBy(history.grants, (grant) => grant.key);
  const releaseOf = new Map(history.releases.map((release) => [`${release.key}#${release.token}`, release.now]));
  const endOf = (grant: QueueGrant): number => {
    const released = releaseOf.get(`${grant.key}#${grant.token}`);
    const expires = grant.expiresAt ?? Number.POSITIVE_INFINITY;
    return released === undefined ? expires : Math.min(released, expires);
  };

  // One live holder: in token order, each grant starts at or after the previous one ended.
  for (const [key, grants] of grantsByKey) {
    const ordered = [...grants].sort((a, b) => (BigInt(a.token) < BigInt(b.token) ? -1 : 1));
    for (let i = 1; i < ordered.length; i += 1) {
      const before = ordered[i - 1] as QueueGrant;
      const after = ordered[i] as QueueGrant;
      if (before.token === after.token)
        violations.push({
          rule: 'overlapping-grants',
          key,
          detail: `token ${after.token} granted twice (${before.runId}, ${after.runId})`,
        });
      else if (after.at < endOf(before))
        violations.push({
          rule: 'overlapping-grants',
          key,
          detail: `token ${after.token} (${after.runId}) granted at ${after.at}, while token ${before.token} (${before.runId}) was live until ${endOf(before)}`,
        });
    }
  }

  // No stale submission: each applied write ran under the current grant at the store's now.
  const applied = history.attempts.filter((attempt) => attempt.answer === 'applied');
  for (const write of applied) {
    const grants = grantsByKey.get(write.key) ?? [];
    const own = grants.find((grant) => grant.token === write.token);
    const now = write.now ?? Number.NaN;
    if (own === undefined) {
      violations.push({
        rule: 'stale-submission',
        key: write.key,
        detail: `run ${write.runId} applied under token ${write.token}, never granted`,
      });
      continue;
    }
    // NOTE: expiry is strict (at expiresAt the grant is expired); a release in the same ms came after the write.
    const released = releaseOf.get(`${own.key}#${own.token}`);
    if (!(own.at <= now && now < (own.expiresAt ?? Number.POSITIVE_INFINITY) && (released === undefined || now <= released)))
      violations.push({
        rule: 'stale-submission',
        key: write.key,
        detail: `run ${write.runId} applied at ${now} under token ${write.token}, live only from ${own.at} until ${endOf(own)}`,
      });
    // NOTE: the store clocks tick in ms: a newer grant in the same ms as the write came after it (the release between).
    const newer = grants.find((grant) => BigInt(grant.token) > BigInt(write.token) && grant.at < now);
    if (newer !== undefined)
      violations.push({
        rule: 'stale-submission',
        key: write.key,
        detail: `run ${write.runId} applied at ${now} under token ${write.token}, superseded by token ${newer.token} at ${newer.at}`,
      });
  }

  // Exactly once, and every ledger entry is an applied write of its run under its token.
  const appliedByRun = groupBy(applied, (attempt) => attempt.runId);
  const landed = new Set<string>();
  for (const key of history.items) {
    const ledger = history.ledgers.get(key) ?? [];
    for (const [runId, entries] of groupBy(ledger, (entry) => entry.runId)) {
      landed.add(runId);
      if (entries.length > 1)
        violations.push({
          rule: 'exactly-once',
          key,
          detail: `run ${runId} is in the ledger ${entries.length} times (its replays wrote again)`,
        });
      const writes = appliedByRun.get(runId) ?? [];
      if (writes.length > 1) violations.push({ rule: 'exactly-once', key, detail: `run ${runId} was applied ${writes.length} times` });
      // NOTE: a driver error (a connection cut mid-request) leaves the outcome unknown: the entry may be that write.
      const unknown = history.attempts.some((attempt) => attempt.runId === runId && attempt.answer === 'error');
      for (const entry of entries)
        if (!writes.some((write) => write.token === entry.token && write.key === key) && !unknown)
          violations.push({
            rule: 'stale-submission',
            key,
            detail: `run ${runId}'s entry under token ${entry.token} is in the ledger, but the store applied no such write`,
          });
    }
    if (history.mode === 'queue') {
      const runs = new Set(ledger.map((entry) => entry.runId).filter((runId) => !history.abandonRecords?.has(runId)));
      if (runs.size > 1)
        violations.push({
          rule: 'finalized-twice',
          key,
          detail: `finalized by ${runs.size} runs: ${[...runs].join(', ')}`,
          story: itemStory(history, key),
        });
      if (runs.size === 0 && !history.stillQueued.has(key))
        violations.push({ rule: 'item-lost', key, detail: 'never finalized and no longer in the set', story: itemStory(history, key) });
    }
  }
  for (const attempt of history.attempts) {
    if (attempt.answer !== 'applied' && attempt.answer !== 'replayed') continue;
    if (!landed.has(attempt.runId))
      violations.push({
        rule: 'exactly-once',
        key: attempt.key,
        detail: `run ${attempt.runId} was answered ${attempt.answer} but is not in the ledger`,
      });
    if (attempt.answer === 'replayed') {
      const recorded = appliedByRun.get(attempt.runId)?.[0];
      if (recorded !== undefined && attempt.recordedToken !== recorded.token)
        violations.push({
          rule: 'exactly-once',
          key: attempt.key,
          detail: `run ${attempt.runId} replayed as recorded under token ${attempt.recordedToken}, applied under ${recorded.token}`,
        });
    }
  }
  // A worker re-sends its own run with the same payload (keys in any order): only a run recorded abandoned by the
  // next holder may answer it replay-conflict.
  for (const attempt of history.attempts)
    if (attempt.answer === 'replay-conflict' && !history.abandonRecords?.has(attempt.runId))
      violations.push({
        rule: 'exactly-once',
        key: attempt.key,
        detail: `run ${attempt.runId} re-sent with the same payload met replay-conflict`,
      });
  for (const removal of history.removals)
    if (!landed.has(removal.runId))
      violations.push({
        rule: 'item-lost',
        key: removal.key,
        detail: `taken out of the set by run ${removal.runId}, whose submission is not in the ledger`,
        story: itemStory(history, removal.key),
      });
  return violations;
}

/** The run's figures for the summary line. */
export function queueFigures(history: QueueHistory): QueueFigures {
  const answers = (test: (answer: string) => boolean): number => history.attempts.filter((attempt) => test(attempt.answer)).length;
  const finalized = history.items.filter((key) =>
    (history.ledgers.get(key) ?? []).some((entry) => !history.abandonRecords?.has(entry.runId)),
  ).length;
  const released = new Set(history.releases.map((release) => `${release.key}#${release.token}`));
  return {
    items: history.items.length,
    grants: history.grants.length,
    unreleased: history.grants.filter((grant) => !released.has(`${grant.key}#${grant.token}`)).length,
    submissions: new Set(history.attempts.map((attempt) => attempt.runId)).size,
    applied: answers((answer) => answer === 'applied'),
    replayed: answers((answer) => answer === 'replayed'),
    refused: answers((answer) => answer !== 'applied' && answer !== 'replayed' && answer !== 'not-sent'),
    lostReplies: history.attempts.filter((attempt) => !attempt.delivered).length,
    conflicts: answers((answer) => answer === 'replay-conflict'),
    abandonedRecorded: history.abandonRecords?.size ?? 0,
    finalized,
    pending: history.items.length - finalized,
  };
}

/**
 * `key`'s history in token order: each grant (its run, store times, how it ended), the run's submission attempts
 * on the key with the store's answers, then the removals, the final ledger (abandon records marked) and whether
 * the harness found it still queued.
 */
export function itemStory(history: QueueHistory, key: string): string[] {
  const lines: string[] = [];
  const released = new Map(history.releases.filter((release) => release.key === key).map((release) => [release.token, release.now]));
  const grants = history.grants.filter((grant) => grant.key === key).sort((a, b) => (BigInt(a.token) < BigInt(b.token) ? -1 : 1));
  const attempts = history.attempts.filter((attempt) => attempt.key === key);
  const told = (attempt: QueueSubmitAttempt): string =>
    `${attempt.answer}${attempt.recordedToken === undefined ? '' : ` (recorded under ${attempt.recordedToken})`} at ${attempt.now ?? '-'}${attempt.delivered ? '' : ', reply lost'}`;
  for (const grant of grants) {
    const end = released.has(grant.token)
      ? `released at ${released.get(grant.token)}`
      : `unreleased, expires ${grant.expiresAt ?? 'never'}`;
    lines.push(`grant token ${grant.token} to ${grant.runId} at ${grant.at}, ${end}`);
    for (const attempt of attempts.filter((each) => each.token === grant.token))
      lines.push(
        `  submits ${attempt.runId}${history.abandonRecords?.has(attempt.runId) && attempt.runId !== grant.runId ? ' (abandon record)' : ''}: ${told(attempt)}`,
      );
  }
  for (const attempt of attempts.filter((each) => !grants.some((grant) => grant.token === each.token)))
    lines.push(`submits ${attempt.runId} under token ${attempt.token}, never granted: ${told(attempt)}`);
  for (const removal of history.removals.filter((each) => each.key === key))
    lines.push(`taken out of the set, as finalized by ${removal.runId}`);
  const ledger = (history.ledgers.get(key) ?? []).map(
    (entry) => `${entry.runId}@${entry.token}${history.abandonRecords?.has(entry.runId) ? ' (abandon record)' : ''}`,
  );
  lines.push(
    `ledger: ${ledger.length === 0 ? 'empty' : ledger.join(', ')}; ${history.stillQueued.has(key) ? 'still queued' : 'not queued at the end'}`,
  );
  return lines;
}

/** One line per violation, then its item's story, if it has one, indented. */
export function formatQueueViolations(violations: readonly QueueViolation[]): string {
  return violations
    .map((violation) =>
      [`      ${violation.rule} ${violation.key}: ${violation.detail}`, ...(violation.story ?? []).map((line) => `          ${line}`)].join(
        '\n',
      ),
    )
    .join('\n');
}
