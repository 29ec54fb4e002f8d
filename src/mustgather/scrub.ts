/**
 * Scrubs container logs before must-gather writes them: a support bundle travels (tickets, mail, shared
 * drives), and a log line can carry a credential an operator or a cloud SDK printed. What looks like one
 * is replaced, keeping the text around it so that the line still reads: bearer tokens, JSON Web Tokens
 * (ServiceAccount tokens), AWS access key ids, PEM private keys, and the value of a key=value (or
 * `key: value`, `"key":"value"`) pair whose key names a secret.
 */

export const SCRUBBED = 'REDACTED';

/** Keys whose values are secrets, as they appear in configuration, environment and structured logs. */
const SECRET_KEY =
  '(?:[A-Za-z0-9_.-]*(?:password|passwd|passphrase|secret|token|api[_-]?key|access[_-]?key|private[_-]?key|credentials?)[A-Za-z0-9_.-]*|pwd)' +
  // ...but not a key that only names or locates one (secretName=peer-pods-secret, tokenFile=/var/run/...).
  '(?<![Nn]ame|[Ff]ile|[Pp]ath|[Rr]ef|[Dd]ir)';

const PATTERNS: { name: string; re: RegExp; replace: string | ((...m: string[]) => string) }[] = [
  {
    name: 'private key',
    re: /-----BEGIN ([A-Z0-9 ]*)PRIVATE KEY-----[\s\S]*?(?:-----END \1PRIVATE KEY-----|$)/g,
    replace: (_m, kind) => `-----BEGIN ${kind}PRIVATE KEY----- ${SCRUBBED} -----END ${kind}PRIVATE KEY-----`,
  },
  // Before the key=value rule, so that `Authorization: Bearer x` keeps its scheme.
  { name: 'bearer token', re: /\b(Bearer)(\s+)[A-Za-z0-9._~+/=-]+/gi, replace: `$1$2${SCRUBBED}` },
  { name: 'JSON Web Token', re: /\beyJ[A-Za-z0-9_-]{5,}\.eyJ[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]+/g, replace: SCRUBBED },
  { name: 'AWS access key id', re: /\b(?:AKIA|ASIA|AGPA|AIDA|AROA|ANPA)[A-Z0-9]{16}\b/g, replace: SCRUBBED },
  {
    name: 'quoted secret value',
    re: new RegExp(`("${SECRET_KEY}"\\s*:\\s*)"(?:[^"\\\\]|\\\\.)*"`, 'gi'),
    replace: `$1"${SCRUBBED}"`,
  },
  {
    name: 'secret key=value',
    re: new RegExp(`(\\b${SECRET_KEY}\\s*[=:]\\s*)(?!${SCRUBBED}\\b)(?!Bearer\\s)("[^"]*"|'[^']*'|[^\\s,;&"'}]+)`, 'gi'),
    replace: `$1${SCRUBBED}`,
  },
];

/** The text with every value that looks like a credential replaced by SCRUBBED. */
export function scrubLog(text: string): string {
  let out = text;
  for (const p of PATTERNS) out = out.replace(p.re, p.replace as string);
  return out;
}
