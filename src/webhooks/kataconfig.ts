import { type KataConfig, messages } from '../api/kataconfig.ts';
import type { AdmissionRequest, Decision } from './admission.ts';

export const KATACONFIG_WEBHOOK_PATH = '/validate-kataconfiguration-openshift-io-v1-kataconfig';

/**
 * Only one KataConfig may exist: a create is refused while another one exists (docs/kataconfig.md, "Validation"). The field-level
 * rules are in the CRD schema, where the API server enforces them without a round trip here.
 */
export function validateKataConfig(req: AdmissionRequest<KataConfig>, existing: readonly KataConfig[]): Decision {
  if (req.operation !== 'CREATE') return { allowed: true };
  const others = existing.filter((k) => k.metadata.name !== req.name);
  if (others.length > 0) return { allowed: false, code: 403, reason: 'Forbidden', message: messages.duplicate() };
  return { allowed: true };
}
