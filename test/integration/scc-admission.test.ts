/**
 * The dev cluster's SCC admission bites as OpenShift's does: a privileged DaemonSet under a ServiceAccount
 * with no grant gets no pods and a FailedCreate event naming the violated fields; a `use` grant pinned by
 * resourceNames admits it under that SCC; `openshift.io/required-scc` is honoured; pods of a controller get
 * restricted-v2 and a user ID from their namespace's range.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { REQUIRED_SCC_ANNOTATION, SCC_REFUSAL, UID_RANGE_ANNOTATION, VALIDATED_SCC_ANNOTATION } from '../../src/api/scc.ts';
import { isForbidden } from '../../src/kube/errors.ts';
import { DaemonSets, Events, Namespaces, type Pod, Pods, RoleBindings, Roles, ServiceAccounts } from '../../src/kube/resources.ts';
import type { KubeObject } from '../../src/kube/types.ts';
import { useDevCluster } from '../support/operator.ts';
import { waitFor } from '../support/wait.ts';

const ns = 'scc-bites';
const labels = { app: 'privileged-agent' };

const privilegedDaemonSet = (serviceAccountName: string) =>
  ({
    metadata: { name: 'privileged-agent', namespace: ns },
    spec: {
      selector: { matchLabels: labels },
      template: {
        metadata: { labels },
        spec: {
          serviceAccountName,
          containers: [{ name: 'agent', image: 'quay.io/example/agent:1', securityContext: { privileged: true } }],
          volumes: [{ name: 'host', hostPath: { path: '/run' } }],
        },
      },
    },
  }) as KubeObject;

const plainPod = (name: string, annotations: Record<string, string> = {}, privileged = false) =>
  ({
    metadata: { name, namespace: ns, annotations },
    spec: { containers: [{ name: 'c', image: 'quay.io/example/app:1', ...(privileged ? { securityContext: { privileged: true } } : {}) }] },
  }) as Pod;

describe('SCC admission in the dev cluster', () => {
  const cluster = useDevCluster({ workers: 1 });

  test('a privileged DaemonSet without a grant gets no pods and a FailedCreate event naming the violated fields', async () => {
    const { client } = cluster.dev;
    await client.create(Namespaces, { metadata: { name: ns } });
    await client.create(ServiceAccounts, { metadata: { name: 'agent', namespace: ns } });
    await client.create(DaemonSets, privilegedDaemonSet('agent'));
    const event = await waitFor(
      async () =>
        (await client.list(Events, { namespace: ns })).items.find(
          (e) => e.reason === 'FailedCreate' && e.regarding?.name === 'privileged-agent' && e.note?.includes(SCC_REFUSAL),
        ),
      { timeoutMs: 120_000, message: 'a FailedCreate event from the DaemonSet controller' },
    );
    const note = event.note ?? '';
    assert.match(note, /provider "privileged": Forbidden: not usable by user or serviceaccount/);
    assert.match(note, /provider "anyuid": Forbidden: not usable by user or serviceaccount/);
    assert.match(note, /spec\.containers\[0\]\.securityContext\.privileged: Invalid value: true: Privileged containers are not allowed/);
    assert.match(note, /spec\.volumes\[0\]: Invalid value: "hostPath": hostPath volumes are not allowed to be used/);
    const pods = await client.list(Pods, { namespace: ns, labelSelector: 'app=privileged-agent' });
    assert.equal(pods.items.length, 0, 'no pod was admitted');
  });

  test('a use grant pinned by resourceNames admits it, and openshift.io/scc names the SCC', async () => {
    const { client } = cluster.dev;
    await client.create(Roles, {
      metadata: { name: 'use-privileged', namespace: ns },
      rules: [
        { apiGroups: ['security.openshift.io'], resources: ['securitycontextconstraints'], resourceNames: ['privileged'], verbs: ['use'] },
      ],
    } as KubeObject);
    await client.create(RoleBindings, {
      metadata: { name: 'agent-use-privileged', namespace: ns },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'use-privileged' },
      subjects: [{ kind: 'ServiceAccount', name: 'agent', namespace: ns }],
    } as KubeObject);
    let nudge = 0;
    const pod = await waitFor(
      async () => {
        const found = (await client.list(Pods, { namespace: ns, labelSelector: 'app=privileged-agent' })).items[0];
        // The controller backs off after its failures; a change to the DaemonSet has it try again at once.
        if (!found)
          await client.patch(DaemonSets, 'privileged-agent', { metadata: { annotations: { nudge: String(nudge++) } } }, { namespace: ns });
        return found;
      },
      { timeoutMs: 120_000, intervalMs: 2_500, message: 'the DaemonSet pod, once granted' },
    );
    assert.equal(pod.metadata.annotations?.[VALIDATED_SCC_ANNOTATION], 'privileged');
  });

  test("a controller's plain pod gets restricted-v2 and a user ID from its namespace's range", async () => {
    const { client } = cluster.dev;
    await client.create(DaemonSets, {
      metadata: { name: 'plain', namespace: ns },
      spec: {
        selector: { matchLabels: { app: 'plain' } },
        template: { metadata: { labels: { app: 'plain' } }, spec: { containers: [{ name: 'c', image: 'quay.io/example/app:1' }] } },
      },
    } as KubeObject);
    const pod = await waitFor(async () => (await client.list(Pods, { namespace: ns, labelSelector: 'app=plain' })).items[0], {
      timeoutMs: 120_000,
      message: 'the plain DaemonSet pod',
    });
    assert.equal(pod.metadata.annotations?.[VALIDATED_SCC_ANNOTATION], 'restricted-v2');
    const range = (await client.get(Namespaces, ns)).metadata.annotations?.[UID_RANGE_ANNOTATION] ?? '';
    const [start, size] = range.split('/').map(Number);
    const sc = (pod.spec as { containers: { securityContext?: Record<string, unknown> }[] }).containers[0]?.securityContext ?? {};
    assert.equal(sc.runAsUser, start, `runAsUser from ${range}`);
    assert.ok((start ?? 0) >= 1_000_000_000 && size === 10_000, range);
    assert.deepEqual(sc.capabilities, { drop: ['ALL'] });
    assert.equal(sc.allowPrivilegeEscalation, false);
  });

  test('openshift.io/required-scc is honoured', async () => {
    const { client } = cluster.dev;
    // The administrator may use every SCC: anyuid (priority 10) admits a plain pod, unless one is required.
    const free = await client.create(Pods, plainPod('admin-free'));
    assert.equal(free.metadata.annotations?.[VALIDATED_SCC_ANNOTATION], 'anyuid');
    const pinned = await client.create(Pods, plainPod('admin-pinned', { [REQUIRED_SCC_ANNOTATION]: 'restricted-v2' }));
    assert.equal(pinned.metadata.annotations?.[VALIDATED_SCC_ANNOTATION], 'restricted-v2');
    await assert.rejects(
      client.create(Pods, plainPod('admin-pinned-privileged', { [REQUIRED_SCC_ANNOTATION]: 'restricted-v2' }, true)),
      (e: unknown) => {
        const msg = (e as Error).message;
        assert.ok(isForbidden(e), msg);
        assert.match(msg, /unable to validate against any security context constraint: spec\.containers\[0\]\.securityContext\.privileged/);
        assert.doesNotMatch(msg, /provider "privileged"/, 'only the required SCC is tried');
        return true;
      },
    );
    await assert.rejects(
      client.create(Pods, plainPod('admin-pinned-missing', { [REQUIRED_SCC_ANNOTATION]: 'no-such-scc' })),
      /failed to retrieve the required SCC "no-such-scc"/,
    );
  });
});
