/**
 * What a dev cluster serves and runs beyond Kubernetes itself, by distribution: the CRDs of the APIs it
 * serves, and the simulators only an OpenShift runs (the AWS account, the Cloud Credential Operator, the
 * Machine Config Operator, the peer pods cloud with its pod VMs, and the clouds' API endpoint over them),
 * made together here for DevCluster (devcluster.ts), which starts them.
 */
import type { Logger } from 'pino';
import { oscCRDs } from '../../api/crds.ts';
import { ContainerRuntimeConfigs, type MachineConfig, type MachineConfigPool } from '../../api/openshift.ts';
import type { KubeClient } from '../../kube/client.ts';
import type { CustomResourceDefinition, Node } from '../../kube/resources.ts';
import { Informer } from '../../runtime/informer.ts';
import { AzureActuator } from '../cco/azure.ts';
import { ccoCRDs } from '../cco/crds.ts';
import { GcpActuator } from '../cco/gcp.ts';
import { CloudCredentialOperator } from '../cco/index.ts';
import { ArmAPI } from '../cloudapi/arm.ts';
import { Ec2API } from '../cloudapi/ec2.ts';
import { GceAPI } from '../cloudapi/gce.ts';
import { clusterIssuer } from '../cloudapi/sa-tokens.ts';
import { CloudAPIServer } from '../cloudapi/server.ts';
import { StsAPI } from '../cloudapi/sts.ts';
import { azureAdaptorAuthority, gcpAdaptorAuthority } from '../clouds/adaptor-authority.ts';
import { AwsAccount } from '../clouds/aws-account.ts';
import { SimulatedAzure } from '../clouds/azure.ts';
import { SimulatedGcp } from '../clouds/gcp.ts';
import { type PeerPodsCloud, simulatedCloud } from '../clouds/index.ts';
import type { NodeJournal } from '../journal.ts';
import { MachineConfigOperator } from '../mco/index.ts';
import { nodeFeatureRuleCRD } from '../nfd/rules.ts';
import type { DevClusterOptions } from '../options.ts';
import { SimulatedPodVMs } from '../podvms.ts';
import { sccCRD } from '../scc/index.ts';
import { openshiftCRDs } from './crds.ts';
import { monitoringCRDs } from './monitoring-crds.ts';

/** The CRDs a dev cluster serves: osc's own, the caller's extra ones, and its distribution's APIs. */
export function servedCRDs(opts: DevClusterOptions): CustomResourceDefinition[] {
  const plain = opts.distribution === 'kubernetes';
  return [
    // Node Feature Discovery is an add-on of plain Kubernetes: its CRD is there where a TEE asks for it.
    ...(plain && opts.hardware?.tee ? [nodeFeatureRuleCRD()] : []),
    // Every OpenShift serves the monitoring stack's APIs; plain Kubernetes serves them only where someone
    // installed the Prometheus Operator, so the kubernetes distribution leaves them out.
    ...(plain
      ? []
      : [
          ...openshiftCRDs(),
          ...monitoringCRDs(),
          sccCRD(),
          nodeFeatureRuleCRD(),
          ...(opts.cloudCredentialOperator === false ? [] : ccoCRDs()),
        ]),
    ...oscCRDs(),
    ...(opts.extraCRDs ?? []),
  ];
}

/** The simulators only an OpenShift dev cluster runs. */
export interface OpenShiftSimulators {
  account: AwsAccount;
  cco: CloudCredentialOperator;
  mco: MachineConfigOperator;
  cloud: PeerPodsCloud;
  /** The cloud's pod VMs and the adaptor's part in their life (podvms.ts). */
  podVMs: SimulatedPodVMs;
  /** The simulated cloud's API endpoint (cloudapi/), which osc's cloud clients reach through their endpoint override. */
  cloudAPIServer: CloudAPIServer;
}

/** Makes (but does not start) an OpenShift dev cluster's own simulators. */
export function openshiftSimulators(o: {
  client: KubeClient;
  log: Logger;
  options: DevClusterOptions;
  informers: { nodes: Informer<Node>; pools: Informer<MachineConfigPool>; machineConfigs: Informer<MachineConfig> };
  journal: NodeJournal;
  /** The Infrastructure's infrastructureName, which the simulated clouds name their resources after. */
  infrastructureName: string;
}): OpenShiftSimulators {
  const { client, log, options: opts } = o;
  const account = new AwsAccount();
  for (const [i, key] of (opts.awsUsers ?? []).entries()) account.createUser(`administrator-${i}`, undefined, key);
  const aws = opts.platform === 'AWS';
  const cloud = simulatedCloud(
    opts.platform,
    { client, log, imageJobMs: opts.podvmImageJobMs, ...(aws ? { account } : {}) },
    o.infrastructureName,
  );
  const authority =
    cloud instanceof SimulatedAzure ? azureAdaptorAuthority(cloud) : cloud instanceof SimulatedGcp ? gcpAdaptorAuthority(cloud) : undefined;
  const podVMs = new SimulatedPodVMs({ client, log, ...(aws ? { account } : {}), ...(authority ? { authority } : {}) });
  const cloudAPIServer = new CloudAPIServer({ log });
  // Workload identities trade the cluster's ServiceAccount tokens, checked against its issuer's keys.
  const issuer = clusterIssuer(client);
  const sts = new StsAPI({ account, issuer });
  cloudAPIServer.handle(sts.handle);
  cloudAPIServer.handle(new Ec2API({ account, vms: podVMs }).handle);
  if (cloud instanceof SimulatedAzure) cloudAPIServer.handle(new ArmAPI({ azure: cloud, vms: podVMs, issuer }).handle);
  if (cloud instanceof SimulatedGcp) cloudAPIServer.handle(new GceAPI({ gcp: cloud, vms: podVMs, issuer }).handle);
  return {
    account,
    // The operator's actuator is its platform's, as the real one's.
    cco: new CloudCredentialOperator({
      client,
      log,
      account,
      infraName: o.infrastructureName,
      ...(cloud instanceof SimulatedAzure
        ? { actuator: (shared) => new AzureActuator({ ...shared, azure: cloud }) }
        : cloud instanceof SimulatedGcp
          ? { actuator: (shared) => new GcpActuator({ ...shared, gcp: cloud }) }
          : {}),
    }),
    mco: new MachineConfigOperator({
      client,
      log,
      rebootMs: opts.rebootMs ?? 2000,
      journal: o.journal,
      pickupDelayMs: opts.pickupDelayMs,
      drainRetryMs: opts.drainRetryMs,
      informers: { ...o.informers, containerRuntimeConfigs: new Informer(client, ContainerRuntimeConfigs, { log }) },
    }),
    cloud,
    podVMs,
    cloudAPIServer,
  };
}
