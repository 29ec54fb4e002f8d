/**
 * The API server's audit log as tests read it: a policy file and the kube-apiserver flags that enable it,
 * in a temporary directory, and the completed requests parsed back.
 */
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export interface AuditEvent {
  stage: string;
  verb: string;
  user: { username: string };
  /** The client's User-Agent: osc sends `osc/<version> (<pod name>)`, which tells replicas of one ServiceAccount apart. */
  userAgent?: string;
  /** The path and query asked for (a request without objectRef is for a non-resource URL such as /version). */
  requestURI?: string;
  objectRef?: { apiGroup?: string; resource?: string; subresource?: string; namespace?: string; name?: string };
  responseStatus?: { code?: number };
  requestReceivedTimestamp: string;
  /** The request's body, where the policy logs it at level Request. */
  requestObject?: unknown;
}

/**
 * A Lease write that names no holder: a release, after which the lease is nobody's until it is taken. An
 * update with no holderIdentity, or a JSON patch that sets it to none (osc releases with one).
 */
const releases = (e: AuditEvent): boolean => {
  const body = e.requestObject;
  if (e.verb === 'patch' && Array.isArray(body))
    return body.some(
      (o: { op?: string; path?: string; value?: unknown }) => o.op !== 'test' && o.path === '/spec/holderIdentity' && !o.value,
    );
  const spec = (body as { spec?: { holderIdentity?: string | null } } | undefined)?.spec;
  return e.verb === 'update' && !!spec && !spec.holderIdentity;
};

/** `rules`: the policy's rule lines (YAML), before the final `- level: None`. */
export function auditLogged(prefix: string, rules: string[]): { dir: string; apiserverArgs: string[]; events(): AuditEvent[] } {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  const log = join(dir, 'audit.log');
  const policy = join(dir, 'audit-policy.yaml');
  writeFileSync(
    policy,
    ['apiVersion: audit.k8s.io/v1', 'kind: Policy', 'omitStages: [RequestReceived]', 'rules:', ...rules, '- level: None', ''].join('\n'),
  );
  return {
    dir,
    apiserverArgs: [`--audit-policy-file=${policy}`, `--audit-log-path=${log}`, '--audit-log-format=json'],
    /** Every completed request logged so far. */
    events: () =>
      readFileSync(log, 'utf8')
        .split('\n')
        .filter(Boolean)
        .map((l) => JSON.parse(l) as AuditEvent)
        .filter((e) => e.stage === 'ResponseComplete'),
  };
}

const WRITE_VERBS = new Set(['create', 'update', 'patch', 'delete', 'deletecollection']);

export interface LeaseCheck {
  /** The leader election lease's name. */
  lease: string;
  /** Which replica sent a request (undefined: not one of the replicas, ignored). */
  replica: (e: AuditEvent) => string | undefined;
  /** Writes any replica may make, leading or not (the webhook's serving certificate, say). */
  exempt?: (e: AuditEvent) => boolean;
}

/**
 * "Never two leaders writing", from the API server's audit log: a replica holds the lease from its last
 * successful write of the lease until another replica's; every other successful write by a replica (events
 * and `exempt` aside) must come while it holds the lease. Answers one line per offending write, in order of
 * arrival at the API server (which is the order that counts: it is where a stale leader's write would land).
 */
export function writesWithoutLease(events: readonly AuditEvent[], check: LeaseCheck): string[] {
  const ordered = events
    .filter((e) => e.stage === 'ResponseComplete' && (e.responseStatus?.code ?? 0) < 400 && check.replica(e) !== undefined)
    .sort((a, b) => a.requestReceivedTimestamp.localeCompare(b.requestReceivedTimestamp));
  let holder: string | undefined;
  const offenders: string[] = [];
  for (const e of ordered) {
    if (!WRITE_VERBS.has(e.verb)) continue;
    const who = check.replica(e);
    if (e.objectRef?.resource === 'leases' && e.objectRef.name === check.lease) {
      holder = releases(e) ? undefined : who;
      continue;
    }
    if (e.objectRef?.resource === 'events' || check.exempt?.(e)) continue;
    if (who !== holder)
      offenders.push(
        `${e.requestReceivedTimestamp} ${who} ${e.verb} ${e.objectRef?.resource}/${e.objectRef?.name} while ${holder ?? 'nobody'} held the lease`,
      );
  }
  return offenders;
}

/** The replica a request came from by its User-Agent (`osc/<version> (<name>)`), for one user. */
export const replicaByUserAgent =
  (username: string) =>
  (e: AuditEvent): string | undefined =>
    e.user.username === username ? /\(([^)]+)\)\s*$/.exec(e.userAgent ?? '')?.[1] : undefined;
