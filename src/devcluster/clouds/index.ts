import { SimulatedAws, type SimulatedAwsOptions } from './aws.ts';
import { SimulatedAzure } from './azure.ts';
import { SimulatedGcp } from './gcp.ts';

/** The dev cluster's cloud behind peer pods, by what its Infrastructure reports (`osc start --cloud`). */
export type PeerPodsCloud = SimulatedAws | SimulatedAzure | SimulatedGcp;

/** AWS's simulation for AWS and clusters without a cloud (as before there were others), Azure's or Google Cloud's for theirs. */
export function simulatedCloud(platform: string | undefined, opts: SimulatedAwsOptions, infrastructureName: string): PeerPodsCloud {
  if (platform === 'Azure') return new SimulatedAzure({ ...opts, infrastructureName });
  if (platform === 'GCP') return new SimulatedGcp({ ...opts, infrastructureName });
  return new SimulatedAws(opts);
}
