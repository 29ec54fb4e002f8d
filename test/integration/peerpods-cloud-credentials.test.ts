/**
 * The Azure and Google Cloud procedures with no Secret step (docs/cloud-credentials.md), on the dev
 * cluster's simulated Cloud Credential Operator and clouds: in the default mode the operator hands out the
 * cluster's service principal (Azure, passthrough) or mints a service account key (Google Cloud); in Manual
 * mode the administrator runs ccoctl and applies the Secret it writes (workload identity). Each ends with the
 * image built, the adaptor running and a peer pod's VM made with those credentials. The bad rows: the
 * minted Secret deleted by hand (written again, the old key refused), a role missing (the cloud refuses the
 * VM), Manual mode without a Secret (a condition naming ccoctl), Mint mode on Azure (which the CCO has not there),
 * Google Cloud root credentials that may not mint (insufficient, then passed through).
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import {
  AZURE_ROOT_SECRET,
  type AzureProviderSpec,
  CCO_NAMESPACE,
  type CredentialsRequest,
  CredentialsRequests,
  GCP_ROOT_SECRET,
  type GCPProviderSpec,
  ROOT_CREDENTIALS_MODE_ANNOTATION,
} from '../../src/api/cloudcredential.ts';
import { PEER_PODS_CCO_SECRET } from '../../src/api/credentials-text.ts';
import { type KataConfig, KataConfigs } from '../../src/api/kataconfig.ts';
import { CAA_DAEMONSET, KATA_REMOTE_RUNTIME_CLASS, OPERATOR_NAMESPACE, PEER_PODS_CM } from '../../src/api/names.ts';
import { SimulatedAzure } from '../../src/devcluster/clouds/azure.ts';
import { ccoctlAzure, ccoctlGcp } from '../../src/devcluster/clouds/ccoctl.ts';
import { SimulatedGcp } from '../../src/devcluster/clouds/gcp.ts';
import type { DevCluster } from '../../src/devcluster/devcluster.ts';
import { ConfigMaps, DaemonSets, Events, type Pod, Pods, RuntimeClasses, Secrets } from '../../src/kube/resources.ts';
import { useDevCluster, useOperator } from '../support/operator.ts';
import { waitFor } from '../support/wait.ts';

const NS = OPERATOR_NAMESPACE;
const KC = 'example-kataconfig';
const LONG = { timeoutMs: 180_000 };
const kataConfigYaml = `apiVersion: kataconfiguration.openshift.io/v1
kind: KataConfig
metadata:
  name: ${KC}
spec:
  enablePeerPods: true
`;

const azureCm = (a: SimulatedAzure['account']) => `apiVersion: v1
kind: ConfigMap
metadata:
  name: peer-pods-cm
  namespace: ${NS}
data:
  CLOUD_PROVIDER: "azure"
  VXLAN_PORT: "9000"
  AZURE_INSTANCE_SIZES: "Standard_B2als_v2,Standard_D2as_v5"
  AZURE_INSTANCE_SIZE: "Standard_B2als_v2"
  AZURE_RESOURCE_GROUP: "${a.resourceGroup}"
  AZURE_REGION: "${a.region}"
  AZURE_SUBNET_ID: "${a.subnetId}"
  AZURE_NSG_ID: "${a.nsgId}"
  AZURE_IMAGE_ID: ""
  AZURE_SUBSCRIPTION_ID: "${a.subscriptionId}"
  DISABLECVM: "true"
`;

const gcpCm = (a: SimulatedGcp['account']) => `apiVersion: v1
kind: ConfigMap
metadata:
  name: peer-pods-cm
  namespace: ${NS}
data:
  CLOUD_PROVIDER: "gcp"
  VXLAN_PORT: "9000"
  GCP_PROJECT_ID: "${a.projectId}"
  GCP_ZONE: "${a.region}-a"
  GCP_NETWORK: "global/networks/${a.network}"
  GCP_MACHINE_TYPE: "e2-medium"
  PODVM_IMAGE_NAME: ""
  DISABLECVM: "true"
`;

const probePod = (name: string): Pod => ({
  apiVersion: 'v1',
  kind: 'Pod',
  metadata: { name, namespace: 'default' },
  spec: { runtimeClassName: KATA_REMOTE_RUNTIME_CLASS, containers: [{ name: 'c', image: 'registry.access.redhat.com/ubi9/ubi:9.3' }] },
});

function helpers(cluster: { readonly dev: DevCluster }, cloud: 'azure' | 'gcp') {
  const c = () => cluster.dev.client;
  const imageKey = cloud === 'azure' ? 'AZURE_IMAGE_ID' : 'PODVM_IMAGE_NAME';
  const requestName = `openshift-sandboxed-containers-${cloud}`;
  const ok = async (args: string[], input?: string) => {
    const r = await cluster.dev.controlPlane.kubectl(args, { input });
    assert.equal(r.code, 0, `kubectl ${args.join(' ')}: ${r.stderr}`);
    return r.stdout;
  };
  const configValid = async () =>
    ((await c().find(KataConfigs, KC)) as KataConfig | undefined)?.status?.conditions?.find((x) => x.type === 'PeerPodsConfigValid');
  /** Waits for PeerPodsConfigValid False with a message matching `pattern`; answers the condition. */
  const configInvalid = (pattern: RegExp, what: string) =>
    waitFor(
      async () => {
        const x = await configValid();
        return x?.status === 'False' && pattern.test(x.message ?? '') ? x : undefined;
      },
      { ...LONG, message: `PeerPodsConfigValid False: ${what}` },
    );
  const request = () => c().find(CredentialsRequests, requestName, CCO_NAMESPACE);
  const ccoSecret = () => c().find(Secrets, PEER_PODS_CCO_SECRET, NS);
  const image = async () => (await c().find(ConfigMaps, PEER_PODS_CM, NS))?.data?.[imageKey] ?? '';
  let probes = 0;
  /** A peer pod runs on a VM the adaptor made with its credentials: answers the VM, then deletes the pod (and the adaptor the VM). */
  const podVmRuns = async () => {
    const name = `probe-${++probes}`;
    await waitFor(() => c().find(RuntimeClasses, KATA_REMOTE_RUNTIME_CLASS), { ...LONG, message: 'kata-remote offered' });
    await c().create(Pods, probePod(name));
    const vms = cluster.dev.podVMs;
    assert.ok(vms);
    const vm = await waitFor(
      async () => {
        const p = await c().get(Pods, name, 'default');
        return p.status?.phase === 'Running' ? vms.recorded(p.metadata.uid ?? '') : undefined;
      },
      { ...LONG, message: `the adaptor runs a VM for ${name}` },
    );
    await c().delete(Pods, name, { namespace: 'default', gracePeriodSeconds: 0 });
    await waitFor(() => !vms.vms.has(vm), { ...LONG, message: `the VM of ${name} deleted by the adaptor` });
    return vm;
  };
  /** A peer pod the cloud refuses a VM: its FailedCreatePodSandBox message (the pod is left). */
  const podVmRefused = async (name: string) => {
    await c().create(Pods, probePod(name));
    return waitFor(
      async () =>
        (await c().list(Events, { namespace: 'default' })).items.find(
          (e) => e.reason === 'FailedCreatePodSandBox' && e.regarding?.name === name && /creating an instance/.test(e.note ?? ''),
        )?.note,
      { ...LONG, message: `FailedCreatePodSandBox for ${name}` },
    );
  };
  const adaptorReady = () =>
    waitFor(async () => Number((await c().find(DaemonSets, CAA_DAEMONSET, NS))?.status?.numberReady ?? 0) >= 1, {
      ...LONG,
      message: 'the adaptor ready',
    });
  return { c, ok, configValid, configInvalid, request, ccoSecret, image, podVmRuns, podVmRefused, adaptorReady, requestName };
}

const decode = (s: { data?: Record<string, string> } | undefined, k: string) => Buffer.from(s?.data?.[k] ?? '', 'base64').toString();

describe('Azure: the documented procedure with no Secret step (the CCO passes the cluster service principal through)', () => {
  const cluster = useDevCluster({ workers: 1, platform: 'Azure', rebootMs: 300 });
  useOperator(cluster, KC);
  const h = helpers(cluster, 'azure');
  const azure = () => {
    assert.ok(cluster.dev.cloud instanceof SimulatedAzure);
    return cluster.dev.cloud;
  };

  test('peer-pods-cm and the KataConfig only: the request, cco-secret, the image, the adaptor and a peer pod', async () => {
    await h.ok(['apply', '-f', '-'], azureCm(azure().account));
    await h.ok(['create', '-f', '-'], kataConfigYaml);
    const r = (await waitFor(h.request, { ...LONG, message: 'the Azure request' })) as CredentialsRequest<AzureProviderSpec>;
    assert.equal(r.spec.providerSpec.kind, 'AzureProviderSpec');
    assert.deepEqual(r.spec.providerSpec.roleBindings, []);
    assert.ok(r.spec.providerSpec.permissions?.includes('Microsoft.Compute/virtualMachines/write'));
    const s = await waitFor(h.ccoSecret, { ...LONG, message: 'cco-secret passed through' });
    const root = await h.c().get(Secrets, AZURE_ROOT_SECRET.name, AZURE_ROOT_SECRET.namespace);
    assert.equal(decode(s, 'azure_client_id'), decode(root, 'azure_client_id'), "the cluster's service principal");
    await waitFor(async () => (await h.image()).includes('/galleries/podvm_gallery/'), { ...LONG, message: 'the image built' });
    await waitFor(async () => (await h.configValid())?.status === 'True', { ...LONG, message: 'PeerPodsConfigValid' });
    await h.adaptorReady();
    const spec = JSON.stringify((await h.c().get(DaemonSets, CAA_DAEMONSET, NS)).spec?.template.spec);
    assert.match(spec, /"name":"AZURE_CLIENT_SECRET","valueFrom":\{"secretKeyRef":\{"name":"cco-secret","key":"azure_client_secret"\}\}/);
    assert.match(await h.podVmRuns(), /\/virtualMachines\//);
  });

  test('a role missing (the service principal only a Reader): the VM is refused with ARM AuthorizationFailed; restored, it runs', async () => {
    const s = await h.ccoSecret();
    const clientId = decode(s, 'azure_client_id');
    const roles = azure().tenant.rolesOf(clientId) ?? [];
    azure().tenant.setRoles(clientId, ['Reader']);
    assert.match(
      await h.podVmRefused('reader-only'),
      /ERROR CODE: AuthorizationFailed\n.*does not have authorization to perform action 'Microsoft\.Compute\/virtualMachines\/write'/,
    );
    azure().tenant.setRoles(clientId, roles);
    await waitFor(async () => (await h.c().get(Pods, 'reader-only', 'default')).status?.phase === 'Running', {
      ...LONG,
      message: 'the refused pod runs once the role is back',
    });
    await h.c().delete(Pods, 'reader-only', { namespace: 'default', gracePeriodSeconds: 0 });
  });

  test('cco-secret deleted by hand: the CCO writes it again, and peer pods go on', async () => {
    const before = await h.ccoSecret();
    await h.c().delete(Secrets, PEER_PODS_CCO_SECRET, { namespace: NS });
    const after = await waitFor(
      async () => {
        const s = await h.ccoSecret();
        return s && s.metadata.uid !== before?.metadata.uid ? s : undefined;
      },
      { ...LONG, message: 'cco-secret written again' },
    );
    assert.equal(decode(after, 'azure_client_id'), decode(before, 'azure_client_id'));
    assert.match(await h.podVmRuns(), /\/virtualMachines\//);
  });
});

describe('Azure in Manual mode: the ccoctl steps (a managed identity, workload identity)', () => {
  const cluster = useDevCluster({ workers: 1, platform: 'Azure', rebootMs: 300, credentialsMode: 'Manual' });
  useOperator(cluster, KC);
  const h = helpers(cluster, 'azure');
  const azure = () => {
    assert.ok(cluster.dev.cloud instanceof SimulatedAzure);
    return cluster.dev.cloud;
  };

  test('no Secret: a condition naming ccoctl azure create-managed-identities; nothing runs', async () => {
    await h.ok(['apply', '-f', '-'], azureCm(azure().account));
    await h.ok(['create', '-f', '-'], kataConfigYaml);
    const v = await h.configInvalid(/Manual mode/, 'Manual mode');
    assert.match(
      v.message ?? '',
      /run ccoctl azure create-managed-identities with CredentialsRequest openshift-sandboxed-containers-azure .* or create peer-pods-secret \(oc create secret generic peer-pods-secret .*AZURE_CLIENT_ID/,
    );
    assert.equal((await waitFor(h.request, LONG)).status, undefined, 'the CCO leaves requests alone in Manual mode');
    assert.equal(await h.c().find(DaemonSets, CAA_DAEMONSET, NS), undefined);
  });

  test("ccoctl's Secret: the image built and peer pods run with the federated token, no client secret anywhere", async () => {
    const r = (await waitFor(h.request, LONG)) as CredentialsRequest<AzureProviderSpec>;
    const data = ccoctlAzure(azure(), r);
    await h.ok(
      ['apply', '-f', '-'],
      JSON.stringify({ apiVersion: 'v1', kind: 'Secret', metadata: { name: PEER_PODS_CCO_SECRET, namespace: NS }, stringData: data }),
    );
    await waitFor(async () => (await h.image()).includes('/galleries/podvm_gallery/'), { ...LONG, message: 'the image built' });
    await h.adaptorReady();
    const spec = JSON.stringify((await h.c().get(DaemonSets, CAA_DAEMONSET, NS)).spec?.template.spec);
    assert.match(spec, /"name":"AZURE_FEDERATED_TOKEN_FILE","value":"\/var\/run\/secrets\/openshift\/serviceaccount\/token"/);
    assert.doesNotMatch(spec, /AZURE_CLIENT_SECRET/);
    assert.match(await h.podVmRuns(), /\/virtualMachines\//);
    // An identity without the request's permissions is refused by ARM.
    azure().tenant.setRoles(data.azure_client_id ?? '', ['Reader']);
    assert.match(await h.podVmRefused('no-permissions'), /AuthorizationFailed/);
  });
});

describe('Azure with the CCO forced into Mint mode (which it has not on Azure): the request fails, the condition says what to set', () => {
  const cluster = useDevCluster({ workers: 1, platform: 'Azure', rebootMs: 300, credentialsMode: 'Mint' });
  useOperator(cluster, KC);
  const h = helpers(cluster, 'azure');

  test('no Secret is written; PeerPodsConfigValid names the mode to set; nothing runs', async () => {
    const cloud = cluster.dev.cloud;
    assert.ok(cloud instanceof SimulatedAzure);
    await h.ok(['apply', '-f', '-'], azureCm(cloud.account));
    await h.ok(['create', '-f', '-'], kataConfigYaml);
    const r = await waitFor(
      async () =>
        ((await h.request())?.status?.conditions ?? []).find((c) => c.type === 'CredentialsProvisionFailure' && c.status === 'True'),
      { ...LONG, message: 'the request failed' },
    );
    assert.match(r.message ?? '', /annotation on admin credentials Secret/);
    const v = await h.configInvalid(/no Mint mode on Azure/, 'naming the mode');
    assert.match(v.message ?? '', /set spec\.credentialsMode of CloudCredential cluster to '' or Passthrough/);
    assert.equal(await h.ccoSecret(), undefined, 'nothing minted on Azure');
    assert.equal(await h.c().find(DaemonSets, CAA_DAEMONSET, NS), undefined);
  });
});

describe('Google Cloud: the documented procedure with no Secret step (the CCO mints a service account key)', () => {
  const cluster = useDevCluster({ workers: 1, platform: 'GCP', rebootMs: 300 });
  useOperator(cluster, KC);
  const h = helpers(cluster, 'gcp');
  const gcp = () => {
    assert.ok(cluster.dev.cloud instanceof SimulatedGcp);
    return cluster.dev.cloud;
  };
  const keyOf = (s: { data?: Record<string, string> } | undefined) =>
    JSON.parse(decode(s, 'service_account.json') || '{}') as { private_key_id?: string; client_email?: string };

  test('peer-pods-cm and the KataConfig only: a service account with the custom role, its key, the image, a peer pod', async () => {
    await h.ok(['apply', '-f', '-'], gcpCm(gcp().account));
    await h.ok(['create', '-f', '-'], kataConfigYaml);
    const r = (await waitFor(h.request, { ...LONG, message: 'the GCP request' })) as CredentialsRequest<GCPProviderSpec>;
    assert.equal(r.spec.providerSpec.kind, 'GCPProviderSpec');
    const s = await waitFor(h.ccoSecret, { ...LONG, message: 'cco-secret minted' });
    const email = keyOf(s).client_email ?? '';
    // As the real operator names it: the infrastructure name cut to 12, the request's to 11, 5 random characters.
    assert.match(email, /^[a-z0-9-]{1,12}-openshift-s-[bcdfghjklmnpqrstvwxz2456789]{5}@.*\.iam\.gserviceaccount\.com$/);
    await waitFor(async () => /^podvm-image-[0-9a-f]{8}$/.test(await h.image()), { ...LONG, message: 'the image built' });
    await h.adaptorReady();
    assert.match(await h.podVmRuns(), /^podvm-/);
    // The minted account is allowed exactly what it was asked for, and used no more.
    for (const p of gcp().iam.allowed.get(email) ?? []) assert.ok(r.spec.providerSpec.permissions?.includes(p), p);
    assert.equal(gcp().iam.allows(email, 'compute.firewalls.create'), false, 'nothing beyond the request');
  });

  test('cco-secret deleted by hand: a new key, the old one refused, and peer pods go on with the new', async () => {
    const before = keyOf(await h.ccoSecret());
    await h.c().delete(Secrets, PEER_PODS_CCO_SECRET, { namespace: NS });
    const after = await waitFor(
      async () => {
        const k = keyOf(await h.ccoSecret());
        return k.private_key_id && k.private_key_id !== before.private_key_id ? k : undefined;
      },
      { ...LONG, message: 'a new key minted' },
    );
    assert.equal(after.client_email, before.client_email, 'the same service account');
    assert.equal(gcp().iam.keyOf(before.private_key_id ?? ''), undefined, 'the old key deleted');
    assert.match(await h.podVmRuns(), /^podvm-/);
  });

  test('a role missing (the custom role unbound): the VM is refused with googleapi 403', async () => {
    const email = keyOf(await h.ccoSecret()).client_email ?? '';
    const roles = gcp().iam.rolesOf(email) ?? [];
    gcp().iam.setRoles(email, []);
    assert.match(await h.podVmRefused('unbound'), /googleapi: Error 403: Required 'compute\.instances\.create' permission/);
    gcp().iam.setRoles(email, roles);
    await waitFor(async () => (await h.c().get(Pods, 'unbound', 'default')).status?.phase === 'Running', {
      ...LONG,
      message: 'the refused pod runs once the role is bound again',
    });
  });
});

describe('Google Cloud, root credentials that may not mint: insufficient, then passed through once they hold the request', () => {
  const cluster = useDevCluster({ workers: 1, platform: 'GCP', rebootMs: 300 });
  useOperator(cluster, KC);
  const h = helpers(cluster, 'gcp');
  const keyOf = (s: { data?: Record<string, string> } | undefined) =>
    JSON.parse(decode(s, 'service_account.json') || '{}') as { private_key_id?: string; client_email?: string };
  const rootSecret = () => h.c().get(Secrets, GCP_ROOT_SECRET.name, GCP_ROOT_SECRET.namespace);

  test("a viewer: InsufficientCloudCreds in the request and the condition; the request's permissions: the root key itself", async () => {
    const gcp = cluster.dev.cloud;
    assert.ok(gcp instanceof SimulatedGcp);
    const rootEmail = keyOf(await rootSecret()).client_email ?? '';
    assert.ok(gcp.iam.hasServiceAccount(rootEmail));
    gcp.iam.setRoles(rootEmail, ['roles/viewer']);
    await h.ok(['apply', '-f', '-'], gcpCm(gcp.account));
    await h.ok(['create', '-f', '-'], kataConfigYaml);
    const r = (await waitFor(h.request, LONG)) as CredentialsRequest<GCPProviderSpec>;
    await waitFor(
      async () => ((await h.request())?.status?.conditions ?? []).find((c) => c.type === 'InsufficientCloudCreds' && c.status === 'True'),
      { ...LONG, message: 'InsufficientCloudCreds on the request' },
    );
    await h.configInvalid(/InsufficientCloudCreds/, 'repeats it');
    assert.equal((await rootSecret()).metadata.annotations?.[ROOT_CREDENTIALS_MODE_ANNOTATION], 'insufficient');
    assert.equal(await h.ccoSecret(), undefined, 'nothing minted with a viewer key');
    // The administrator gives the installer's account exactly the request's permissions and rotates its key.
    gcp.iam.setRoles(rootEmail, [gcp.iam.createCustomRole('peerpods_only', r.spec.providerSpec.permissions ?? [])]);
    const keyId = await cluster.dev.cco.rotateRootCredentials();
    const s = await waitFor(async () => ((k) => (k.private_key_id === keyId ? k : undefined))(keyOf(await h.ccoSecret())), {
      ...LONG,
      message: 'cco-secret holds the root key',
    });
    assert.equal(s.client_email, rootEmail, 'passed through, not minted');
    assert.equal((await rootSecret()).metadata.annotations?.[ROOT_CREDENTIALS_MODE_ANNOTATION], 'passthrough');
    await h.adaptorReady();
    assert.match(await h.podVmRuns(), /^podvm-/);
  });
});

describe('Google Cloud in Manual mode: the ccoctl steps (workload identity federation)', () => {
  const cluster = useDevCluster({ workers: 1, platform: 'GCP', rebootMs: 300, credentialsMode: 'Manual' });
  useOperator(cluster, KC);
  const h = helpers(cluster, 'gcp');
  const gcp = () => {
    assert.ok(cluster.dev.cloud instanceof SimulatedGcp);
    return cluster.dev.cloud;
  };

  test('no Secret: a condition naming ccoctl gcp create-service-accounts; then its Secret runs peer pods', async () => {
    await h.ok(['apply', '-f', '-'], gcpCm(gcp().account));
    await h.ok(['create', '-f', '-'], kataConfigYaml);
    const v = await h.configInvalid(/Manual mode/, 'Manual mode');
    assert.match(v.message ?? '', /run ccoctl gcp create-service-accounts with CredentialsRequest openshift-sandboxed-containers-gcp/);
    const r = (await waitFor(h.request, LONG)) as CredentialsRequest<GCPProviderSpec>;
    // A configuration that is not JSON is reported with its fix.
    await h.ok(
      ['apply', '-f', '-'],
      JSON.stringify({
        apiVersion: 'v1',
        kind: 'Secret',
        metadata: { name: PEER_PODS_CCO_SECRET, namespace: NS },
        stringData: { 'service_account.json': '{' },
      }),
    );
    await h.configInvalid(/service_account\.json is not JSON/, 'the broken Secret reported');
    await h.ok(
      ['apply', '-f', '-'],
      JSON.stringify({
        apiVersion: 'v1',
        kind: 'Secret',
        metadata: { name: PEER_PODS_CCO_SECRET, namespace: NS },
        stringData: ccoctlGcp(gcp(), r),
      }),
    );
    await waitFor(async () => /^podvm-image-[0-9a-f]{8}$/.test(await h.image()), { ...LONG, message: 'the image built' });
    await h.adaptorReady();
    const spec = JSON.stringify((await h.c().get(DaemonSets, CAA_DAEMONSET, NS)).spec?.template.spec);
    assert.match(spec, /"name":"GOOGLE_APPLICATION_CREDENTIALS","value":"\/var\/run\/secrets\/cloud-credentials\/service_account.json"/);
    assert.doesNotMatch(spec, /GCP_CREDENTIALS/);
    assert.match(await h.podVmRuns(), /^podvm-/);
  });
});
