import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { MCS_ANNOTATION, SUPPLEMENTAL_GROUPS_ANNOTATION, UID_RANGE_ANNOTATION } from '../../src/api/scc.ts';
import { type Authorize, admitPod, aggregate, serviceAccountUser, type UserInfo } from '../../src/devcluster/scc/admission.ts';
import { defaultSCCs } from '../../src/devcluster/scc/defaults.ts';
import { allocationFor } from '../../src/devcluster/scc/namespaces.ts';
import { restrictionPoints, sortSCCs } from '../../src/devcluster/scc/order.ts';
import type { AdmittedPod, Container } from '../../src/devcluster/scc/provider.ts';
import { podPatch } from '../../src/devcluster/scc/webhook.ts';

const NS = 'team';
const ns = {
  [UID_RANGE_ANNOTATION]: '1000650000/10000',
  [SUPPLEMENTAL_GROUPS_ANNOTATION]: '1000650000/10000',
  [MCS_ANNOTATION]: 's0:c26,c5',
};
const controller: UserInfo = {
  username: 'system:serviceaccount:kube-system:daemon-set-controller',
  groups: ['system:serviceaccounts', 'system:authenticated'],
};
const admin: UserInfo = { username: 'osc-admin', groups: ['system:masters', 'system:authenticated'] };

/** RBAC as a fresh OpenShift has it: restricted-v2 for every authenticated subject, plus the grants given. */
const rbac =
  (grants: Record<string, string[]> = {}): Authorize =>
  async (who, scc) =>
    who.groups.includes('system:masters') ||
    (scc === 'restricted-v2' && who.groups.includes('system:authenticated')) ||
    (grants[who.username] ?? []).includes(scc);

const pod = (
  spec: Partial<AdmittedPod['spec']> = {},
  container: Partial<Container> = {},
  annotations?: Record<string, string>,
): AdmittedPod => ({
  metadata: { generateName: 'p-', namespace: NS, ...(annotations ? { annotations } : {}) },
  spec: { serviceAccountName: 'default', containers: [{ name: 'c', image: 'x', ...container }], ...spec },
});

const admit = (p: AdmittedPod, user = controller, authorize = rbac(), annotations: Record<string, string> = ns) =>
  admitPod({ pod: p, namespace: NS, namespaceAnnotations: annotations, sccs: defaultSCCs(), user, authorize });

describe('SCC order', () => {
  test('priority first, then the most restrictive, then the name', () => {
    assert.deepEqual(
      sortSCCs(defaultSCCs()).map((s) => s.metadata.name),
      [
        'anyuid',
        'restricted-v2',
        'restricted',
        'nonroot-v2',
        'nonroot',
        'hostmount-anyuid',
        'hostnetwork-v2',
        'hostnetwork',
        'hostaccess',
        'privileged',
      ],
    );
  });

  test('the points of the defaults', () => {
    const points = Object.fromEntries(defaultSCCs().map((s) => [s.metadata.name, restrictionPoints(s)]));
    assert.equal(points['restricted-v2'], 50_000 + 2010 + 10_000 + 20_000);
    assert.equal(points.restricted, 50_000 + 4800 + 10_000 + 20_000);
    assert.equal(points.privileged, 1_000_000 + 100_000 + 200_000 + 400_000 + 9000 + 40_000 + 40_000);
  });

  test('equal priority and points: by name', () => {
    const [a, b] = defaultSCCs().filter((s) => s.metadata.name === 'restricted-v2');
    assert.ok(a && !b);
    const twin = { ...a, metadata: { name: 'a-restricted-twin' } };
    assert.deepEqual(
      sortSCCs([a, twin]).map((s) => s.metadata.name),
      ['a-restricted-twin', 'restricted-v2'],
    );
  });
});

describe('SCC matching', () => {
  const cases: {
    name: string;
    pod: AdmittedPod;
    user?: UserInfo;
    grants?: Record<string, string[]>;
    scc?: string;
    subject?: 'user' | 'serviceaccount';
    refused?: RegExp[];
  }[] = [
    { name: "a controller's plain pod: restricted-v2", pod: pod(), scc: 'restricted-v2', subject: 'user' },
    { name: "the administrator's plain pod: anyuid (priority 10)", pod: pod(), user: admin, scc: 'anyuid', subject: 'user' },
    {
      name: 'privileged without a grant: refused, every SCC named',
      pod: pod({}, { securityContext: { privileged: true } }),
      refused: [
        /^unable to validate against any security context constraint: \[provider "anyuid": Forbidden: not usable by user or serviceaccount, /,
        /spec\.containers\[0\]\.securityContext\.privileged: Invalid value: true: Privileged containers are not allowed/,
        /provider "privileged": Forbidden: not usable by user or serviceaccount\]$/,
      ],
    },
    {
      name: "privileged with a grant to the pod's ServiceAccount",
      pod: pod({}, { securityContext: { privileged: true } }),
      grants: { 'system:serviceaccount:team:default': ['privileged'] },
      scc: 'privileged',
      subject: 'serviceaccount',
    },
    {
      name: 'a grant to the ServiceAccount of another namespace does not count',
      pod: pod({}, { securityContext: { privileged: true } }),
      grants: { 'system:serviceaccount:other:default': ['privileged'] },
      refused: [/provider "privileged": Forbidden: not usable/],
    },
    {
      name: 'root outside the range',
      pod: pod({}, { securityContext: { runAsUser: 0 } }),
      refused: [/spec\.containers\[0\]\.securityContext\.runAsUser: Invalid value: 0: must be in the ranges: \[1000650000, 1000659999\]/],
    },
    {
      name: 'host network, pod level',
      pod: pod({ hostNetwork: true }),
      refused: [
        /provider restricted-v2: \.spec\.securityContext\.hostNetwork: Invalid value: true: Host network is not allowed to be used/,
      ],
    },
    {
      name: 'nonroot-v2 granted, a fixed non-root user: nonroot-v2',
      pod: pod({}, { securityContext: { runAsUser: 1001, allowPrivilegeEscalation: false, capabilities: { drop: ['ALL'] } } }),
      grants: { 'system:serviceaccount:team:default': ['nonroot-v2'] },
      scc: 'nonroot-v2',
      subject: 'serviceaccount',
    },
    {
      name: 'a capability outside the allowed ones',
      pod: pod({}, { securityContext: { capabilities: { add: ['SYS_ADMIN'] } } }),
      refused: [/spec\.containers\[0\]\.securityContext\.capabilities\.add: Invalid value: "SYS_ADMIN": capability may not be added/],
    },
    {
      name: 'privilege escalation that only restricted (v1) would allow: the hint',
      pod: pod({}, { securityContext: { allowPrivilegeEscalation: true } }),
      refused: [
        /no access to scc\/restricted: Forbidden: the pod fails to validate against the `restricted-v2` security context constraint/,
      ],
    },
    {
      name: 'required-scc: only that SCC, even for the administrator',
      pod: pod({}, {}, { 'openshift.io/required-scc': 'restricted-v2' }),
      user: admin,
      scc: 'restricted-v2',
      subject: 'user',
    },
    {
      name: 'required-scc the pod does not fit: refused by that SCC alone',
      pod: pod({}, { securityContext: { privileged: true } }, { 'openshift.io/required-scc': 'restricted-v2' }),
      user: admin,
      refused: [
        /^unable to validate against any security context constraint: spec\.containers\[0\]\.securityContext\.privileged: Invalid value: true/,
      ],
    },
    {
      name: 'required-scc that does not exist',
      pod: pod({}, {}, { 'openshift.io/required-scc': 'nope' }),
      refused: [/^failed to retrieve the required SCC "nope"/],
    },
  ];
  for (const c of cases)
    test(c.name, async () => {
      const v = await admit(c.pod, c.user, rbac(c.grants));
      if (c.refused) {
        assert.equal(v.allowed, false, JSON.stringify(v));
        if (!v.allowed) for (const r of c.refused) assert.match(v.message, r);
      } else {
        assert.ok(v.allowed, v.allowed ? '' : v.message);
        if (v.allowed) {
          assert.equal(v.scc, c.scc);
          assert.equal(v.subject, c.subject);
        }
      }
    });

  test('restricted-v2 defaults the user, the SELinux level, fsGroup, seccomp, capabilities and escalation', async () => {
    const v = await admit(pod());
    assert.ok(v.allowed);
    if (!v.allowed) return;
    assert.deepEqual(v.pod.spec.securityContext, {
      seLinuxOptions: { level: 's0:c26,c5' },
      fsGroup: 1000650000,
      seccompProfile: { type: 'RuntimeDefault' },
    });
    assert.deepEqual(v.pod.spec.containers[0]?.securityContext, {
      runAsUser: 1000650000,
      runAsNonRoot: true,
      capabilities: { drop: ['ALL'] },
      allowPrivilegeEscalation: false,
    });
  });

  test('a namespace not yet allocated: the provider cannot be made', async () => {
    const v = await admit(pod(), controller, rbac(), {});
    assert.equal(v.allowed, false);
    if (!v.allowed)
      assert.match(v.message, /unable to find pre-allocated uid annotation for namespace team while trying to configure SCC restricted-v2/);
  });

  test('the ServiceAccount subject', () => {
    assert.deepEqual(serviceAccountUser('ns', 'sa'), {
      username: 'system:serviceaccount:ns:sa',
      groups: ['system:serviceaccounts', 'system:serviceaccounts:ns', 'system:authenticated'],
    });
  });
});

describe('SCC admission plumbing', () => {
  test('aggregate: duplicates once, brackets only around several', () => {
    assert.equal(aggregate(['a']), 'a');
    assert.equal(aggregate(['a', 'b', 'a']), '[a, b]');
  });

  test('namespace allocation: blocks of 10,000 and distinct MCS labels', () => {
    assert.equal(allocationFor(0)[UID_RANGE_ANNOTATION], '1000000000/10000');
    assert.equal(allocationFor(65)[UID_RANGE_ANNOTATION], '1000650000/10000');
    const labels = new Set(Array.from({ length: 500 }, (_, i) => allocationFor(i)[MCS_ANNOTATION]));
    assert.equal(labels.size, 500);
    assert.equal(allocationFor(0)[MCS_ANNOTATION], 's0:c1,c0');
  });

  test('the patch touches only security contexts and annotations', async () => {
    const before = pod();
    const v = await admit(before);
    assert.ok(v.allowed);
    if (!v.allowed) return;
    const after = { ...v.pod, metadata: { ...v.pod.metadata, annotations: { 'openshift.io/scc': v.scc } } };
    assert.deepEqual(
      podPatch(before, after).map((o) => o.path),
      ['/metadata/annotations', '/spec/securityContext', '/spec/containers/0/securityContext'],
    );
    const annotated = pod({}, {}, { keep: 'me' });
    assert.deepEqual(
      podPatch(annotated, { ...annotated, metadata: { ...annotated.metadata, annotations: { keep: 'me', 'openshift.io/scc': 'x' } } }),
      [{ op: 'add', path: '/metadata/annotations/openshift.io~1scc', value: 'x' }],
    );
  });
});
