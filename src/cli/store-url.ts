/**
 * How the CLI names a store in what it prints (errors, titles, JSON): its scheme, host, port and database,
 * never its user info or query (a password may sit in either, `?password=` included). A URL that does not
 * parse is named by its scheme alone, and an unknown scheme is never echoed further than that.
 */

/** The scheme of `url` (lower case, without `:`), or `null` when it does not start with one. */
export function schemeOf(url: string): string | null {
  return /^([a-z][a-z0-9+.-]*):/i.exec(url)?.[1]?.toLowerCase() ?? null;
}

/** The parts of a `scheme://user:password@host:port/database?query` URL, split on the raw text. */
interface UrlParts {
  /** `user:password` (empty when there is no `@`). */
  readonly userInfo: string;
  /** `host:port/database`. */
  readonly location: string;
  /** The text after `?` (empty when none). */
  readonly query: string;
}

/**
 * Splits a hierarchical URL at the LAST `@`: everything before it is user info, whatever characters a
 * password holds (raw `@`, `/`, `?`, `#`), so nothing of a password can reach `location`. (A URL parser
 * ends the user info at the first `/`, and would print the tail of a password with one as the host.)
 */
function splitUrl(url: string, scheme: string): UrlParts | null {
  const prefix = `${scheme}://`;
  if (url.slice(0, prefix.length).toLowerCase() !== prefix) return null;
  const rest = url.slice(prefix.length);
  const at = rest.lastIndexOf('@');
  const afterUser = rest.slice(at + 1);
  const end = afterUser.search(/[?#]/);
  const query = end >= 0 && afterUser[end] === '?' ? (afterUser.slice(end + 1).split('#', 1)[0] ?? '') : '';
  return { userInfo: at < 0 ? '' : rest.slice(0, at), location: end < 0 ? afterUser : afterUser.slice(0, end), query };
}

/** The store schemes the CLI opens with a host (`sqlite:` names a file). */
const NETWORK_SCHEMES: readonly string[] = ['postgres', 'postgresql', 'redis', 'rediss', 'etcd', 'http', 'https'];

/**
 * `postgres://db.example:5432/app`, `redis://cache:6379/2`, `sqlite:/var/lib/app/leases.db`: what may be
 * printed of `url`. Any other scheme is printed alone (`mysql:`).
 */
export function describeStoreUrl(url: string): string {
  const scheme = schemeOf(url);
  if (scheme === null) return '(not a URL)';
  if (scheme === 'sqlite') return `sqlite:${sqlitePathOf(url)}`;
  const parts = NETWORK_SCHEMES.includes(scheme) ? splitUrl(url, scheme) : null;
  if (parts === null) return `${scheme}:`;
  return `${scheme}://${decodeURIComponentSafe(parts.location.replace(/\/$/, ''))}`;
}

/** The file path of a `sqlite:` store URL (`sqlite:/abs/file.db`, `sqlite:relative.db`, `sqlite:///abs/file.db`). */
export function sqlitePathOf(url: string): string {
  const rest = url.slice('sqlite:'.length);
  // NOTE: `sqlite://` followed by a path is the URL spelling of the same file (`sqlite:///tmp/x.db` is /tmp/x.db).
  return rest.startsWith('//') ? rest.slice(2) : rest;
}

const decodeURIComponentSafe = (text: string): string => {
  try {
    return decodeURIComponent(text);
  } catch {
    return text;
  }
};

/**
 * The secrets of `url`: its password (raw and decoded) and the values of query parameters that name one
 * (raw and decoded). A driver's error message may quote them; the CLI masks them in whatever it prints.
 */
export function secretsOf(url: string): string[] {
  const scheme = schemeOf(url);
  const parts = scheme === null ? null : splitUrl(url, scheme);
  if (parts === null) return [];
  const secrets = new Set<string>();
  const colon = parts.userInfo.indexOf(':');
  const password = colon < 0 ? '' : parts.userInfo.slice(colon + 1);
  if (password !== '') secrets.add(password).add(decodeURIComponentSafe(password));
  // NOTE: a raw `/`, `?` or `#` makes drivers end the user info early and take a piece of the password for the
  // host (pg: `getaddrinfo ENOTFOUND <piece>`): mask those pieces too.
  if (/[/?#]/.test(password)) for (const piece of password.split(/[@/?#:]/)) if (piece.length >= 3) secrets.add(piece);
  for (const pair of parts.query.split('&')) {
    const [name = '', value = ''] = pair.split(/=(.*)/s);
    if (/pass|secret|token|key|auth/i.test(decodeURIComponentSafe(name)) && value !== '')
      secrets.add(value).add(decodeURIComponentSafe(value.replaceAll('+', ' ')));
  }
  return [...secrets];
}

/** `text` with every secret of `url` replaced by `***`. */
export function maskSecrets(text: string, url: string | undefined): string {
  if (url === undefined) return text;
  let masked = text;
  // NOTE: longest first, so a secret that contains another is masked whole.
  for (const secret of secretsOf(url).sort((a, b) => b.length - a.length)) masked = masked.replaceAll(secret, '***');
  return masked;
}
