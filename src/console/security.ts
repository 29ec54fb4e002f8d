/**
 * The console's guards, as pure functions over a request's method, path and headers (the server applies
 * them; unit tests exercise them). The model is in docs/console.md: a random token per run, a strict
 * same-site cookie, a custom header on every write, a Host check against DNS rebinding, and only the API paths the pages use (never Secrets).
 */
import { timingSafeEqual } from 'node:crypto';
import { consoleApiPath } from './api-allowlist.ts';

/** Cookies are not told apart by port: each console names its own, so that two can run side by side. */
export const cookieName = (port: number) => `osc-console-${port}`;
/** Browsers send a custom header cross-origin only after a CORS preflight, which the console never approves. */
export const CSRF_HEADER = 'x-osc-console';

export type Headers = Record<string, string | string[] | undefined>;

const one = (v: string | string[] | undefined): string | undefined => (Array.isArray(v) ? v[0] : v);

export function cookieValue(header: string | undefined, name: string): string | undefined {
  for (const part of (header ?? '').split(';')) {
    const eq = part.indexOf('=');
    if (eq > 0 && part.slice(0, eq).trim() === name) return part.slice(eq + 1).trim();
  }
  return undefined;
}

export function sameToken(a: string | undefined, b: string): boolean {
  if (!a) return false;
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}

/** The token a request carries: the session cookie or an `Authorization: Bearer` header (scripts). */
export function presentedToken(headers: Headers, cookie: string): string | undefined {
  const auth = one(headers.authorization);
  if (auth?.startsWith('Bearer ')) return auth.slice(7).trim();
  return cookieValue(one(headers.cookie), cookie);
}

/**
 * Whether the Host header names this server: a page on another site whose name resolves to 127.0.0.1
 * (DNS rebinding) sends its own name and is refused before anything else.
 */
export function hostAllowed(host: string | undefined, port: number, boundHost: string): boolean {
  if (!host) return false;
  const names = new Set(['127.0.0.1', 'localhost', '[::1]', boundHost.includes(':') ? `[${boundHost}]` : boundHost]);
  for (const n of names) if (host === `${n}:${port}`) return true;
  return false;
}

const SAFE = new Set(['GET', 'HEAD', 'OPTIONS']);

/**
 * Why a state-changing request is refused as possibly cross-site, or undefined when it may proceed: it
 * must carry the custom header, and if the browser says where it comes from, that must be this origin.
 */
export function csrfRefusal(method: string, headers: Headers, origin: string): string | undefined {
  if (SAFE.has(method)) return undefined;
  if (one(headers[CSRF_HEADER]) !== '1') return `state-changing requests need the ${CSRF_HEADER}: 1 header`;
  const from = one(headers.origin);
  if (from && from !== origin) return `cross-origin request from ${from} refused`;
  const site = one(headers['sec-fetch-site']);
  if (site && site !== 'same-origin' && site !== 'none') return `cross-site request (${site}) refused`;
  return undefined;
}

/**
 * Why an API request is not proxied, or undefined when it is: the path (raw, before percent-decoding, query
 * allowed) must be one the console's pages use, for that method (see api-allowlist.ts).
 */
export function apiPathRefusal(path: string, method = 'GET'): string | undefined {
  return consoleApiPath(method, path.split('?')[0] ?? '').refusal;
}
