/**
 * osc's own webhook certificate: when to rotate it and which CAs the API server must trust meanwhile.
 * Pure: certificates are read with Node's X509Certificate (no generation library is needed to decide).
 *
 * Each rotation makes a new CA and a serving certificate signed by it, in two steps, so that no admission
 * request meets a certificate the API server does not yet trust (docs/security.md):
 *  1. trust: the new CA joins the CA bundle (ca.crt) next to the old one; the new certificate waits in
 *     next.crt/next.key. The leader writes the bundle into both webhook configurations.
 *  2. serve: once both configurations carry the bundle (and the API server had a moment to load them),
 *     the new certificate becomes tls.crt/tls.key and every replica swaps it in.
 * An old CA stays in the bundle until it expires, which is when the last certificate it signed expires.
 */
import { X509Certificate } from 'node:crypto';

export interface SelfSignedState {
  /** The served certificate and key (PEM). */
  certPem?: string;
  keyPem?: string;
  /** The CAs the API server is told to trust (PEM bundle). */
  caBundlePem?: string;
  /** A certificate waiting for its CA to be trusted everywhere. */
  nextCertPem?: string;
  nextKeyPem?: string;
}

/** Secret keys. */
export const KEYS = { cert: 'tls.crt', key: 'tls.key', ca: 'ca.crt', nextCert: 'next.crt', nextKey: 'next.key' } as const;

export interface Validity {
  notBefore: number;
  notAfter: number;
}

const PEM_CERT = /-----BEGIN CERTIFICATE-----[^-]+-----END CERTIFICATE-----/g;

/** The certificates in a PEM bundle, in order. */
export function splitPem(bundle: string | undefined): string[] {
  return (bundle ?? '').match(PEM_CERT)?.map((c) => `${c}\n`) ?? [];
}

/** The validity of the first certificate in `pem` (the leaf of a chain), or undefined when it is unreadable. */
export function validityOf(pem: string | undefined): Validity | undefined {
  const first = splitPem(pem)[0];
  if (!first) return undefined;
  try {
    const c = new X509Certificate(first);
    return { notBefore: Date.parse(c.validFrom), notAfter: Date.parse(c.validTo) };
  } catch {
    return undefined;
  }
}

/** When a certificate is due for rotation: at `fraction` (default 2/3) of its lifetime. */
export function rotationDue(v: Validity, fraction = 2 / 3): number {
  return v.notBefore + Math.floor((v.notAfter - v.notBefore) * fraction);
}

/**
 * The CA bundle after adding `added` (first, newest): every CA of `existing` that has not expired, each once.
 * A CA that does not parse is dropped: the API server would reject the whole bundle for it.
 */
export function mergeCABundle(added: string[], existing: string | undefined, now: number): string {
  const seen = new Set<string>();
  const out: string[] = [];
  for (const pem of [...added.flatMap(splitPem), ...splitPem(existing)]) {
    const v = validityOf(pem);
    const key = pem.replace(/\s+/g, '');
    if (!v || v.notAfter <= now || seen.has(key)) continue;
    seen.add(key);
    out.push(pem);
  }
  return out.join('');
}

export type RotationStep =
  /** Nothing usable (no certificate, unreadable, or expired): make one and serve it at once. */
  | { kind: 'create'; reason: string }
  /** Due: make the next certificate and publish its CA (step 1). */
  | { kind: 'trust-next' }
  /** A next certificate waits: serve it once the bundle is in the registrations (step 2). */
  | { kind: 'serve-next' }
  /** Nothing to do until `at`. */
  | { kind: 'wait'; at: number };

/**
 * What the rotator does next, from the Secret's state. With `lifetimeMs`, a certificate that would outlive
 * a new one by far (made by an older osc, which made them for ten years, or before the lifetime was
 * shortened) is due at once.
 */
export function planRotation(s: SelfSignedState | undefined, now: number, fraction = 2 / 3, lifetimeMs?: number): RotationStep {
  const current = validityOf(s?.certPem);
  if (!s?.certPem || !s.keyPem || !current) return { kind: 'create', reason: 'no serving certificate' };
  if (current.notAfter <= now) return { kind: 'create', reason: 'the serving certificate expired' };
  if (!splitPem(s.caBundlePem).length) return { kind: 'create', reason: 'no CA bundle' };
  const next = validityOf(s.nextCertPem);
  if (next && s.nextKeyPem && next.notAfter > now) return { kind: 'serve-next' };
  if (lifetimeMs !== undefined && current.notAfter - now > lifetimeMs * 1.1 + 60_000) return { kind: 'trust-next' };
  const due = rotationDue(current, fraction);
  return due <= now ? { kind: 'trust-next' } : { kind: 'wait', at: due };
}

/** Whether every CA that signed `certPem` is in `bundlePem` (the API server would accept it). */
export function bundleTrusts(bundlePem: string | undefined, certPem: string | undefined): boolean {
  const leaf = splitPem(certPem)[0];
  if (!leaf) return false;
  try {
    const cert = new X509Certificate(leaf);
    return splitPem(bundlePem).some((ca) => cert.checkIssued(new X509Certificate(ca)) && cert.verify(new X509Certificate(ca).publicKey));
  } catch {
    return false;
  }
}
