/**
 * Peer pods on Azure (src/peerpods/clouds/azure/): the documented peer-pods-cm, every bad value of its keys
 * and of peer-pods-secret with its message, and pod VM sizes chosen from Azure's table.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { ConfigMap, Secret } from '../../src/kube/resources.ts';
import { AZURE_VM_SIZES } from '../../src/peerpods/clouds/azure/facts.ts';
import { azure } from '../../src/peerpods/clouds/azure/provider.ts';
import { validatePeerPodsConfig } from '../../src/peerpods/config.ts';
import { mutatePeerPod } from '../../src/peerpods/mutate.ts';
import { AZURE_NSG_ID, AZURE_SUBNET_ID, AZURE_SUBSCRIPTION, azureData, azureSecret } from '../support/clouds.ts';

const NS = 'openshift-sandboxed-containers-operator';
const cmOf = (data: Record<string, string>): ConfigMap => ({ metadata: { name: 'peer-pods-cm', namespace: NS }, data });
const secretOf = (stringData: Record<string, string>): Secret => ({ metadata: { name: 'peer-pods-secret', namespace: NS }, stringData });
const withData = (change: Record<string, string | null>) => {
  const data = azureData();
  for (const [k, v] of Object.entries(change)) {
    if (v === null) delete data[k];
    else data[k] = v;
  }
  return cmOf(data);
};

const RG_LOOKUP = "oc get infrastructure/cluster -o jsonpath='{.status.platformStatus.azure.resourceGroupName}'";
const REGION_FIX = "set it to the resource group's region (az group show --resource-group <resource group> --query location -o tsv)";
const SUBNET_FIX =
  "set it to the workers' subnet ID (az network vnet subnet list --resource-group <resource group> --vnet-name <vnet> --query \"[].{Id:id} | [? contains(Id, 'worker')]\" -o tsv)";
const NSG_FIX =
  'set it to the network security group ID (az network nsg list --resource-group <resource group> --query "[].{Id:id}" -o tsv)';
const SUBNET_SHAPE =
  '/subscriptions/<subscription id>/resourceGroups/<resource group>/providers/Microsoft.Network/virtualNetworks/<vnet>/subnets/<subnet>';
const q = (v: string) => JSON.stringify(v.length > 64 ? `${v.slice(0, 64)}...` : v);

describe('Azure: the documented peer-pods-cm', () => {
  test('gives a typed configuration with the Azure settings', () => {
    const r = validatePeerPodsConfig(cmOf(azureData()), secretOf(azureSecret()));
    assert.deepEqual(r.problems, []);
    assert.deepEqual(r.warnings, []);
    assert.deepEqual(
      { ...r.config, data: undefined },
      {
        cloudProvider: 'azure',
        vxlanPort: 9000,
        proxyTimeout: '5m',
        proxyTimeoutMs: 300_000,
        instanceType: 'Standard_B2als_v2',
        instanceTypes: ['Standard_B2als_v2', 'Standard_D2as_v5', 'Standard_D4as_v5', 'Standard_D2ads_v5'],
        allowedInstanceTypes: ['Standard_B2als_v2', 'Standard_D2as_v5', 'Standard_D4as_v5', 'Standard_D2ads_v5'],
        imageId: '',
        subscriptionId: AZURE_SUBSCRIPTION,
        region: 'eastus',
        resourceGroup: 'osc-dev-abcde-rg',
        subnetId: AZURE_SUBNET_ID,
        nsgId: AZURE_NSG_ID,
        tags: { key1: 'value1', key2: 'value2' },
        limitPerNode: 10,
        rootVolumeSizeGB: 6,
        disableCVM: true,
        secretKeys: ['AZURE_CLIENT_ID', 'AZURE_CLIENT_SECRET', 'AZURE_TENANT_ID'],
        data: undefined,
      },
    );
  });

  test('only the required keys: the docs default size, which is then the only one allowed', () => {
    const data = azureData();
    for (const k of ['AZURE_INSTANCE_SIZES', 'AZURE_INSTANCE_SIZE', 'VXLAN_PORT', 'PROXY_TIMEOUT', 'TAGS', 'AZURE_IMAGE_ID'])
      delete data[k];
    const r = validatePeerPodsConfig(cmOf(data), secretOf(azureSecret()));
    assert.deepEqual(r.problems, []);
    assert.equal(r.config?.instanceType, 'Standard_B2als_v2');
    assert.deepEqual(r.config?.allowedInstanceTypes, ['Standard_B2als_v2']);
  });

  test('a gallery image, a managed image and a community image are image IDs', () => {
    for (const id of [
      `/subscriptions/${AZURE_SUBSCRIPTION}/resourceGroups/rg/providers/Microsoft.Compute/galleries/podvm_gallery/images/podvm/versions/0.0.1`,
      `/subscriptions/${AZURE_SUBSCRIPTION}/resourceGroups/rg/providers/Microsoft.Compute/images/podvm-image`,
      '/CommunityGalleries/cocopodvm-d0e4f35f-5530-4b9c-8596-112487cdea85/Images/podvm_image0/Versions/latest',
    ]) {
      const r = validatePeerPodsConfig(withData({ AZURE_IMAGE_ID: id }), secretOf(azureSecret()));
      assert.deepEqual(r.problems, [], id);
      assert.equal(r.config?.imageId, id);
    }
  });
});

/** Bad input: each row changes one key and must give exactly this problem. */
const badConfigMaps: { name: string; change: Record<string, string | null>; key: string; message: string }[] = [
  {
    name: 'AZURE_SUBSCRIPTION_ID missing',
    change: { AZURE_SUBSCRIPTION_ID: null },
    key: 'AZURE_SUBSCRIPTION_ID',
    message:
      'AZURE_SUBSCRIPTION_ID is missing from ConfigMap peer-pods-cm: it is required for azure; set it to the subscription\'s ID (az account list --query "[?isDefault].id" -o tsv)',
  },
  {
    name: 'AZURE_SUBSCRIPTION_ID empty',
    change: { AZURE_SUBSCRIPTION_ID: '' },
    key: 'AZURE_SUBSCRIPTION_ID',
    message:
      'AZURE_SUBSCRIPTION_ID is empty in ConfigMap peer-pods-cm: it is required for azure; set it to the subscription\'s ID (az account list --query "[?isDefault].id" -o tsv)',
  },
  {
    name: 'AZURE_SUBSCRIPTION_ID a name, not an ID',
    change: { AZURE_SUBSCRIPTION_ID: 'Pay-As-You-Go' },
    key: 'AZURE_SUBSCRIPTION_ID',
    message:
      'AZURE_SUBSCRIPTION_ID is "Pay-As-You-Go": it is not a subscription ID (a UUID); set it to the subscription\'s ID (az account list --query "[?isDefault].id" -o tsv)',
  },
  {
    name: 'AZURE_REGION left as the placeholder',
    change: { AZURE_REGION: '<azure_region>' },
    key: 'AZURE_REGION',
    message: `AZURE_REGION is "<azure_region>", the placeholder from the example: replace it with the resource group's region (az group show --resource-group <resource group> --query location -o tsv)`,
  },
  {
    name: 'AZURE_REGION as the portal shows it',
    change: { AZURE_REGION: 'East US' },
    key: 'AZURE_REGION',
    message: 'AZURE_REGION is "East US": Azure region names are lower case without spaces; set it to "eastus"',
  },
  {
    name: 'AZURE_REGION misspelt',
    change: { AZURE_REGION: 'westeurpoe' },
    key: 'AZURE_REGION',
    message: `AZURE_REGION is "westeurpoe": it is not an Azure region (did you mean "westeurope"?); ${REGION_FIX}`,
  },
  {
    name: 'AZURE_REGION unknown',
    change: { AZURE_REGION: 'us-east-1' },
    key: 'AZURE_REGION',
    message: `AZURE_REGION is "us-east-1": it is not an Azure region; ${REGION_FIX}`,
  },
  {
    name: 'AZURE_RESOURCE_GROUP missing',
    change: { AZURE_RESOURCE_GROUP: null },
    key: 'AZURE_RESOURCE_GROUP',
    message: `AZURE_RESOURCE_GROUP is missing from ConfigMap peer-pods-cm: it is required for azure; set it to the cluster's resource group (${RG_LOOKUP})`,
  },
  {
    name: 'AZURE_RESOURCE_GROUP ending with a period',
    change: { AZURE_RESOURCE_GROUP: 'osc-rg.' },
    key: 'AZURE_RESOURCE_GROUP',
    message: `AZURE_RESOURCE_GROUP is "osc-rg.": it is not a resource group name (up to 90 letters, digits, _ - . ( ), not ending with a period); set it to the cluster's resource group (${RG_LOOKUP})`,
  },
  {
    name: 'AZURE_SUBNET_ID a subnet name, not its resource ID',
    change: { AZURE_SUBNET_ID: 'osc-dev-abcde-worker-subnet' },
    key: 'AZURE_SUBNET_ID',
    message: `AZURE_SUBNET_ID is "osc-dev-abcde-worker-subnet": it is not a subnet resource ID (${SUBNET_SHAPE}); ${SUBNET_FIX}`,
  },
  {
    name: 'AZURE_SUBNET_ID the virtual network, without /subnets/',
    change: { AZURE_SUBNET_ID: AZURE_SUBNET_ID.replace(/\/subnets\/.*$/, '') },
    key: 'AZURE_SUBNET_ID',
    message: `AZURE_SUBNET_ID is ${q(AZURE_SUBNET_ID.replace(/\/subnets\/.*$/, ''))}: it is not a subnet resource ID (${SUBNET_SHAPE}); ${SUBNET_FIX}`,
  },
  {
    name: 'AZURE_SUBNET_ID with a subscription that is not a UUID',
    change: { AZURE_SUBNET_ID: AZURE_SUBNET_ID.replace(AZURE_SUBSCRIPTION, 'my-subscription') },
    key: 'AZURE_SUBNET_ID',
    message: `AZURE_SUBNET_ID is ${q(AZURE_SUBNET_ID.replace(AZURE_SUBSCRIPTION, 'my-subscription'))}: it is not a subnet resource ID (${SUBNET_SHAPE}); ${SUBNET_FIX}`,
  },
  {
    name: 'AZURE_NSG_ID a name',
    change: { AZURE_NSG_ID: 'osc-dev-abcde-nsg' },
    key: 'AZURE_NSG_ID',
    message:
      'AZURE_NSG_ID is "osc-dev-abcde-nsg": it is not a network security group resource ID (/subscriptions/<subscription id>/resourceGroups/<resource group>/providers/Microsoft.Network/networkSecurityGroups/<nsg>); ' +
      NSG_FIX,
  },
  {
    name: 'AZURE_INSTANCE_SIZE without its tier',
    change: { AZURE_INSTANCE_SIZE: 'D2as_v5' },
    key: 'AZURE_INSTANCE_SIZE',
    message: 'AZURE_INSTANCE_SIZE is "D2as_v5": it is not an Azure VM size name (like Standard_D2as_v5); set it to one',
  },
  {
    name: 'AZURE_INSTANCE_SIZES with spaces',
    change: { AZURE_INSTANCE_SIZES: 'Standard_B2als_v2, Standard_D2as_v5' },
    key: 'AZURE_INSTANCE_SIZES',
    message:
      'AZURE_INSTANCE_SIZES is "Standard_B2als_v2, Standard_D2as_v5": the list must not contain spaces; write it as Standard_B2als_v2,Standard_D2as_v5,Standard_D4as_v5',
  },
  {
    name: 'AZURE_INSTANCE_SIZES that leaves out the default size',
    change: { AZURE_INSTANCE_SIZES: 'Standard_D2as_v5,Standard_D4as_v5' },
    key: 'AZURE_INSTANCE_SIZES',
    message:
      'AZURE_INSTANCE_SIZES is "Standard_D2as_v5,Standard_D4as_v5": it leaves out the default VM size Standard_B2als_v2 (AZURE_INSTANCE_SIZE); add Standard_B2als_v2 to the list, or set AZURE_INSTANCE_SIZE to one of the listed VM sizes',
  },
  {
    name: 'AZURE_INSTANCE_SIZES that leaves out the built-in default',
    change: { AZURE_INSTANCE_SIZE: null, AZURE_INSTANCE_SIZES: 'Standard_D4as_v5' },
    key: 'AZURE_INSTANCE_SIZES',
    message:
      'AZURE_INSTANCE_SIZES is "Standard_D4as_v5": it leaves out the default VM size Standard_B2als_v2 (AZURE_INSTANCE_SIZE, its default); add Standard_B2als_v2 to the list, or set AZURE_INSTANCE_SIZE to one of the listed VM sizes',
  },
  {
    name: 'AZURE_IMAGE_ID an AMI',
    change: { AZURE_IMAGE_ID: 'ami-0123456789abcdef0' },
    key: 'AZURE_IMAGE_ID',
    message:
      'AZURE_IMAGE_ID is "ami-0123456789abcdef0": it is not an Azure image resource ID (/subscriptions/<id>/resourceGroups/<rg>/providers/Microsoft.Compute/galleries/<gallery>/images/<image>/versions/<version>, or a managed or community gallery image); set it to your image ID, or to "" to have the operator build the pod VM image',
  },
  {
    name: 'TAGS with a key Azure refuses',
    change: { TAGS: 'team/owner=me' },
    key: 'TAGS',
    message:
      'TAGS is "team/owner=me": the key "team/owner" holds one of < > % & \\ ? /, which Azure does not allow in tag names; write tags as key1=value1,key2=value2',
  },
  {
    name: 'ROOT_VOLUME_SIZE above the largest managed disk',
    change: { ROOT_VOLUME_SIZE: '40000' },
    key: 'ROOT_VOLUME_SIZE',
    message: 'ROOT_VOLUME_SIZE is "40000": the maximum is 32767 (GB, the largest Azure managed disk); set it to 32767 or less',
  },
  {
    name: 'CLOUD_PROVIDER in upper case',
    change: { CLOUD_PROVIDER: 'Azure' },
    key: 'CLOUD_PROVIDER',
    message: 'CLOUD_PROVIDER is "Azure": provider names are lower case; set it to "azure"',
  },
];

describe('Azure: bad peer-pods-cm values', () => {
  for (const bad of badConfigMaps) {
    test(bad.name, () => {
      const r = validatePeerPodsConfig(withData(bad.change), secretOf(azureSecret()));
      assert.deepEqual(r.problems, [{ key: bad.key, message: bad.message }]);
      assert.equal(r.config, undefined);
    });
  }

  test('AZURE_SUBNET_ID and AZURE_NSG_ID swapped: each is told what it holds', () => {
    const r = validatePeerPodsConfig(withData({ AZURE_SUBNET_ID: AZURE_NSG_ID, AZURE_NSG_ID: AZURE_SUBNET_ID }), secretOf(azureSecret()));
    assert.deepEqual(r.problems, [
      {
        key: 'AZURE_SUBNET_ID',
        message: `AZURE_SUBNET_ID is ${q(AZURE_NSG_ID)}: it is a network security group's ID, not a subnet's; ${SUBNET_FIX}`,
      },
      {
        key: 'AZURE_NSG_ID',
        message: `AZURE_NSG_ID is ${q(AZURE_SUBNET_ID)}: it is a subnet's ID, not a network security group's; ${NSG_FIX}`,
      },
    ]);
  });

  test('warnings: a size osc does not know, resources in another subscription, a misspelt key', () => {
    const other = AZURE_NSG_ID.replace(AZURE_SUBSCRIPTION, '00000000-0000-0000-0000-000000000000');
    const r = validatePeerPodsConfig(
      withData({ AZURE_INSTANCE_SIZE: 'Standard_D2as_v9', AZURE_INSTANCE_SIZES: null, AZURE_NSG_ID: other, AZURE_INSTANCE_SIZ: 'x' }),
      secretOf(azureSecret()),
    );
    assert.deepEqual(r.problems, []);
    assert.deepEqual(
      r.warnings.map((w) => w.message),
      [
        'AZURE_INSTANCE_SIZ is not a peer pods setting and is ignored; did you mean AZURE_INSTANCE_SIZE?',
        `AZURE_NSG_ID is in subscription 00000000-0000-0000-0000-000000000000, not AZURE_SUBSCRIPTION_ID ${AZURE_SUBSCRIPTION}; the service principal needs access to both`,
        "AZURE_INSTANCE_SIZE names Standard_D2as_v9, not an Azure VM size osc knows the size of; check the spelling (best fit for a pod's vCPUs and memory never picks it)",
      ],
    );
  });

  test('a missing ConfigMap on an Azure cluster names the Azure keys', () => {
    const r = validatePeerPodsConfig(undefined, secretOf(azureSecret()), 'azure');
    assert.deepEqual(
      r.problems.map((p) => p.message),
      [
        'ConfigMap peer-pods-cm not found in namespace openshift-sandboxed-containers-operator: peer pods need it; create it as documented (oc create -f peer-pods-cm.yaml) with at least CLOUD_PROVIDER, AZURE_SUBSCRIPTION_ID, AZURE_REGION, AZURE_RESOURCE_GROUP, AZURE_SUBNET_ID and AZURE_NSG_ID',
      ],
    );
  });
});

const badSecrets: { name: string; change: Record<string, string | null>; key: string; message: string }[] = [
  {
    name: 'no client secret',
    change: { AZURE_CLIENT_SECRET: null },
    key: 'AZURE_CLIENT_SECRET',
    message:
      "AZURE_CLIENT_SECRET is missing in Secret peer-pods-secret: it is required for azure; set it to the service principal's client secret (password)",
  },
  {
    name: 'a client ID that is the display name',
    change: { AZURE_CLIENT_ID: 'osc-peerpods-sp' },
    key: 'AZURE_CLIENT_ID',
    message:
      'AZURE_CLIENT_ID in Secret peer-pods-secret is not a UUID (like 00000000-0000-0000-0000-000000000000); store the appId that az ad sp create-for-rbac printed',
  },
  {
    name: 'a tenant that is a domain',
    change: { AZURE_TENANT_ID: 'contoso.onmicrosoft.com' },
    key: 'AZURE_TENANT_ID',
    message:
      'AZURE_TENANT_ID in Secret peer-pods-secret is not a UUID (like 00000000-0000-0000-0000-000000000000); store the tenant that az ad sp create-for-rbac printed',
  },
  {
    name: 'a client secret with a line break',
    change: { AZURE_CLIENT_SECRET: 'abc~def\n' },
    key: 'AZURE_CLIENT_SECRET',
    message:
      'AZURE_CLIENT_SECRET in Secret peer-pods-secret ends with a line break (was it encoded with echo instead of echo -n?); store the value without it',
  },
];

describe('Azure: bad peer-pods-secret values', () => {
  for (const bad of badSecrets) {
    test(bad.name, () => {
      const s = azureSecret();
      for (const [k, v] of Object.entries(bad.change)) {
        if (v === null) delete s[k];
        else s[k] = v;
      }
      const r = validatePeerPodsConfig(cmOf(azureData()), secretOf(s));
      assert.deepEqual(r.problems, [{ key: bad.key, message: bad.message }]);
    });
  }

  test('a missing Secret says what an Azure one holds and how to create it', () => {
    const r = validatePeerPodsConfig(cmOf(azureData()), undefined);
    assert.deepEqual(
      r.problems.map((p) => p.message),
      [
        'Secret peer-pods-secret not found in namespace openshift-sandboxed-containers-operator: peer pods on azure need AZURE_CLIENT_ID, AZURE_CLIENT_SECRET and AZURE_TENANT_ID; create it with oc create secret generic peer-pods-secret -n openshift-sandboxed-containers-operator --from-literal AZURE_CLIENT_ID=<client id> --from-literal AZURE_CLIENT_SECRET=<client secret> --from-literal AZURE_TENANT_ID=<tenant id>',
      ],
    );
  });
});

describe('Azure: pod VM sizes', () => {
  test('the table holds the documented sizes', () => {
    assert.deepEqual(AZURE_VM_SIZES.Standard_B2als_v2, { vcpus: 2, memoryMiB: 4096 });
    assert.deepEqual(AZURE_VM_SIZES.Standard_D2as_v5, { vcpus: 2, memoryMiB: 8192 });
    assert.deepEqual(AZURE_VM_SIZES.Standard_D4as_v5, { vcpus: 4, memoryMiB: 16384 });
    assert.deepEqual(AZURE_VM_SIZES.Standard_DC2as_v5, { vcpus: 2, memoryMiB: 8192 });
    assert.deepEqual(AZURE_VM_SIZES.Standard_E4as_v5, { vcpus: 4, memoryMiB: 32768 });
    assert.ok(Object.isFrozen(AZURE_VM_SIZES));
  });

  const settings = {
    defaultType: 'Standard_B2als_v2',
    allowedTypes: ['Standard_B2als_v2', 'Standard_D2as_v5', 'Standard_D4as_v5', 'Standard_D2ads_v5'],
    sizes: azure.sizes,
  };
  const pod = (cpu: string, memory: string, annotations?: Record<string, string>) => ({
    metadata: { name: 'p', namespace: 'default', ...(annotations ? { annotations } : {}) },
    spec: { runtimeClassName: 'kata-remote', containers: [{ name: 'c', image: 'i', resources: { limits: { cpu, memory } } }] },
  });

  test('best fit: the smallest allowed size by memory, then vCPUs', () => {
    const small = mutatePeerPod(pod('1', '2Gi'), settings);
    assert.ok(small.allowed);
    assert.equal(small.summary?.instanceType, 'Standard_B2als_v2');
    const mid = mutatePeerPod(pod('2', '6Gi'), settings);
    assert.ok(mid.allowed);
    assert.equal(mid.summary?.instanceType, 'Standard_D2as_v5');
    const big = mutatePeerPod(pod('3', '6Gi'), settings);
    assert.ok(big.allowed);
    assert.equal(big.summary?.instanceType, 'Standard_D4as_v5');
  });

  test('a pod larger than every allowed size, or naming a size outside the list, is refused in Azure words', () => {
    const huge = mutatePeerPod(pod('8', '4Gi'), settings);
    assert.equal(huge.allowed, false);
    assert.match(
      (huge as { message: string }).message,
      /^the pod needs 8 vCPUs and 4096 MiB of memory, more than any allowed VM size offers: Standard_B2als_v2 \(2 vCPUs, 4096 MiB\), .*add a larger size to AZURE_INSTANCE_SIZES in ConfigMap peer-pods-cm$/,
    );
    const named = mutatePeerPod(pod('1', '1Gi', { 'io.katacontainers.config.hypervisor.machine_type': 'Standard_D8as_v5' }), settings);
    assert.equal(named.allowed, false);
    assert.equal(
      (named as { message: string }).message,
      'VM size "Standard_D8as_v5" (annotation io.katacontainers.config.hypervisor.machine_type) is not allowed: the allowed sizes are Standard_B2als_v2, Standard_D2as_v5, Standard_D4as_v5, Standard_D2ads_v5; use one of them, or ask the administrator to add it to AZURE_INSTANCE_SIZES in ConfigMap peer-pods-cm',
    );
  });
});
