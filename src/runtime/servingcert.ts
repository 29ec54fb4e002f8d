import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { ServingCert } from './manager.ts';

export interface MetricsCert extends ServingCert {
  /** The CA that signed it when osc made it itself (scrapers need it to verify); undefined when read from files. */
  caPem?: string;
  /** Where it came from, for the log. */
  source: string;
}

/** tls.crt and tls.key in `dir` (a mounted Secret, e.g. from OpenShift's service CA), or undefined when absent. */
export async function readCertDir(dir: string): Promise<ServingCert | undefined> {
  try {
    const [certPem, keyPem] = await Promise.all([readFile(join(dir, 'tls.crt'), 'utf8'), readFile(join(dir, 'tls.key'), 'utf8')]);
    return certPem.trim() && keyPem.trim() ? { certPem, keyPem } : undefined;
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw e;
  }
}

/**
 * The metrics server's certificate: the platform's when `certDir` holds one, else one osc makes for this
 * process (as controller-runtime does without a certificate directory). Certificate generation, an X.509
 * library, is loaded only in the second case.
 */
export async function metricsServingCert(opts: { certDir?: string; dnsNames: string[]; days?: number }): Promise<MetricsCert> {
  if (opts.certDir) {
    const files = await readCertDir(opts.certDir);
    if (files) return { ...files, source: opts.certDir };
  }
  const { createCA, issueCert } = await import('../kube/pki.ts');
  const ca = await createCA('osc-metrics-ca', opts.days ?? 365);
  const cert = await issueCert(ca, {
    commonName: opts.dnsNames[0] ?? 'localhost',
    usage: 'server',
    dnsNames: [...opts.dnsNames, 'localhost'],
    ipAddresses: ['127.0.0.1', '::1'],
    days: opts.days ?? 365,
  });
  return { ...cert, caPem: ca.certPem, source: 'self-signed' };
}

/**
 * Re-reads `dir` every `everyMs` and calls `onChange` when the certificate there changed (the platform
 * rotates it in the mounted Secret; the kubelet updates the files). Returns a stop function.
 */
export function watchCertDir(dir: string, current: ServingCert, onChange: (c: ServingCert) => void, everyMs = 60_000): () => void {
  let last = current.certPem + current.keyPem;
  const timer = setInterval(() => {
    readCertDir(dir).then(
      (c) => {
        if (!c || c.certPem + c.keyPem === last) return;
        last = c.certPem + c.keyPem;
        onChange(c);
      },
      () => {},
    );
  }, everyMs);
  timer.unref();
  return () => clearInterval(timer);
}
