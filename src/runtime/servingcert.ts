import { type FSWatcher, watch } from 'node:fs';
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
 * Follows `dir` for the life of the process, whatever was served at start: OpenShift's service CA may write
 * the Secret after the pod started (osc then serves its own certificate until the files arrive) and rotates
 * it later; the kubelet updates the mounted files in place. A change is noticed through the file system's
 * events, with a re-read every `everyMs` for file systems that send none. `apply` is called with each new
 * pair; if it throws (a certificate and key written one after the other do not match for a moment), the
 * pair is tried again on the next event or re-read. Returns a stop function.
 */
export function watchCertDir(
  dir: string,
  current: ServingCert | undefined,
  apply: (c: ServingCert) => void,
  everyMs = 10_000,
  onError: (e: unknown) => void = () => {},
): () => void {
  let last = current ? current.certPem + current.keyPem : '';
  let stopped = false;
  let reading = false;
  let again = false;
  const check = async (): Promise<void> => {
    if (reading) {
      again = true;
      return;
    }
    reading = true;
    try {
      do {
        again = false;
        const c = await readCertDir(dir).catch(() => undefined);
        if (stopped || !c || c.certPem + c.keyPem === last) continue;
        try {
          apply(c);
          last = c.certPem + c.keyPem;
        } catch (e) {
          onError(e);
        }
      } while (again && !stopped);
    } finally {
      reading = false;
    }
  };
  const timer = setInterval(() => void check(), everyMs);
  timer.unref();
  let watcher: FSWatcher | undefined;
  const watchDir = () => {
    try {
      watcher = watch(dir, { persistent: false }, () => void check());
      watcher.on('error', () => {
        watcher?.close();
        watcher = undefined;
      });
    } catch {
      // The directory is not there (yet): the periodic re-read covers it.
    }
  };
  watchDir();
  void check();
  return () => {
    stopped = true;
    clearInterval(timer);
    watcher?.close();
  };
}
