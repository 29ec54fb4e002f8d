import type { TeeKind } from '../../api/confidential.ts';
import { parseVersion } from '../../api/tee.ts';
import { type DevHardware, TEE_KINDS } from '../../devcluster/hardware.ts';
import { CliError } from '../common.ts';

/** `osc start`'s confidential computing flags (docs/confidential-containers.md, "On the dev cluster"). */
export interface HardwareFlags {
  tee?: string;
  teeNodes?: string;
  keySlots?: number;
  gpuNodes?: string;
  clusterVersion?: string;
}

const nodeList = (flag: string, raw: string, nodes: readonly string[]): string[] => {
  const names = raw
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  if (names.length === 0) throw new CliError(`${flag} is empty: give a comma-separated list of node names`);
  const unknown = names.filter((n) => !nodes.includes(n));
  if (unknown.length)
    throw new CliError(
      `${flag} names ${unknown.length === 1 ? 'a node' : 'nodes'} this dev cluster does not have: ${unknown.join(', ')} (its nodes: ${nodes.join(', ')})`,
    );
  return names;
};

/**
 * The dev cluster's hardware from the flags, each checked against the nodes it will have and the
 * distribution (a TEE on plain Kubernetes comes with Node Feature Discovery as the add-on it is there).
 */
export function devHardware(flags: HardwareFlags, nodes: readonly string[], noClusterConfig: boolean): DevHardware {
  const hw: DevHardware = {};
  if (flags.tee !== undefined) {
    if (!(TEE_KINDS as readonly string[]).includes(flags.tee))
      throw new CliError(`--tee ${flags.tee}: use --tee ${TEE_KINDS.join(' or ')}`);
    const keySlots = flags.keySlots;
    if (keySlots !== undefined && keySlots < 1) throw new CliError('--key-slots must be 1 or more: each confidential pod VM takes one');
    hw.tee = {
      kind: flags.tee as TeeKind,
      ...(flags.teeNodes !== undefined ? { nodes: nodeList('--tee-nodes', flags.teeNodes, nodes) } : {}),
      ...(keySlots !== undefined ? { keySlots } : {}),
    };
  } else if (flags.teeNodes !== undefined || flags.keySlots !== undefined) {
    throw new CliError(`${flags.teeNodes !== undefined ? '--tee-nodes' : '--key-slots'} needs --tee ${TEE_KINDS.join('|')}`);
  }
  if (flags.gpuNodes !== undefined) hw.gpuNodes = nodeList('--gpu-nodes', flags.gpuNodes, nodes);
  if (flags.clusterVersion !== undefined) {
    if (noClusterConfig)
      throw new CliError('--cluster-version sets the OpenShift ClusterVersion, which the kubernetes distribution does not have');
    if (!parseVersion(flags.clusterVersion))
      throw new CliError(`--cluster-version ${flags.clusterVersion}: give an OpenShift release as major.minor.patch, e.g. 4.20.18`);
    hw.clusterVersion = flags.clusterVersion;
  }
  return hw;
}
