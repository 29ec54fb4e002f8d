/** The chaos run's reading of the API server's audit log (the operator's ServiceAccount only). */
import { readFileSync } from 'node:fs';
import { LEADER_ELECTION_LEASE } from '../../src/api/names.ts';
import type { KubeClient } from '../../src/kube/client.ts';
import { WEBHOOK_SECRET } from '../../src/webhooks/setup.ts';
import { type AuditEvent, replicaByUserAgent, writesWithoutLease } from '../../test/support/audit.ts';

/**
 * The operator's requests in the audit log: how many, how many ended in 409 Conflict, 429 or a 5xx, each
 * replica's share (by User-Agent), and the writes made by a replica that did not hold the lease. The
 * webhook's serving certificate is every replica's to make (whichever starts first), not the leader's.
 */
export function readAudit(
  path: string,
  operatorUser: string,
): {
  total: number;
  s409: number;
  s403: number;
  s429: number;
  s5xx: number;
  byReplica: Record<string, number>;
  doubleLeaderWrites: string[];
  /** The distinct requests answered 403 (judged against the RBAC afterwards: an API server that has just
   * restarted refuses everything until its authorizer's caches fill). */
  forbidden: AuditEvent[];
} {
  let text = '';
  try {
    text = readFileSync(path, 'utf8');
  } catch {
    text = '';
  }
  const events = text
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l) as AuditEvent)
    .filter((e) => e.stage === 'ResponseComplete' && e.user?.username === operatorUser);
  const replica = replicaByUserAgent(operatorUser);
  const byReplica: Record<string, number> = {};
  const count = (p: (code: number) => boolean) => events.filter((e) => p(e.responseStatus?.code ?? 0)).length;
  for (const e of events) {
    const who = replica(e) ?? 'unknown';
    byReplica[who] = (byReplica[who] ?? 0) + 1;
  }
  const doubleLeaderWrites = writesWithoutLease(events, {
    lease: LEADER_ELECTION_LEASE,
    replica,
    exempt: (e) => e.objectRef?.resource === 'secrets' && e.objectRef.name === WEBHOOK_SECRET,
  });
  return {
    total: events.length,
    s409: count((c) => c === 409),
    s403: count((c) => c === 403),
    s429: count((c) => c === 429),
    s5xx: count((c) => c >= 500),
    byReplica,
    doubleLeaderWrites,
    forbidden: [
      ...new Map(
        events
          .filter((e) => e.responseStatus?.code === 403)
          .map((e) => [
            JSON.stringify([
              e.verb,
              e.objectRef?.apiGroup,
              e.objectRef?.resource,
              e.objectRef?.subresource,
              e.objectRef?.namespace,
              e.objectRef?.name,
            ]),
            e,
          ]),
      ).values(),
    ],
  };
}

/**
 * Which of the forbidden requests the operator's RBAC does not allow, asked of the API server once the run
 * is over (SubjectAccessReview): each is a rule `osc install` does not ship, described as verb resource.
 */
export async function rbacGaps(client: KubeClient, user: string, forbidden: readonly AuditEvent[]): Promise<string[]> {
  const namespace = user.split(':')[2] ?? '';
  const gaps: string[] = [];
  for (const e of forbidden) {
    const o = e.objectRef ?? {};
    // A non-resource URL (discovery, /version, /readyz) is authorized by its path, not by a resource.
    const path = (e.requestURI ?? '').split('?')[0];
    const attributes = e.objectRef
      ? {
          resourceAttributes: {
            verb: e.verb,
            group: o.apiGroup ?? '',
            resource: o.resource,
            subresource: o.subresource ?? '',
            namespace: o.namespace ?? '',
            name: o.name ?? '',
          },
        }
      : { nonResourceAttributes: { verb: e.verb, path } };
    const review = await client.request<{ status?: { allowed?: boolean } }>('POST', '/apis/authorization.k8s.io/v1/subjectaccessreviews', {
      body: {
        apiVersion: 'authorization.k8s.io/v1',
        kind: 'SubjectAccessReview',
        spec: {
          user,
          groups: ['system:serviceaccounts', `system:serviceaccounts:${namespace}`, 'system:authenticated'],
          ...attributes,
        },
      },
    });
    if (review.status?.allowed) continue;
    gaps.push(
      e.objectRef
        ? `${e.verb} ${o.resource}${o.subresource ? `/${o.subresource}` : ''}${o.apiGroup ? `.${o.apiGroup}` : ''} ${[o.namespace, o.name].filter(Boolean).join('/')}`
        : `${e.verb} ${path}`,
    );
  }
  return gaps;
}
