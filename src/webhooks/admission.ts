/** The admission.k8s.io/v1 AdmissionReview shapes osc handles. */
export interface AdmissionRequest<T = unknown> {
  uid: string;
  kind: { group: string; version: string; kind: string };
  resource: { group: string; version: string; resource: string };
  name?: string;
  namespace?: string;
  operation: 'CREATE' | 'UPDATE' | 'DELETE' | 'CONNECT';
  object?: T;
  oldObject?: T;
  dryRun?: boolean;
}

export interface JSONPatchOp {
  op: 'add' | 'remove' | 'replace' | 'test' | 'move' | 'copy';
  path: string;
  value?: unknown;
  from?: string;
}

export interface AdmissionResponse {
  uid: string;
  allowed: boolean;
  status?: { code: number; reason?: string; message: string };
  patch?: string;
  patchType?: 'JSONPatch';
  warnings?: string[];
}

export interface AdmissionReview<T = unknown> {
  apiVersion: 'admission.k8s.io/v1';
  kind: 'AdmissionReview';
  request?: AdmissionRequest<T>;
  response?: AdmissionResponse;
}

/** A decision before it is bound to a request uid. */
export type Decision =
  | { allowed: true; patch?: JSONPatchOp[]; warnings?: string[] }
  | { allowed: false; code?: number; reason?: string; message: string };

export function respond(uid: string, d: Decision): AdmissionResponse {
  if (!d.allowed) return { uid, allowed: false, status: { code: d.code ?? 403, reason: d.reason ?? 'Forbidden', message: d.message } };
  const res: AdmissionResponse = { uid, allowed: true };
  if (d.patch?.length) {
    res.patch = Buffer.from(JSON.stringify(d.patch)).toString('base64');
    res.patchType = 'JSONPatch';
  }
  if (d.warnings?.length) res.warnings = d.warnings;
  return res;
}
