/**
 * Scrubs logs before must-gather writes them: a support bundle travels, and a log line can carry a
 * credential. What looks like one is replaced and the text around it kept: bearer tokens, JSON Web Tokens
 * (ServiceAccount tokens), AWS access key ids, PEM private keys, and the value of a key=value or
 * `"key":"value"` pair whose key names a secret.
 */

export const SCRUBBED = 'REDACTED';

const SECRET_KEY = '[A-Za-z0-9_.-]*(?:password|passwd|secret|token|api[_-]?key|access[_-]?key|credentials?)(?<![Nn]ame|[Ff]ile|[Pp]ath)';

const PATTERNS: [RegExp, string | ((...m: string[]) => string)][] = [
  [
    /-----BEGIN ([A-Z0-9 ]*)PRIVATE KEY-----[\s\S]*?(?:-----END \1PRIVATE KEY-----|$)/g,
    (_m, kind) => `-----BEGIN ${kind}PRIVATE KEY----- ${SCRUBBED} -----END ${kind}PRIVATE KEY-----`,
  ],
  [/\b(Bearer)(\s+)[A-Za-z0-9._~+/=-]+/gi, `$1$2${SCRUBBED}`],
  [/\beyJ[A-Za-z0-9_-]{5,}\.eyJ[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]+/g, SCRUBBED],
  [/\b(?:AKIA|ASIA)[A-Z0-9]{16}\b/g, SCRUBBED],
  [new RegExp(`("${SECRET_KEY}"\\s*:\\s*)"(?:[^"\\\\]|\\\\.)*"`, 'gi'), `$1"${SCRUBBED}"`],
  [new RegExp(`(\\b${SECRET_KEY}\\s*[=:]\\s*)(?!${SCRUBBED}\\b)(?!Bearer\\s)("[^"]*"|'[^']*'|[^\\s,;&"'}]+)`, 'gi'), `$1${SCRUBBED}`],
];

/** The text with every value that looks like a credential replaced by SCRUBBED. */
export function scrubLog(text: string): string {
  let out = text;
  for (const [re, replace] of PATTERNS) out = out.replace(re, replace as string);
  return out;
}
