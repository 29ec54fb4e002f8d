/**
 * The webhook's serving certificate at run time, from whichever source was chosen (src/webhooks/certsource.ts):
 * every replica reads it from a Secret and re-reads it, so a certificate rotated there (by osc's leader, the
 * service CA or cert-manager) is served without a restart; the leader also rotates osc's own certificate
 * (src/webhooks/rotation.ts). See docs/security.md.
 */
import type { Logger } from 'pino';
import type { KubeClient } from '../kube/client.ts';
import { errorMessage, isAlreadyExists, isConflict } from '../kube/errors.ts';
import { CertManagerCertificates, CertManagerIssuers, type Secret, Secrets } from '../kube/resources.ts';
import { sleep } from '../runtime/concurrency.ts';
import type { Informer } from '../runtime/informer.ts';
import { CERT_SECRETS, type CertSource, certManagerObjects, injectAnnotations, serviceDnsNames } from './certsource.ts';
import { KEYS, mergeCABundle, planRotation, type SelfSignedState } from './rotation.ts';
import type { WebhookTrust } from './setup.ts';

export interface ServingTLS {
  certPem: string;
  keyPem: string;
}

export interface WebhookCertOptions {
  client: KubeClient;
  namespace: string;
  service: string;
  source: CertSource;
  log: Logger;
  /** osc's own certificates: lifetime (default 7 days) and the part of it after which they are rotated. */
  lifetimeMs?: number;
  rotateAtFraction?: number;
  /**
   * How often the leader plans a rotation again from the cached Secret (default 30 s), and how often the
   * certificate is looked for while none is there at start. Once the Secret is followed (`follow`), changes
   * arrive through its watch and nothing is polled from the API server.
   */
  pollMs?: number;
  /** After both registrations carry a new CA, how long the API server gets to load them (default 10 s). */
  propagationMs?: number;
}

export const DEFAULT_CERT_LIFETIME_MS = 7 * 24 * 60 * 60 * 1000;

const b64 = (s: string) => Buffer.from(s).toString('base64');
const unb64 = (s: string | undefined) => (s ? Buffer.from(s, 'base64').toString('utf8') : undefined);

function stateOf(s: Secret | undefined): SelfSignedState | undefined {
  if (!s) return undefined;
  const d = s.data ?? {};
  return {
    certPem: unb64(d[KEYS.cert]),
    keyPem: unb64(d[KEYS.key]),
    caBundlePem: unb64(d[KEYS.ca]),
    nextCertPem: unb64(d[KEYS.nextCert]),
    nextKeyPem: unb64(d[KEYS.nextKey]),
  };
}

function dataOf(s: SelfSignedState): Record<string, string> {
  const data: Record<string, string> = {};
  for (const [k, v] of [
    [KEYS.cert, s.certPem],
    [KEYS.key, s.keyPem],
    [KEYS.ca, s.caBundlePem],
    [KEYS.nextCert, s.nextCertPem],
    [KEYS.nextKey, s.nextKeyPem],
  ] as const) {
    if (v) data[k] = b64(v);
  }
  return data;
}

export class WebhookCertificates {
  readonly secretName: string;
  private tls: ServingTLS | undefined;
  private bundle: string | undefined;
  private readonly servedListeners: ((tls: ServingTLS) => void)[] = [];
  private readonly trustListeners: (() => void)[] = [];
  /** The Secret's cache, once followed: the rotation plans from it, and its changes are served. */
  private cache: { get(): Secret | undefined } | undefined;
  /** Counts the followed Secret's changes, and wakes a rotation that waits for the next one. */
  private changes = 0;
  private changed: (() => void) | undefined;
  private readonly opts: Required<Omit<WebhookCertOptions, 'log' | 'client'>> & Pick<WebhookCertOptions, 'log' | 'client'>;

  constructor(opts: WebhookCertOptions) {
    this.opts = {
      ...opts,
      lifetimeMs: opts.lifetimeMs ?? DEFAULT_CERT_LIFETIME_MS,
      rotateAtFraction: opts.rotateAtFraction ?? 2 / 3,
      pollMs: opts.pollMs ?? 30_000,
      propagationMs: opts.propagationMs ?? 10_000,
    };
    if (!(this.opts.lifetimeMs > 0)) throw new Error(`webhook certificate lifetime must be positive, not ${opts.lifetimeMs}`);
    this.secretName = CERT_SECRETS[opts.source];
  }

  get source(): CertSource {
    return this.opts.source;
  }

  /** The certificate to serve now. */
  get serving(): ServingTLS {
    if (!this.tls) throw new Error('the webhook certificate is not loaded yet');
    return this.tls;
  }

  /** What the webhook configurations must say so that the API server trusts what is served. */
  trust(): WebhookTrust {
    const annotations = injectAnnotations(this.opts.source, this.opts.namespace);
    return annotations ? { annotations } : { caPem: this.bundle ?? '' };
  }

  /** Called with the new certificate whenever the one to serve changes. */
  onServe(cb: (tls: ServingTLS) => void): void {
    this.servedListeners.push(cb);
  }

  /** Called whenever the CA bundle changes (osc's own certificates): the registrations must be rewritten. */
  onTrustChange(cb: () => void): void {
    this.trustListeners.push(cb);
  }

  /**
   * Asks for a certificate: osc's own is created when there is none usable (by whichever replica, or
   * `osc install`, comes first); cert-manager gets its Issuers and Certificate; the service CA needs nothing
   * (the Service's annotation asks it).
   */
  async prepare(): Promise<void> {
    const { client, namespace, source } = this.opts;
    if (source === 'cert-manager') {
      for (const obj of certManagerObjects(namespace, this.opts.service)) {
        await client.apply(obj.kind === 'Issuer' ? CertManagerIssuers : CertManagerCertificates, obj);
      }
    }
    if (source === 'self-signed') {
      const secret = await client.find(Secrets, this.secretName, namespace);
      const step = planRotation(stateOf(secret), Date.now(), this.opts.rotateAtFraction, this.opts.lifetimeMs);
      // A conflict: another replica rewrote it first, and that one is used.
      if (step.kind === 'create')
        await this.create(step.reason, secret).catch((e) => {
          if (!isConflict(e)) throw e;
        });
    }
    await this.refresh();
  }

  /** prepare(), then waits until the certificate is there (a platform's comes moments after it is asked). */
  async load(signal?: AbortSignal): Promise<ServingTLS> {
    const { namespace, source, log } = this.opts;
    await this.prepare();
    let loggedAt = Number.NEGATIVE_INFINITY;
    while (!(await this.refresh())) {
      if (signal?.aborted) throw new Error(`stopped while waiting for secret ${namespace}/${this.secretName}`);
      if (performance.now() - loggedAt >= 30_000) {
        loggedAt = performance.now();
        log.info(
          { secret: `${namespace}/${this.secretName}`, source },
          source === 'service-ca'
            ? `waiting for OpenShift's service CA to write the webhook certificate (Service ${this.opts.service} is annotated for it)`
            : 'waiting for the webhook certificate',
        );
      }
      await sleep(Math.min(this.opts.pollMs, 1000), signal ?? new AbortController().signal);
    }
    return this.serving;
  }

  /**
   * Reads the Secret; tells the listeners what changed. Answers whether a certificate is loaded. A Secret
   * missing or incomplete keeps the certificate served until now.
   */
  async refresh(): Promise<boolean> {
    return this.take(await this.opts.client.find(Secrets, this.secretName, this.opts.namespace));
  }

  /**
   * Follows the Secret through a cache of it (an informer of this one Secret, on every replica): each
   * change is served at once, and the leader's rotation plans from the cache instead of reading the Secret.
   */
  follow(secrets: Pick<Informer<Secret>, 'get' | 'addEventHandler'>): void {
    const key = `${this.opts.namespace}/${this.secretName}`;
    this.cache = { get: () => secrets.get(key) };
    const seen = (s: Secret) => {
      if (s.metadata?.name !== this.secretName) return;
      this.take(s);
      this.changes++;
      this.changed?.();
    };
    secrets.addEventHandler({
      add: seen,
      update: (_, s) => seen(s),
      delete: () => {
        this.changes++;
        this.changed?.();
      },
    });
  }

  /** Takes what the Secret holds; tells the listeners what changed. Answers whether a certificate is loaded. */
  private take(secret: Secret | undefined): boolean {
    const s = stateOf(secret);
    if (s?.certPem && s.keyPem) {
      const changed = !this.tls || this.tls.certPem !== s.certPem || this.tls.keyPem !== s.keyPem;
      this.tls = { certPem: s.certPem, keyPem: s.keyPem };
      if (changed) for (const cb of this.servedListeners) cb(this.tls);
    }
    if (this.opts.source === 'self-signed' && s?.caBundlePem && s.caBundlePem !== this.bundle) {
      this.bundle = s.caBundlePem;
      for (const cb of this.trustListeners) cb();
    }
    return this.tls !== undefined;
  }

  /**
   * The leader, for osc's own certificates: rotates them before they expire. `trusted(bundle)` answers
   * whether both registrations carry that CA bundle (undefined when osc does not register them).
   */
  async rotate(signal: AbortSignal, trusted?: (caPem: string) => Promise<boolean>): Promise<void> {
    if (this.opts.source !== 'self-signed') return;
    const { client, namespace, log } = this.opts;
    let trustedSince: number | undefined;
    let untrustedSince: number | undefined;
    let warnedAt = Number.NEGATIVE_INFINITY;
    while (!signal.aborted) {
      let wait = this.opts.pollMs;
      let wrote = false;
      const changesBefore = this.changes;
      try {
        const secret = this.cache ? this.cache.get() : await client.find(Secrets, this.secretName, namespace);
        const state = stateOf(secret);
        const step = planRotation(state, Date.now(), this.opts.rotateAtFraction, this.opts.lifetimeMs);
        if (step.kind === 'create') {
          await this.create(step.reason, secret);
          wrote = true;
        } else if (step.kind === 'trust-next' && secret && state) {
          const next = await this.issue();
          await this.write(secret, {
            ...state,
            caBundlePem: mergeCABundle([next.caPem], state.caBundlePem, Date.now()),
            nextCertPem: next.certPem,
            nextKeyPem: next.keyPem,
          });
          log.info(
            { secret: `${namespace}/${this.secretName}` },
            'webhook certificate rotation: the new CA is trusted next to the old one',
          );
          trustedSince = undefined;
          wrote = true;
        } else if (step.kind === 'serve-next' && secret && state) {
          this.take(secret);
          const bundle = state.caBundlePem ?? '';
          if (!trusted || (await trusted(bundle))) {
            untrustedSince = undefined;
            trustedSince ??= performance.now();
            const left = trustedSince + this.opts.propagationMs - performance.now();
            if (left <= 0) {
              await this.write(secret, {
                certPem: state.nextCertPem,
                keyPem: state.nextKeyPem,
                caBundlePem: mergeCABundle([], state.caBundlePem, Date.now()),
              });
              log.info({ secret: `${namespace}/${this.secretName}` }, 'webhook certificate rotated: serving the new certificate');
              trustedSince = undefined;
              wrote = true;
            } else wait = left;
          } else {
            // Normally a moment (the registration controller writes the bundle); if it lasts, say why the
            // certificate waits (the current one is served meanwhile, and replaced at once if it expires).
            untrustedSince ??= performance.now();
            if (performance.now() - untrustedSince > 60_000 && performance.now() - warnedAt > 60_000) {
              warnedAt = performance.now();
              log.warn(
                { secret: `${namespace}/${this.secretName}` },
                'the webhook registrations do not carry the new CA bundle yet: the new certificate waits until they do',
              );
            }
            wait = Math.min(this.opts.pollMs, 500);
          }
        } else if (step.kind === 'wait') {
          wait = Math.max(0, Math.min(step.at - Date.now(), this.opts.pollMs));
        }
        if (wrote) {
          // Planned again once the cache shows the write (read back at once without a cache).
          if (this.cache) wait = this.opts.pollMs;
          else {
            await this.refresh();
            wait = 0;
          }
        }
      } catch (e) {
        // A conflict means someone else wrote the Secret meanwhile: plan again from what is there now (once
        // the cache shows their write).
        if (!isConflict(e)) log.warn({ err: errorMessage(e) }, 'webhook certificate rotation failed; retrying');
        wait = isConflict(e) ? (this.cache ? this.opts.pollMs : 0) : Math.min(this.opts.pollMs, 5000);
      }
      if (wait > 0) await this.changeOr(changesBefore, wait, signal);
    }
  }

  /** Sleeps `ms`, or less when the followed Secret has changed since `changesBefore` (or changes meanwhile). */
  private changeOr(changesBefore: number, ms: number, signal: AbortSignal): Promise<void> {
    if (this.changes !== changesBefore || signal.aborted) return Promise.resolve();
    return new Promise<void>((resolve) => {
      const done = () => {
        clearTimeout(timer);
        signal.removeEventListener('abort', done);
        this.changed = undefined;
        resolve();
      };
      const timer = setTimeout(done, ms);
      signal.addEventListener('abort', done, { once: true });
      this.changed = done;
    });
  }

  /** A CA and a serving certificate signed by it, both for the configured lifetime. */
  private async issue(): Promise<ServingTLS & { caPem: string }> {
    // Certificate generation (an X.509 library) is loaded only when a certificate must be made.
    const { createCA, issueCert } = await import('../kube/pki.ts');
    const days = this.opts.lifetimeMs / (24 * 60 * 60 * 1000);
    const ca = await createCA('osc-webhook-ca', days);
    const dnsNames = serviceDnsNames(this.opts.service, this.opts.namespace);
    const cert = await issueCert(ca, {
      commonName: dnsNames[0] ?? 'localhost',
      usage: 'server',
      dnsNames: [...dnsNames, 'localhost'],
      ipAddresses: ['127.0.0.1'],
      days,
    });
    return { ...cert, caPem: ca.certPem };
  }

  /** A fresh certificate served at once (nothing usable is there; the old CAs that still live stay trusted). */
  private async create(reason: string, existing?: Secret): Promise<void> {
    const { client, namespace, log } = this.opts;
    const made = await this.issue();
    const old = stateOf(existing);
    const state: SelfSignedState = {
      certPem: made.certPem,
      keyPem: made.keyPem,
      caBundlePem: mergeCABundle([made.caPem], old?.caBundlePem, Date.now()),
    };
    if (existing) await this.write(existing, state);
    else {
      try {
        await client.create(Secrets, {
          metadata: {
            name: this.secretName,
            namespace,
            labels: { 'app.kubernetes.io/name': 'osc', 'app.kubernetes.io/component': 'webhook' },
          },
          type: 'kubernetes.io/tls',
          data: dataOf(state),
        });
      } catch (e) {
        // Another replica (or osc install) made it first: use theirs.
        if (isAlreadyExists(e)) return;
        throw e;
      }
    }
    log.info({ secret: `${namespace}/${this.secretName}`, reason }, 'created the webhook serving certificate');
  }

  /** Rewrites the Secret's certificate keys; fails with a conflict when someone else wrote it meanwhile. */
  private async write(secret: Secret, state: SelfSignedState): Promise<void> {
    await this.opts.client.update(Secrets, { ...secret, data: dataOf(state) });
  }
}
