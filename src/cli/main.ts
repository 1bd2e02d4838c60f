/**
 * The `leasefence` command line: list, inspect and revoke leases, inspect and reset token gates, and
 * watch leases live, on a Postgres, Redis or SQLite store. `runCli` takes its arguments and streams so tests can
 * drive it; `bin.ts` runs it on the process.
 */
import { parseArgs } from 'node:util';
import { isLeaseError, isStoreFailure } from '../errors.js';
import { parsePrintable, printable } from '../printable.js';
import type { GateRecord, GateResetOptions } from '../fence/operations.js';
import { permitKey, permitOf } from '../fence/permits.js';
import { LIST_STATES, type ListState } from '../list.js';
import { createOperator, type ListedLease, type Operator } from '../operator.js';
import { confirm } from './confirm.js';
import { openStore, operatorGateOf, type OpenedStore, type StoreSettings } from './connect.js';
import { CliError, EXIT, type ExitCode } from './exit-codes.js';
import type { CliIo } from './io.js';
import { describeStoreUrl, maskSecrets } from './store-url.js';
import { describeHold, describeKeyState, formatGate, formatInspection, formatLeaseTable, toJson } from './render.js';
import { runWatch } from './watch.js';

export type { CliIo } from './io.js';

export const USAGE = `Usage: leasefence <command> [options]

Commands:
  list                      the leases, as a table (--json for scripts)
  inspect <key>             everything about one lease except its secret
  revoke <key> --reason R   force-release a lease: its holder is fenced at once
       [--require-recovery] [--expected-token N] [--by NAME] [--yes]
  remove <key>              delete a key's record (grant, key state, hold, checkpoint, submissions)
       [--force] [--expected-token N] [--yes]
  set-state <key> name=value ...
                            set key state (name= removes a name); a changed value fences the holder
       [--hold-ms N | --cancel-hold] [--by NAME] [--yes]
  permits <semaphore>       a semaphore's permits (each a lease), how many are live (--json for scripts)
  items add <set> <key...>  add keys as items of a set (a work queue) [--not-before-ms N]
  items remove <set> <key...>
                            take keys out of a set (their records stay); stores with sets only
  gate inspect <resource>   the lease key and highest token that wrote a gated resource
  gate reset <resource>     make the gate forget a resource (to re-key it)
       [--expected-token N] [--yes]
  watch                     a live view of the leases, refreshed every --interval seconds

Options:
  --store URL         postgres://..., redis://..., sqlite:/path/file.db or etcd://host:port,... (default: $LEASEFENCE_STORE)
  --table NAME        Postgres or SQLite lease table (default leasefence_leases)
  --gate-table NAME   Postgres or SQLite token gate table (default leasefence_gates)
  --driver-path DIR   load the driver (pg, ioredis or redis, better-sqlite3, etcd3) from DIR/node_modules
                      (default: the project leasefence is installed in; never the current directory)
  --prefix NS         Redis / etcd key namespace (default leasefence: / leasefence/)
  --key-prefix P      only keys that start with P (list, watch)
  --state S           only leases in state S: live, expired, released, revoked, recovery-required,
                      held-back (repeatable)
  --limit N           show at most N leases (list, watch; default 1000)
  --interval S        watch: seconds between refreshes (default 2)
  --iterations N      watch: stop after N refreshes (default: until Ctrl-C)
  --json              machine-readable output (tokens as decimal strings, times as epoch ms)
  --yes               do not ask for confirmation (required by revoke and gate reset when stdin
                      is not a terminal)
  --help              this text

Keys and resources are printed with the backslash, control and bidi characters escaped (\\\\, \\n, \\u001b);
type them the same way: the CLI reads these escapes back. A key that starts with - goes after --, at the end:
  leasefence inspect --store URL -- -odd:key

Exit codes: 0 ok, 1 unexpected failure, 2 bad usage, 3 not found, 4 refused by the store,
            5 store unavailable (or driver missing), 6 declined at the confirmation.
`;

const OPTIONS = {
  store: { type: 'string' },
  table: { type: 'string' },
  'gate-table': { type: 'string' },
  prefix: { type: 'string' },
  'driver-path': { type: 'string' },
  'key-prefix': { type: 'string' },
  state: { type: 'string', multiple: true },
  limit: { type: 'string' },
  interval: { type: 'string' },
  iterations: { type: 'string' },
  reason: { type: 'string' },
  by: { type: 'string' },
  'expected-token': { type: 'string' },
  'require-recovery': { type: 'boolean' },
  force: { type: 'boolean' },
  'hold-ms': { type: 'string' },
  'cancel-hold': { type: 'boolean' },
  'not-before-ms': { type: 'string' },
  json: { type: 'boolean' },
  yes: { type: 'boolean', short: 'y' },
  help: { type: 'boolean', short: 'h' },
} as const;

type Values = ReturnType<typeof parseArgs<{ options: typeof OPTIONS; allowPositionals: true }>>['values'];

/** Caller text quoted in a message (the whole message is escaped once, by `printable`, when printed). */
const quote = (text: string): string => `"${text}"`;

/**
 * A key, resource or key prefix as typed: the CLI prints them escaped (`printable`), so it reads the same
 * escapes back, and pasting a printed key names that key.
 */
function nameInput(typed: string, what: string): string {
  const text = parsePrintable(typed);
  if (text === null)
    throw new CliError(
      EXIT.usage,
      `${what} ${quote(typed)} has an invalid escape: type keys as the CLI prints them (a backslash itself twice; a control character as n, r, t or uXXXX after one)`,
    );
  return text;
}

/** A positive integer option, or its default. */
function integerOption(values: Values, name: 'limit' | 'iterations', fallback: number): number {
  const text = values[name];
  if (text === undefined) return fallback;
  if (!/^[1-9]\d{0,8}$/.test(text)) throw new CliError(EXIT.usage, `--${name} must be a positive integer, got ${quote(text)}`);
  return Number(text);
}

function statesOption(values: Values): ListState[] | undefined {
  const states = values.state?.flatMap((state) => state.split(','));
  for (const state of states ?? []) {
    if (!LIST_STATES.includes(state as ListState))
      throw new CliError(EXIT.usage, `--state must be one of ${LIST_STATES.join(', ')}, got ${quote(state)}`);
  }
  return states as ListState[] | undefined;
}

/** Up to `limit` leases of the listing. */
async function collect(operator: Operator, values: Values): Promise<ListedLease[]> {
  const limit = integerOption(values, 'limit', 1000);
  const states = statesOption(values);
  const leases: ListedLease[] = [];
  const query = {
    prefix: nameInput(values['key-prefix'] ?? '', '--key-prefix'),
    limit: Math.min(limit, 1000),
    ...(states === undefined ? {} : { states }),
  };
  for await (const lease of operator.listAll(query)) {
    leases.push(lease);
    if (leases.length >= limit) break;
  }
  return leases.sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
}

/** What a gate records, in words (escaped when printed). */
const gateHolds = (found: GateRecord['found']): string => (found === null ? 'no token' : `token ${found.token} of lease ${found.key}`);

/**
 * `gate reset`: on a terminal, asks first and resets only what it showed (the token and key it showed go as
 * `expectedToken` and `expectedKey`, judged atomically with the delete), so a gate written between the question
 * and the answer is refused (exit 4) and kept. `--expected-token N` sets the expectation without asking (with
 * `--yes`) or instead of the one shown.
 */
async function gateReset(operator: Operator, resource: string, values: Values, io: CliIo): Promise<ExitCode> {
  const json = values.json === true;
  const given = values['expected-token'];
  if (given !== undefined && !/^[1-9]\d*$/.test(given))
    throw new CliError(EXIT.usage, `--expected-token must be a positive integer, got ${quote(given)}`);
  let expectation: GateResetOptions | undefined = given === undefined ? undefined : { expectedToken: BigInt(given) };
  if (values.yes !== true) {
    const seen = await operator.gateInspect(resource);
    if (seen.found === null && given === undefined) {
      // NOTE: nothing to confirm; resetting now could only forget a write the operator was never shown.
      io.stdout.write(`${json ? toJson({ ok: true, resource, found: null }) : formatGate(seen, 'forgot')}\n`);
      return EXIT.ok;
    }
    if (
      !(await confirm(
        io,
        `Forget the highest token of ${resource} (${gateHolds(seen.found)})? Any lease's token may then write it. [y/N] `,
      ))
    ) {
      io.stderr.write('not reset\n');
      return EXIT.aborted;
    }
    if (expectation === undefined && seen.found !== null) expectation = { expectedToken: seen.found.token, expectedKey: seen.found.key };
  }
  const outcome = await operator.gateReset(resource, expectation);
  if (json) io.stdout.write(`${toJson(outcome)}\n`);
  if (!outcome.ok) {
    const why = given === undefined ? 'changed since the question' : `does not hold token ${outcome.expected.token}`;
    if (!json) io.stderr.write(`${printable(`not reset: ${resource} ${why} (it now holds ${gateHolds(outcome.found)}); run it again`)}\n`);
    return EXIT.refused;
  }
  if (!json) io.stdout.write(`${formatGate(outcome, 'forgot')}\n`);
  return EXIT.ok;
}

/** A positive integer option given as text (`--expected-token`), or `undefined`. */
function tokenOption(values: Values): bigint | undefined {
  const given = values['expected-token'];
  if (given === undefined) return undefined;
  if (!/^[1-9]\d*$/.test(given)) throw new CliError(EXIT.usage, `--expected-token must be a positive integer, got ${quote(given)}`);
  return BigInt(given);
}

/** Who holds a key, in words, for a confirmation. */
const holdingOf = (grant: { token: bigint; holder: string; runId: string | null; live: boolean } | null): string =>
  grant === null || !grant.live
    ? 'nothing held'
    : `token ${grant.token}, held by ${grant.holder}${grant.runId === null ? '' : `, run ${grant.runId}`}`;

/**
 * `remove`: on a terminal, asks first and removes only what it showed (the token shown goes as
 * `expectedToken`); refused while a grant is live unless `--force` (exit 4).
 */
async function removeKey(operator: Operator, key: string, values: Values, io: CliIo): Promise<ExitCode> {
  const json = values.json === true;
  const force = values.force === true;
  let expectedToken = tokenOption(values);
  if (values.yes !== true) {
    const current = await operator.inspect(key);
    if (!current.exists) {
      io.stderr.write(`not removed: no lease ${printable(key)}\n`);
      return EXIT.notFound;
    }
    const question = `Remove ${key} (${holdingOf(current.grant)})? Its state, checkpoint and submissions are deleted${force ? '; a live holder is told missing' : ''}. [y/N] `;
    if (!(await confirm(io, question))) {
      io.stderr.write('not removed\n');
      return EXIT.aborted;
    }
    expectedToken ??= current.token;
  }
  const outcome = await operator.remove(key, { force, ...(expectedToken === undefined ? {} : { expectedToken }) });
  if (json) io.stdout.write(`${toJson(outcome)}\n`);
  if (!outcome.ok) {
    if (!json) {
      const hint = outcome.reason === 'held' ? ': a grant is live (pass --force to remove it anyway)' : '';
      io.stderr.write(
        `${printable(`not removed: ${key} is ${outcome.reason}${outcome.token === null ? '' : ` (token ${outcome.token})`}${hint}`)}\n`,
      );
    }
    return outcome.reason === 'missing' ? EXIT.notFound : EXIT.refused;
  }
  if (!json) {
    const fenced = outcome.grant?.live === true ? `; ${outcome.grant.holder} (token ${outcome.grant.token}) is told missing` : '';
    io.stdout.write(`${printable(`removed ${key} at token ${outcome.token}${fenced}`)}\n`);
  }
  return EXIT.ok;
}

/** `name=value` arguments of `set-state` (`name=` removes the name), checked before anything is sent. */
function stateValues(pairs: readonly string[], values: Values): Record<string, string | null> {
  if (pairs.length === 0 && values['hold-ms'] === undefined && values['cancel-hold'] !== true)
    throw new CliError(EXIT.usage, 'set-state needs name=value arguments (or --hold-ms / --cancel-hold)', { usage: true });
  const state: Record<string, string | null> = Object.create(null);
  for (const pair of pairs) {
    const at = pair.indexOf('=');
    if (at <= 0) throw new CliError(EXIT.usage, `set-state takes name=value (name= removes it), got ${quote(pair)}`);
    const value = nameInput(pair.slice(at + 1), 'value');
    state[nameInput(pair.slice(0, at), 'name')] = value === '' ? null : value;
  }
  if (values['hold-ms'] !== undefined && values['cancel-hold'] === true)
    throw new CliError(EXIT.usage, 'pass --hold-ms or --cancel-hold, not both');
  if (values['hold-ms'] !== undefined && !/^[1-9]\d{0,11}$/.test(values['hold-ms']))
    throw new CliError(EXIT.usage, `--hold-ms must be a positive integer, got ${quote(values['hold-ms'])}`);
  return state;
}

/** `set-state`: on a terminal, asks first (a changed value fences the holder). */
async function setState(
  operator: Operator,
  key: string,
  state: Record<string, string | null>,
  values: Values,
  io: CliIo,
): Promise<ExitCode> {
  const json = values.json === true;
  const holdMs = values['cancel-hold'] === true ? null : values['hold-ms'] === undefined ? undefined : Number(values['hold-ms']);
  if (values.yes !== true) {
    const current = await operator.inspect(key);
    const pairs = Object.entries(state).map(([name, value]) => `${name}=${value ?? '<absent>'}`);
    if (holdMs !== undefined) pairs.push(holdMs === null ? 'no hold' : `hold ${holdMs} ms`);
    if (
      !(await confirm(io, `Set ${pairs.join(', ')} on ${key} (${holdingOf(current.grant)})? A changed value fences the holder. [y/N] `))
    ) {
      io.stderr.write('not set\n');
      return EXIT.aborted;
    }
  }
  const outcome = await operator.setKeyState(key, state, holdMs === undefined ? {} : { holdMs });
  if (json) io.stdout.write(`${toJson(outcome)}\n`);
  else {
    const changed = outcome.changed.length === 0 ? 'nothing changed' : `changed ${outcome.changed.join(', ')}`;
    const fenced =
      outcome.ended === null ? '' : `; ${outcome.ended.holder} (token ${outcome.ended.token}) is fenced (${outcome.ended.kind})`;
    const hold = outcome.heldUntil === null ? '' : `; ${describeHold(outcome.heldUntil, outcome.now)}`;
    io.stdout.write(`${printable(`${key}: ${changed}; state ${describeKeyState(outcome.state)}${hold}${fenced}`)}\n`);
  }
  return EXIT.ok;
}

/** `items add|remove <set> <key...>`: one call, no confirmation (nothing held is touched). */
async function items(operator: Operator, positionals: readonly string[], values: Values, io: CliIo): Promise<ExitCode> {
  const action = positionals[1];
  if (action !== 'add' && action !== 'remove') throw new CliError(EXIT.usage, `items needs add or remove, got ${quote(action ?? '')}`);
  const set = argument(positionals, 2, 'the set');
  const keys = positionals.slice(3).map((key) => nameInput(key, 'key'));
  if (keys.length === 0) throw new CliError(EXIT.usage, `items ${action} needs at least one key`, { usage: true });
  const delay = values['not-before-ms'];
  if (delay !== undefined && (action === 'remove' || !/^\d{1,12}$/.test(delay)))
    throw new CliError(EXIT.usage, `--not-before-ms takes an integer of ms, with items add only, got ${quote(delay)}`);
  const json = values.json === true;
  if (action === 'remove') {
    const removed = await operator.removeItems(set, keys);
    io.stdout.write(
      json
        ? `${toJson(removed)}\n`
        : `${printable(`removed ${removed.removed.length} of ${keys.length} from ${set}${removed.removed.length === 0 ? '' : `: ${removed.removed.join(', ')}`}`)}\n`,
    );
    return EXIT.ok;
  }
  const added = await operator.addItems(set, keys, delay === undefined ? {} : { notBeforeMs: Number(delay) });
  if (json) io.stdout.write(`${toJson(added)}\n`);
  else if (!added.ok) io.stderr.write(`${printable(`not added: ${added.key} is an item of set ${added.otherSet}; nothing was added`)}\n`);
  else {
    const due = added.dueAt > added.now ? `due at ${new Date(added.dueAt).toISOString()}` : 'due now';
    io.stdout.write(
      `${printable(`added ${added.added.length} of ${keys.length} to ${set} (${due})${added.added.length === 0 ? '' : `: ${added.added.join(', ')}`}`)}\n`,
    );
  }
  return added.ok ? EXIT.ok : EXIT.refused;
}

/** Refuses a confirmation that cannot be asked: on a pipe or file, an answer may be anything (or nothing). */
function requireTerminal(io: CliIo, command: string): void {
  if (io.stdin.isTTY !== true)
    throw new CliError(EXIT.usage, `${command} asks for confirmation and stdin is not a terminal: pass --yes to proceed without asking`);
}

/** The one positional argument a command needs. */
function argument(positionals: readonly string[], at: number, what: string): string {
  const value = positionals[at];
  if (value === undefined || value === '') throw new CliError(EXIT.usage, `missing ${what}`, { usage: true });
  return nameInput(value, what);
}

/** Replaces the open store with a new connection (the old one is closed) and returns it. */
type Reopen = () => Promise<OpenedStore>;

async function runCommand(
  opened: OpenedStore,
  reopen: Reopen,
  positionals: readonly string[],
  values: Values,
  io: CliIo,
): Promise<ExitCode> {
  const json = values.json === true;
  const out = (text: string): void => void io.stdout.write(`${text}\n`);
  const gate = operatorGateOf(opened.gate);
  const operator = createOperator(opened.store, {
    ...(values.by === undefined ? {} : { by: values.by }),
    ...(gate === undefined ? {} : { gate }),
  });
  const command = positionals[0];

  if (command === 'list') {
    const leases = await collect(operator, values);
    out(json ? toJson(leases) : leases.length === 0 ? 'no leases' : formatLeaseTable(leases));
    return EXIT.ok;
  }

  if (command === 'inspect') {
    const inspection = await operator.inspect(argument(positionals, 1, 'the key to inspect'));
    out(json ? toJson(inspection) : inspection.exists ? formatInspection(inspection) : `no lease ${printable(inspection.key)}`);
    return inspection.exists ? EXIT.ok : EXIT.notFound;
  }

  if (command === 'revoke') {
    const key = argument(positionals, 1, 'the key to revoke');
    const reason = values.reason;
    if (reason === undefined) throw new CliError(EXIT.usage, 'revoke needs --reason "why" (shown to the holder and the next claimer)');
    const expected = values['expected-token'];
    if (expected !== undefined && !/^[1-9]\d*$/.test(expected))
      throw new CliError(EXIT.usage, `--expected-token must be a positive integer, got ${quote(expected)}`);
    let confirmed: bigint | undefined;
    if (values.yes !== true) {
      const current = await operator.inspect(key);
      if (!current.exists) {
        io.stderr.write(`not revoked: no lease ${printable(key)}\n`);
        return EXIT.notFound;
      }
      const holder =
        current.grant === null
          ? 'nothing held'
          : `token ${current.grant.token}, held by ${current.grant.holder}${current.grant.runId === null ? '' : `, run ${current.grant.runId}`}`;
      if (!(await confirm(io, `Revoke ${key} (${holder})? The holder is fenced at once. [y/N] `))) {
        io.stderr.write('not revoked\n');
        return EXIT.aborted;
      }
      // NOTE: the revoke acts only on what the operator saw: if the key changed hands since, it is refused (superseded).
      confirmed = current.token;
    }
    const expectedToken = expected === undefined ? confirmed : BigInt(expected);
    const outcome = await operator.revoke(key, {
      reason,
      requireRecovery: values['require-recovery'] === true,
      ...(expectedToken === undefined ? {} : { expectedToken }),
    });
    if (json) out(toJson(outcome));
    if (!outcome.ok) {
      if (!json)
        io.stderr.write(
          `not revoked: ${printable(key)} is ${outcome.reason}${outcome.token === null ? '' : ` (token ${outcome.token})`}\n`,
        );
      return outcome.reason === 'missing' ? EXIT.notFound : EXIT.refused;
    }
    const { revoked } = outcome;
    if (!json) {
      const holder = `${revoked.holder}${revoked.runId === null ? '' : `, run ${revoked.runId}`}`;
      out(
        printable(
          `revoked ${key}: token ${revoked.token} (${holder}) is fenced; token is now ${outcome.token}${outcome.recoveryRequired ? '; the next claim must recover the checkpoint' : ''}`,
        ),
      );
    }
    return EXIT.ok;
  }

  if (command === 'remove') return removeKey(operator, argument(positionals, 1, 'the key to remove'), values, io);

  if (command === 'set-state') {
    const key = argument(positionals, 1, 'the key to set state on');
    return setState(operator, key, stateValues(positionals.slice(2), values), values, io);
  }

  if (command === 'items') return items(operator, positionals, values, io);

  if (command === 'permits') {
    const semaphore = nameInput(argument(positionals, 1, 'the semaphore'), 'the semaphore');
    // NOTE: a semaphore's permits are the keys {name}:permit-<i>, listed in index order (not key order).
    const prefix = permitKey(semaphore, 1).slice(0, -1);
    const permits: ListedLease[] = [];
    for await (const lease of operator.listAll({ prefix, limit: 1000 }))
      if (permitOf(lease.key)?.semaphore === semaphore) permits.push(lease);
    permits.sort((a, b) => (permitOf(a.key)?.index ?? 0) - (permitOf(b.key)?.index ?? 0));
    const live = permits.filter((lease) => lease.state === 'live').length;
    if (json) out(toJson({ semaphore, live, permits }));
    else {
      out(printable(`semaphore ${semaphore}: ${live} live of ${permits.length} permits`));
      if (permits.length > 0) out(formatLeaseTable(permits));
    }
    return EXIT.ok;
  }

  if (command === 'gate') {
    const action = positionals[1];
    if (action !== 'inspect' && action !== 'reset')
      throw new CliError(EXIT.usage, `gate needs inspect or reset, got ${quote(action ?? '')}`);
    const resource = argument(positionals, 2, 'the gated resource');
    if (gate === undefined)
      throw new CliError(
        EXIT.failure,
        `this store's token gate cannot ${action} resources yet (this leasefence version lacks TokenGate.${action})`,
      );
    if (action === 'inspect') {
      const result = await operator.gateInspect(resource);
      out(json ? toJson(result) : formatGate(result, 'holds'));
      return result.found === null ? EXIT.notFound : EXIT.ok;
    }
    return gateReset(operator, resource, values, io);
  }

  if (command === 'watch') {
    const intervalText = values.interval ?? '2';
    const interval = Number(intervalText);
    if (!Number.isFinite(interval) || interval < 0.1 || interval > 3600)
      throw new CliError(EXIT.usage, `--interval must be seconds from 0.1 to 3600, got ${quote(intervalText)}`);
    const iterations = values.iterations === undefined ? Number.POSITIVE_INFINITY : integerOption(values, 'iterations', 1);
    let current = opened;
    const failure = await runWatch({
      frame: () => collect(createOperator(current.store), values),
      reconnect: async () => {
        current = await reopen();
      },
      title: `leasefence watch ${describeStoreUrl(values.store ?? io.env['LEASEFENCE_STORE'] ?? '')}`,
      mask: (text) => maskSecrets(text, values.store ?? io.env['LEASEFENCE_STORE']),
      intervalMs: interval * 1000,
      iterations,
      json,
      io,
    });
    // NOTE: the failure was drawn as the last frame; the exit code says it too (5: store unavailable).
    return failure === null ? EXIT.ok : failureOf(failure).code;
  }

  throw new CliError(EXIT.usage, `unknown command ${quote(command ?? '')}`, { usage: true });
}

/** The exit code and one-line message of a failure (not yet escaped), and whether the usage follows it. */
function failureOf(error: unknown): { code: ExitCode; message: string; usage?: boolean } {
  if (error instanceof CliError) return { code: error.code, message: error.message, usage: error.usage };
  if (isLeaseError(error, 'INVALID_ARGUMENT') || isLeaseError(error, 'UNSUPPORTED_OPERATION'))
    return { code: EXIT.usage, message: error.message };
  if (isStoreFailure(error)) return { code: EXIT.unavailable, message: error.message };
  const message = error instanceof Error ? error.message : String(error);
  return { code: EXIT.failure, message: `unexpected failure: ${message}` };
}

/** `text` without the secrets of any store URL in `argv` or `LEASEFENCE_STORE`. */
function maskAll(text: string, argv: readonly string[], io: CliIo): string {
  const urls = [...argv.map((arg) => arg.replace(/^--[a-z-]+=/, '')), io.env['LEASEFENCE_STORE'] ?? ''].filter((arg) =>
    /^[a-z][a-z0-9+.-]*:\/\//i.test(arg),
  );
  return urls.reduce((masked, url) => maskSecrets(masked, url), text);
}

/**
 * Runs the CLI on `argv` (without node and the script) and returns its exit code. `connect` opens the store
 * (tests hand in a store of their own: the commands' logic without a server). @internal
 */
export async function runCli(
  argv: readonly string[],
  io: CliIo,
  connect: (settings: StoreSettings) => Promise<OpenedStore> = openStore,
): Promise<ExitCode> {
  let opened: OpenedStore | null = null;
  try {
    let parsed;
    try {
      parsed = parseArgs({ args: [...argv], options: OPTIONS, allowPositionals: true, strict: true });
    } catch (error) {
      throw new CliError(EXIT.usage, error instanceof Error ? error.message : String(error), { usage: true });
    }
    const { values, positionals } = parsed;
    if (values.help === true || positionals.length === 0) {
      io.stdout.write(USAGE);
      return positionals.length === 0 && values.help !== true ? EXIT.usage : EXIT.ok;
    }
    // NOTE: before connecting: a confirmation that cannot be asked is bad usage, and nothing is sent.
    const first = positionals[0];
    const destructive =
      first === 'revoke' || first === 'remove' || first === 'set-state'
        ? first
        : first === 'gate' && positionals[1] === 'reset'
          ? 'gate reset'
          : null;
    // NOTE: set-state's values are checked before connecting too: nothing is sent for a typo.
    if (first === 'set-state') stateValues(positionals.slice(2), values);
    if (destructive !== null && values.yes !== true) requireTerminal(io, destructive);
    const url = values.store ?? io.env['LEASEFENCE_STORE'];
    if (url === undefined || url === '')
      throw new CliError(
        EXIT.usage,
        'no store: pass --store postgres://..., redis://..., sqlite:/path/file.db or etcd://host:port, or set LEASEFENCE_STORE',
      );
    const settings: StoreSettings = {
      url,
      ...(values.table === undefined ? {} : { table: values.table }),
      ...(values['gate-table'] === undefined ? {} : { gateTable: values['gate-table'] }),
      ...(values.prefix === undefined ? {} : { prefix: values.prefix }),
      ...(values['driver-path'] === undefined ? {} : { driverPath: values['driver-path'] }),
    };
    opened = await connect(settings);
    const reopen: Reopen = async () => {
      const previous = opened;
      opened = null;
      await previous?.close().catch(() => undefined);
      opened = await connect(settings);
      return opened;
    };
    return await runCommand(opened, reopen, positionals, values, io);
  } catch (error) {
    const { code, message, usage = false } = failureOf(error);
    // NOTE: messages quote caller text (a command, a key, an option, a driver's error): one escaped line, always,
    // without the secrets of any store URL it was given (a driver may quote them, or a URL passed as a command).
    io.stderr.write(`leasefence: ${printable(maskAll(message, argv, io))}\n${usage ? `\n${USAGE}` : ''}`);
    return code;
  } finally {
    await opened?.close().catch(() => undefined);
  }
}
