import { type KataConfig, messages } from '../api/kataconfig.ts';
import type { AdmissionRequest, Decision } from './admission.ts';

export const KATACONFIG_WEBHOOK_PATH = '/validate-kataconfiguration-openshift-io-v1-kataconfig';

/**
 * Peer pods only where the platform has them (docs/kubernetes.md); the controller says the same of one that
 * got past this check (an update, or the webhook down). Only one KataConfig may exist: a create is refused while another one exists (docs/kataconfig.md, "Validation"). The field-level
 * rules are in the CRD schema, where the API server enforces them without a round trip here.
 */
export function validateKataConfig(
  req: AdmissionRequest<KataConfig>,
  existing: readonly KataConfig[],
  platform: { name: string; supportsPeerPods: boolean } = { name: 'openshift', supportsPeerPods: true },
): Decision {
  if (req.operation !== 'CREATE') return { allowed: true };
  if (req.object?.spec?.enablePeerPods && !platform.supportsPeerPods)
    return { allowed: false, code: 422, reason: 'Invalid', message: messages.peerPodsUnsupported(platform.name) };
  const others = existing.filter((k) => k.metadata.name !== req.name);
  if (others.length > 0) return { allowed: false, code: 403, reason: 'Forbidden', message: messages.duplicate() };
  return { allowed: true };
}
