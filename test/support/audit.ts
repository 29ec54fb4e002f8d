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
  objectRef?: { resource?: string; subresource?: string; namespace?: string; name?: string };
  responseStatus?: { code?: number };
  requestReceivedTimestamp: string;
}

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
