/**
 * The leaked pod VM collector on a Manual-mode cluster with short-lived credentials, on each cloud: osc
 * makes the collector's own CredentialsRequest (list and delete pod VMs, the operator's ServiceAccount),
 * the administrator runs ccoctl with it and applies the Secret it writes, and the operator trades its own
 * projected ServiceAccount token (here a real token of the dev cluster's API server, written where the
 * operator reads it, as the kubelet would) at the simulated cloud: AWS STS, Entra ID's client assertion,
 * Google's STS and generateAccessToken. With the adaptor's ccoctl step alone, a Warning event names the
 * collector's missing step (the adaptor's identity does not trust the operator). A VM tagged with the cluster that no pod owns is then deleted, with
 * the event and the metric. Before that, each refusal is a condition naming the fix (never a silent retry):
 * a token of a ServiceAccount the identity does not trust, a token for the wrong audience, an identity that
 * may list but not delete.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import {
  type AnyProviderSpec,
  type AWSProviderSpec,
  type AzureProviderSpec,
  CCO_NAMESPACE,
  type CredentialsRequest,
  CredentialsRequests,
  type GCPProviderSpec,
} from '../../src/api/cloudcredential.ts';
import { COLLECTOR_CCO_SECRET, PEER_PODS_CCO_SECRET } from '../../src/api/credentials-text.ts';
import { type KataConfig, KataConfigs } from '../../src/api/kataconfig.ts';
import { OPERATOR_NAMESPACE, OPERATOR_SERVICE_ACCOUNT, PEER_PODS_CM } from '../../src/api/names.ts';
import {
  CLUSTER_UID_TAG,
  LEAKED_VM_DELETED_EVENT,
  LEAKED_VMS_NOT_COLLECTED_EVENT,
  PODVM_DELETION_FAILED,
  PODVM_DELETION_FAILED_REASON,
  PODVM_LIST_FAILED_REASON,
} from '../../src/api/podvm-leaks.ts';
import { SimulatedAzure } from '../../src/devcluster/clouds/azure.ts';
import { ccoctlAws, ccoctlAzure, ccoctlGcp } from '../../src/devcluster/clouds/ccoctl.ts';
import { SimulatedGcp } from '../../src/devcluster/clouds/gcp.ts';
import type { DevCluster } from '../../src/devcluster/devcluster.ts';
import { ConfigMaps, Events, Namespaces, Secrets, ServiceAccounts } from '../../src/kube/resources.ts';
import { type RunningOperator, startOperator, useDevCluster } from '../support/operator.ts';
import { awsPeerPodsCm } from '../support/peerpods-fixtures.ts';
import { projectToken } from '../support/sa-token.ts';
import { waitFor } from '../support/wait.ts';

const NS = OPERATOR_NAMESPACE;
const KC = 'example-kataconfig';
const LONG = { timeoutMs: 180_000 };
const OLD = '2026-01-01T00:00:00.000Z';

interface CloudCase {
  platform: 'AWS' | 'Azure' | 'GCP';
  cloud: 'aws' | 'azure' | 'gcp';
  cm(dev: DevCluster): Record<string, string>;
  /** ccoctl with the request, less the delete permission when `noDelete`: the Secret's data. */
  ccoctl(dev: DevCluster, cr: CredentialsRequest<AnyProviderSpec>, noDelete: boolean): Record<string, string>;
  /** A VM tagged with the cluster, made long ago, that no pod owns: its ID. */
  leak(dev: DevCluster, clusterUID: string): string;
  untrusted: RegExp;
  wrongAudience: RegExp;
  noDelete: RegExp;
}

const azure = (dev: DevCluster) => {
  assert.ok(dev.cloud instanceof SimulatedAzure);
  return dev.cloud;
};
const gcp = (dev: DevCluster) => {
  assert.ok(dev.cloud instanceof SimulatedGcp);
  return dev.cloud;
};
const store = (dev: DevCluster) => {
  const v = dev.podVMs;
  assert.ok(v, 'the dev cluster has pod VMs');
  return v;
};

const CASES: CloudCase[] = [
  {
    platform: 'AWS',
    cloud: 'aws',
    cm: () => awsPeerPodsCm({ PODVM_AMI_ID: 'ami-0123456789abcdef0' }).data ?? {},
    ccoctl: (dev, cr, noDelete) => {
      const r = structuredClone(cr) as CredentialsRequest<AWSProviderSpec>;
      if (noDelete) for (const s of r.spec.providerSpec.statementEntries) s.action = s.action.filter((a) => a !== 'ec2:TerminateInstances');
      return ccoctlAws(dev.awsAccount, r);
    },
    leak: (dev, uid) => {
      const id = `i-${randomBytes(9).toString('hex').slice(0, 17)}`;
      store(dev).vms.set(id, {
        id,
        name: 'podvm-gone-1a2b3c4d',
        createdAt: OLD,
        tags: { Name: 'podvm-gone-1a2b3c4d', [CLUSTER_UID_TAG]: uid },
      });
      store(dev).regions.set(id, 'us-east-2');
      return id;
    },
    untrusted: /AccessDenied: Not authorized to perform sts:AssumeRoleWithWebIdentity/,
    wrongAudience: /InvalidIdentityToken: Incorrect token audience/,
    noDelete: /UnauthorizedOperation: .*is not authorized to perform: ec2:TerminateInstances/,
  },
  {
    platform: 'Azure',
    cloud: 'azure',
    cm: (dev) => {
      const a = azure(dev).account;
      return {
        CLOUD_PROVIDER: 'azure',
        AZURE_SUBSCRIPTION_ID: a.subscriptionId,
        AZURE_REGION: a.region,
        AZURE_RESOURCE_GROUP: a.resourceGroup,
        AZURE_SUBNET_ID: a.subnetId,
        AZURE_NSG_ID: a.nsgId,
        AZURE_IMAGE_ID: '',
      };
    },
    ccoctl: (dev, cr, noDelete) => {
      const r = structuredClone(cr) as CredentialsRequest<AzureProviderSpec>;
      if (noDelete) r.spec.providerSpec.permissions = (r.spec.providerSpec.permissions ?? []).filter((p) => !p.endsWith('/delete'));
      return ccoctlAzure(azure(dev), r);
    },
    leak: (dev, uid) => {
      const a = azure(dev).account;
      const id = `/subscriptions/${a.subscriptionId}/resourceGroups/${a.resourceGroup}/providers/Microsoft.Compute/virtualMachines/podvm-gone-1a2b3c4d`;
      store(dev).vms.set(id, { id, name: 'podvm-gone-1a2b3c4d', createdAt: OLD, tags: { [CLUSTER_UID_TAG]: uid } });
      store(dev).regions.set(id, a.region);
      return id;
    },
    untrusted:
      /AADSTS70021: No matching federated identity record found for presented assertion subject 'system:serviceaccount:openshift-sandboxed-containers-operator:default'/,
    wrongAudience: /AADSTS700212: No matching federated identity record found for presented assertion audience/,
    noDelete: /AuthorizationFailed: .*does not have authorization to perform action 'Microsoft.Compute\/virtualMachines\/delete'/,
  },
  {
    platform: 'GCP',
    cloud: 'gcp',
    cm: (dev) => {
      const a = gcp(dev).account;
      return {
        CLOUD_PROVIDER: 'gcp',
        GCP_PROJECT_ID: a.projectId,
        GCP_ZONE: `${a.region}-a`,
        GCP_NETWORK: `global/networks/${a.network}`,
        GCP_MACHINE_TYPE: 'e2-medium',
        PODVM_IMAGE_NAME: '',
      };
    },
    ccoctl: (dev, cr, noDelete) => {
      const r = structuredClone(cr) as CredentialsRequest<GCPProviderSpec>;
      if (noDelete) r.spec.providerSpec.permissions = (r.spec.providerSpec.permissions ?? []).filter((p) => !p.endsWith('.delete'));
      return ccoctlGcp(gcp(dev), r);
    },
    leak: (dev, uid) => {
      // Labelled with the cluster: what the collector lists by on Google Cloud.
      const id = 'podvm-gone-1a2b3c4d';
      store(dev).vms.set(id, { id, name: id, createdAt: OLD, tags: { [CLUSTER_UID_TAG]: uid } });
      store(dev).regions.set(id, `${gcp(dev).account.region}-a`);
      return id;
    },
    untrusted: /PERMISSION_DENIED: Permission 'iam.serviceAccounts.getAccessToken' denied/,
    wrongAudience: /invalid_grant: The audience in ID Token \[api:\/\/AzureADTokenExchange\] does not match the expected audience/,
    noDelete: /forbidden: Required 'compute.instances.delete' permission/,
  },
];

for (const k of CASES) {
  describe(`${k.platform}, Manual mode with short-lived tokens: the collector's own identity deletes a leaked pod VM`, () => {
    const cluster = useDevCluster({ workers: 1, platform: k.platform, rebootMs: 300, credentialsMode: 'Manual' });
    const dev = () => cluster.dev;
    const c = () => cluster.dev.client;
    const tokenFile = join(mkdtempSync(join(tmpdir(), 'osc-collector-token-')), 'token');
    let running: RunningOperator;
    let applied = 0;
    const project = (serviceAccount: string, audience = 'openshift') =>
      projectToken(c(), { namespace: NS, serviceAccount, audience, file: tokenFile });
    const condition = (reason: string, pattern: RegExp, what: string) =>
      waitFor(
        async () =>
          ((await c().get(KataConfigs, KC)) as KataConfig).status?.conditions?.find(
            (x) => x.type === PODVM_DELETION_FAILED && x.status === 'True' && x.reason === reason && pattern.test(x.message ?? ''),
          ),
        { ...LONG, message: `${PODVM_DELETION_FAILED} ${reason}: ${what}` },
      );
    /** The administrator applies what ccoctl wrote (a label marks each apply, as a changed Secret would). */
    const applySecret = async (data: Record<string, string>) => {
      applied++;
      const body = {
        apiVersion: 'v1',
        kind: 'Secret',
        metadata: { name: COLLECTOR_CCO_SECRET, namespace: NS, labels: { 'osc.test/applied': String(applied) } },
        stringData: data,
      };
      if (await c().find(Secrets, COLLECTOR_CCO_SECRET, NS)) await c().patch(Secrets, COLLECTOR_CCO_SECRET, body, { namespace: NS });
      else await c().create(Secrets, body);
    };
    const request = () =>
      waitFor(() => c().find(CredentialsRequests, `openshift-sandboxed-containers-${k.cloud}-podvm-collector`, CCO_NAMESPACE), {
        ...LONG,
        message: "the collector's CredentialsRequest",
      }) as Promise<CredentialsRequest<AnyProviderSpec>>;

    before(async () => {
      for (const sa of [OPERATOR_SERVICE_ACCOUNT, 'default']) {
        if (!(await c().find(ServiceAccounts, sa, NS)))
          await c().create(ServiceAccounts, { apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: sa, namespace: NS } });
      }
      // First a token of a ServiceAccount the identity does not trust.
      await project('default');
      running = await startOperator(dev(), { leakedVMs: { endpoint: dev().cloudAPI, graceMs: 1000, intervalMs: 500, tokenFile } });
      await c().create(ConfigMaps, {
        apiVersion: 'v1',
        kind: 'ConfigMap',
        metadata: { name: PEER_PODS_CM, namespace: NS },
        data: k.cm(dev()),
      });
      await c().create(KataConfigs, {
        apiVersion: 'kataconfiguration.openshift.io/v1',
        kind: 'KataConfig',
        metadata: { name: KC },
        spec: { enablePeerPods: true },
      } as KataConfig);
    });
    after(() => running?.stop());

    test("osc asks for the collector's identity: list and delete only, trusting the operator's ServiceAccount", async () => {
      const r = await request();
      assert.deepEqual(r.spec.serviceAccountNames, [OPERATOR_SERVICE_ACCOUNT]);
      assert.equal(r.spec.secretRef.name, COLLECTOR_CCO_SECRET);
      const actions = JSON.stringify(r.spec.providerSpec);
      assert.match(actions, k.cloud === 'aws' ? /ec2:DescribeInstances.*ec2:TerminateInstances/ : /read|list/);
    });

    test('refused: an untrusted ServiceAccount, the wrong audience, no delete permission; then the leaked VM goes', async () => {
      const uid = (await c().get(Namespaces, 'kube-system')).metadata.uid ?? '';
      const vm = k.leak(dev(), uid);
      // The adaptor's ccoctl step alone: its identity trusts the adaptor's ServiceAccounts, not the operator.
      const adaptorRequest = (await waitFor(
        () => c().find(CredentialsRequests, `openshift-sandboxed-containers-${k.cloud}`, CCO_NAMESPACE),
        { ...LONG, message: "the adaptor's CredentialsRequest" },
      )) as CredentialsRequest<AnyProviderSpec>;
      await c().create(Secrets, {
        apiVersion: 'v1',
        kind: 'Secret',
        metadata: { name: PEER_PODS_CCO_SECRET, namespace: NS },
        stringData: k.ccoctl(dev(), adaptorRequest, false),
      });
      await waitFor(
        async () =>
          (await c().list(Events, { namespace: 'default' })).items.some(
            (e) =>
              e.reason === LEAKED_VMS_NOT_COLLECTED_EVENT &&
              /trusts the adaptor's ServiceAccounts only: run ccoctl .* podvm-collector/.test((e as { note?: string }).note ?? ''),
          ),
        { ...LONG, message: 'a Warning event naming the missing ccoctl step' },
      );
      // ccoctl, with the request less its delete permission.
      await applySecret(k.ccoctl(dev(), await request(), true));
      await condition(PODVM_LIST_FAILED_REASON, k.untrusted, 'an untrusted ServiceAccount');
      const c1 = await condition(PODVM_LIST_FAILED_REASON, /rerun ccoctl/, 'the fix named');
      assert.match(c1.message ?? '', /ServiceAccount osc-controller-manager/);
      await project(OPERATOR_SERVICE_ACCOUNT, 'api://AzureADTokenExchange');
      await condition(PODVM_LIST_FAILED_REASON, k.wrongAudience, 'the wrong audience');
      assert.ok(store(dev()).vms.has(vm), 'nothing deleted while refused');
      await project(OPERATOR_SERVICE_ACCOUNT);
      const c3 = await condition(PODVM_DELETION_FAILED_REASON, k.noDelete, 'no delete permission');
      assert.match(c3.message ?? '', new RegExp(vm.replace(/[/.]/g, '\\$&')));
      assert.ok(store(dev()).vms.has(vm));
      // ccoctl again with the whole request, applied: tried again and deleted.
      await applySecret(k.ccoctl(dev(), await request(), false));
      await waitFor(() => !store(dev()).vms.has(vm), { ...LONG, message: 'the leaked VM deleted' });
      await waitFor(
        async () =>
          ((await c().get(KataConfigs, KC)) as KataConfig).status?.conditions?.find((x) => x.type === PODVM_DELETION_FAILED) === undefined,
        { ...LONG, message: 'the condition cleared' },
      );
      const events = (await c().list(Events, { namespace: 'default' })).items.filter((e) => e.reason === LEAKED_VM_DELETED_EVENT);
      assert.ok(
        events.some((e) => (e as { note?: string }).note?.includes(vm)),
        'an event names the VM',
      );
      const m = await running.operator.manager.metrics.registry.metrics();
      assert.match(m, new RegExp(`^osc_peerpods_leaked_vms_deleted_total\\{cloud="${k.cloud}"\\} 1$`, 'm'));
      assert.match(m, new RegExp(`^osc_peerpods_leaked_vm_delete_failures_total\\{cloud="${k.cloud}"\\} 1$`, 'm'));
    });
  });
}
