import { ADAPTOR_OUTDATED, CONFIG_VALID, IMAGE_JOB_COMPLETED, IMAGE_JOB_FAILED, IMAGE_JOB_RUNNING } from '../../api/kataconfig.ts';
import { ADAPTOR_OUTDATED_REASON } from '../../api/peerpods-conditions.ts';
import type { Condition } from '../../kube/types.ts';

/** The event worth recording when one of the peer pods controller's conditions changes, if any. */
export function conditionEvent(prev: Condition | undefined, next: Condition | undefined) {
  if (!next || (prev && prev.status === next.status && prev.reason === next.reason && prev.message === next.message)) return undefined;
  switch (next.type) {
    case CONFIG_VALID:
      if (next.status === 'False') return { type: 'Warning' as const, reason: 'InvalidPeerPodsConfiguration', note: next.message };
      if (prev?.status === 'True') return undefined; // only the warnings changed
      return { type: 'Normal' as const, reason: 'PeerPodsConfigurationValid', note: next.message };
    case IMAGE_JOB_RUNNING:
      if (next.reason === 'ImageKept' && prev?.reason !== 'ImageKept')
        return { type: 'Normal' as const, reason: 'PodVMImageKept', note: next.message };
      return next.status === 'True' ? { type: 'Normal' as const, reason: 'PodVMImageJobRunning', note: next.message } : undefined;
    case IMAGE_JOB_COMPLETED:
      if (next.status !== 'True') return undefined;
      return {
        type: 'Normal' as const,
        reason: next.reason === 'ImageDeleted' ? 'PodVMImageDeleted' : 'PodVMImageCreated',
        note: next.message,
      };
    case IMAGE_JOB_FAILED:
      return next.status === 'True' ? { type: 'Warning' as const, reason: 'PodVMImageJobFailed', note: next.message } : undefined;
    case ADAPTOR_OUTDATED:
      // Once per wait for the administrator (OnDelete), not on every pod deleted since.
      if (next.reason !== ADAPTOR_OUTDATED_REASON.OnDelete || (prev?.status === 'True' && prev.reason === next.reason)) return undefined;
      return { type: 'Normal' as const, reason: 'PeerPodsAdaptorOutdated', note: next.message };
    default:
      return undefined;
  }
}
