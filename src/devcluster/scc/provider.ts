import { objectName } from '../../api/meta.ts';
import {
  type IDRange,
  MCS_ANNOTATION,
  type SecurityContextConstraints,
  SUPPLEMENTAL_GROUPS_ANNOTATION,
  UID_RANGE_ANNOTATION,
} from '../../api/scc.ts';

// One SCC applied to one pod, as OpenShift's SCC provider does it: first default what the pod leaves
// unset (user ID, SELinux level, groups, seccomp profile, capabilities), then validate the result. Errors
// are worded and pathed as OpenShift's field errors, since users grep for them.

type SELinuxOptions = { user?: string; role?: string; type?: string; level?: string };
type SeccompProfile = { type: string; localhostProfile?: string };
export interface ContainerSecurityContext {
  privileged?: boolean;
  runAsUser?: number;
  runAsNonRoot?: boolean;
  readOnlyRootFilesystem?: boolean;
  allowPrivilegeEscalation?: boolean;
  capabilities?: { add?: string[]; drop?: string[] };
  seLinuxOptions?: SELinuxOptions;
  seccompProfile?: SeccompProfile;
  [k: string]: unknown;
}
export interface PodSecurityContext {
  runAsUser?: number;
  runAsNonRoot?: boolean;
  fsGroup?: number;
  supplementalGroups?: number[];
  seLinuxOptions?: SELinuxOptions;
  seccompProfile?: SeccompProfile;
  [k: string]: unknown;
}
export interface Container {
  name: string;
  securityContext?: ContainerSecurityContext;
  ports?: { containerPort?: number; hostPort?: number }[];
  [k: string]: unknown;
}
export interface PodSpec {
  serviceAccountName?: string;
  hostNetwork?: boolean;
  hostPID?: boolean;
  hostIPC?: boolean;
  securityContext?: PodSecurityContext;
  volumes?: ({ name: string } & Record<string, unknown>)[];
  containers: Container[];
  initContainers?: Container[];
  [k: string]: unknown;
}
export interface AdmittedPod {
  metadata: { name?: string; generateName?: string; namespace?: string; annotations?: Record<string, string> };
  spec: PodSpec;
}

/** An SCC with the namespace's pre-allocated values filled in, ready to apply to pods of that namespace. */
export interface Provider {
  scc: SecurityContextConstraints;
  name: string;
  /** A defaulted copy of the pod and the field errors of validating it (none: the SCC admits it). */
  apply(pod: AdmittedPod): { pod: AdmittedPod; errors: string[] };
}

// Field errors, formatted as apimachinery's field.Error.
const show = (v: unknown): string => {
  if (v === undefined || v === null) return '"null"';
  if (typeof v === 'string') return JSON.stringify(v);
  if (Array.isArray(v))
    return v.every((x) => typeof x === 'number')
      ? `[]int64{${v.join(', ')}}`
      : `[]core.Capability{${v.map((x) => JSON.stringify(x)).join(', ')}}`;
  return String(v);
};
const invalid = (path: string, value: unknown, detail: string) => `${path}: Invalid value: ${show(value)}: ${detail}`;
const required = (path: string, detail = '') => `${path}: Required value${detail ? `: ${detail}` : ''}`;
const forbidden = (path: string, detail: string) => `${path}: Forbidden: ${detail}`;

/** `1000650000/10000` (start/size) as the IDs it covers. */
function parseBlock(s: string): IDRange {
  const m = /^(\d+)(?:\/(\d+)|-(\d+))$/.exec(s.trim());
  if (!m) throw new Error(`invalid block "${s}": want start/size`);
  const start = Number(m[1]);
  return { min: start, max: m[2] !== undefined ? start + Number(m[2]) - 1 : Number(m[3]) };
}

export type NamespaceAnnotations = Record<string, string | undefined>;

/** The SCC with its MustRunAs ranges and level taken from the namespace; throws as OpenShift words it. */
export function createProvider(scc: SecurityContextConstraints, namespace: string, annotations: NamespaceAnnotations): Provider {
  const name = objectName(scc);
  // Shallow: every nested field filled in below is replaced, never changed in place.
  const s: SecurityContextConstraints = { ...scc };
  const missing = (what: string, key: string) =>
    new Error(
      `unable to find pre-allocated ${what} annotation for namespace ${namespace} while trying to configure SCC ${name}: unable to find annotation ${key}`,
    );
  const groupsAnnotation = () => annotations[SUPPLEMENTAL_GROUPS_ANNOTATION] ?? annotations[UID_RANGE_ANNOTATION];
  if (s.runAsUser?.type === 'MustRunAsRange' && s.runAsUser.uidRangeMin === undefined && s.runAsUser.uidRangeMax === undefined) {
    const a = annotations[UID_RANGE_ANNOTATION];
    if (!a) throw missing('uid', UID_RANGE_ANNOTATION);
    const r = parseBlock(a);
    s.runAsUser = { ...s.runAsUser, uidRangeMin: r.min, uidRangeMax: r.max };
  }
  if (s.seLinuxContext?.type === 'MustRunAs' && !s.seLinuxContext.seLinuxOptions?.level) {
    const level = annotations[MCS_ANNOTATION];
    if (!level) throw missing('mcs', MCS_ANNOTATION);
    s.seLinuxContext = { ...s.seLinuxContext, seLinuxOptions: { ...s.seLinuxContext.seLinuxOptions, level } };
  }
  if (s.fsGroup?.type === 'MustRunAs' && !s.fsGroup.ranges?.length) {
    const a = groupsAnnotation();
    if (!a) throw missing('group', SUPPLEMENTAL_GROUPS_ANNOTATION);
    const first = parseBlock(a.split(',')[0] ?? '');
    s.fsGroup = { ...s.fsGroup, ranges: [{ min: first.min, max: first.min }] };
  }
  if (s.supplementalGroups?.type === 'MustRunAs' && !s.supplementalGroups.ranges?.length) {
    const a = groupsAnnotation();
    if (!a) throw missing('group', SUPPLEMENTAL_GROUPS_ANNOTATION);
    s.supplementalGroups = { ...s.supplementalGroups, ranges: a.split(',').map(parseBlock) };
  }
  return { scc: s, name, apply: (pod) => applySCC(s, pod) };
}

function applySCC(scc: SecurityContextConstraints, original: AdmittedPod): { pod: AdmittedPod; errors: string[] } {
  const pod: AdmittedPod = structuredClone(original);
  const errors: string[] = [];
  const podPath = `provider ${scc.metadata.name}: .spec.securityContext`;
  mutatePod(scc, pod);
  errors.push(...validatePod(scc, pod, podPath));
  for (const [list, field] of [
    [pod.spec.initContainers ?? [], 'initContainers'],
    [pod.spec.containers ?? [], 'containers'],
  ] as const) {
    list.forEach((c, i) => {
      mutateContainer(scc, pod, c);
      errors.push(...validateContainer(scc, pod, c, `spec.${field}[${i}].securityContext`, i));
    });
  }
  return { pod, errors };
}

// ---------------------------------------------------------------------------------------------------------
// Defaulting

const seccompName = (p: SeccompProfile | undefined): string | undefined =>
  !p
    ? undefined
    : p.type === 'RuntimeDefault'
      ? 'runtime/default'
      : p.type === 'Unconfined'
        ? 'unconfined'
        : `localhost/${p.localhostProfile ?? ''}`;
const seccompField = (name: string): SeccompProfile =>
  name === 'runtime/default' || name === 'docker/default'
    ? { type: 'RuntimeDefault' }
    : name === 'unconfined'
      ? { type: 'Unconfined' }
      : { type: 'Localhost', localhostProfile: name.replace(/^localhost\//, '') };

function mutatePod(scc: SecurityContextConstraints, pod: AdmittedPod): void {
  const sc: PodSecurityContext = { ...(pod.spec.securityContext ?? {}) };
  if (scc.seLinuxContext?.type === 'MustRunAs' && !sc.seLinuxOptions) sc.seLinuxOptions = { ...scc.seLinuxContext.seLinuxOptions };
  const fsRange = scc.fsGroup?.type === 'MustRunAs' ? scc.fsGroup.ranges?.[0] : undefined;
  if (fsRange && sc.fsGroup === undefined) sc.fsGroup = fsRange.min;
  const sgRange = scc.supplementalGroups?.type === 'MustRunAs' ? scc.supplementalGroups.ranges?.[0] : undefined;
  if (sgRange && !sc.supplementalGroups?.length) sc.supplementalGroups = [sgRange.min];
  const allowed = scc.seccompProfiles ?? [];
  if (!sc.seccompProfile && allowed.length > 0 && allowed[0] !== '*') sc.seccompProfile = seccompField(allowed[0] ?? '');
  if (Object.keys(sc).length > 0 || pod.spec.securityContext) pod.spec.securityContext = sc;
}

function mutateContainer(scc: SecurityContextConstraints, pod: AdmittedPod, c: Container): void {
  const psc = pod.spec.securityContext ?? {};
  const sc: ContainerSecurityContext = { ...(c.securityContext ?? {}) };
  const ru = scc.runAsUser;
  const effectiveUser = () => sc.runAsUser ?? psc.runAsUser;
  if (effectiveUser() === undefined) {
    if (ru?.type === 'MustRunAs' && ru.uid !== undefined) sc.runAsUser = ru.uid;
    if (ru?.type === 'MustRunAsRange' && ru.uidRangeMin !== undefined) sc.runAsUser = ru.uidRangeMin;
  }
  if (scc.seLinuxContext?.type === 'MustRunAs' && !sc.seLinuxOptions && !psc.seLinuxOptions)
    sc.seLinuxOptions = { ...scc.seLinuxContext.seLinuxOptions };
  if ((sc.runAsNonRoot ?? psc.runAsNonRoot) === undefined) {
    const uid = effectiveUser();
    if ((uid === undefined && ru?.type === 'MustRunAsNonRoot') || (uid !== undefined && uid > 0)) sc.runAsNonRoot = true;
  }
  if (scc.readOnlyRootFilesystem && sc.readOnlyRootFilesystem === undefined) sc.readOnlyRootFilesystem = true;
  const caps = generateCapabilities(scc, sc.capabilities);
  if (caps) sc.capabilities = caps;
  const privileged = sc.privileged === true;
  const addsSysAdmin = (sc.capabilities?.add ?? []).includes('CAP_SYS_ADMIN');
  if (scc.defaultAllowPrivilegeEscalation != null && sc.allowPrivilegeEscalation === undefined && !privileged && !addsSysAdmin)
    sc.allowPrivilegeEscalation = scc.defaultAllowPrivilegeEscalation;
  if (scc.allowPrivilegeEscalation === false && sc.allowPrivilegeEscalation === undefined) sc.allowPrivilegeEscalation = false;
  if (Object.keys(sc).length > 0 || c.securityContext) c.securityContext = sc;
}

/** The SCC's default adds (unless dropped) and required drops merged in; undefined when nothing changes. */
function generateCapabilities(
  scc: SecurityContextConstraints,
  current: ContainerSecurityContext['capabilities'],
): ContainerSecurityContext['capabilities'] | undefined {
  const add = new Set(current?.add ?? []);
  const drop = new Set(current?.drop ?? []);
  const combinedAdd = new Set([...(scc.defaultAddCapabilities ?? []).filter((c) => !drop.has(c)), ...add]);
  const combinedDrop = new Set([...(scc.requiredDropCapabilities ?? []), ...drop]);
  if (combinedAdd.size === add.size && combinedDrop.size === drop.size) return undefined;
  const sorted = (s: Set<string>) => (s.size ? [...s].sort() : undefined);
  return { ...(sorted(combinedAdd) ? { add: sorted(combinedAdd) } : {}), ...(sorted(combinedDrop) ? { drop: sorted(combinedDrop) } : {}) };
}

// ---------------------------------------------------------------------------------------------------------
// Validation

const inRanges = (v: number, ranges: IDRange[]) => ranges.some((r) => v >= r.min && v <= r.max);

/** The volume type of a pod volume: the name of its source field. */
const volumeType = (v: Record<string, unknown>) => Object.keys(v).find((k) => k !== 'name') ?? 'none';

function allowsVolume(scc: SecurityContextConstraints, type: string): boolean {
  const volumes = scc.volumes ?? [];
  if (type === 'hostPath' && !scc.allowHostDirVolumePlugin) return false;
  return volumes.includes('*') || volumes.includes(type);
}

function validatePod(scc: SecurityContextConstraints, pod: AdmittedPod, path: string): string[] {
  const errs: string[] = [];
  const spec = pod.spec;
  if (spec.hostPID && !scc.allowHostPID) errs.push(invalid(`${path}.hostPID`, true, 'Host PID is not allowed to be used'));
  if (spec.hostNetwork && !scc.allowHostNetwork) errs.push(invalid(`${path}.hostNetwork`, true, 'Host network is not allowed to be used'));
  if (spec.hostIPC && !scc.allowHostIPC) errs.push(invalid(`${path}.hostIPC`, true, 'Host IPC is not allowed to be used'));
  const sc = spec.securityContext ?? {};
  const level = scc.seLinuxContext?.type === 'MustRunAs' ? scc.seLinuxContext.seLinuxOptions?.level : undefined;
  if (level && sc.seLinuxOptions?.level !== undefined && sc.seLinuxOptions.level !== level)
    errs.push(invalid(`${path}.seLinuxOptions.level`, sc.seLinuxOptions.level, `must be ${level}`));
  for (const [field, opts, values] of [
    ['fsGroup', scc.fsGroup, sc.fsGroup === undefined ? [] : [sc.fsGroup]],
    ['supplementalGroups', scc.supplementalGroups, sc.supplementalGroups ?? []],
  ] as const) {
    if (opts?.type !== 'MustRunAs') continue;
    const ranges = opts.ranges ?? [];
    if (values.length === 0 && field === 'fsGroup')
      errs.push(invalid(`${path}.${field}`, values, 'unable to validate empty groups against required ranges'));
    for (const g of values) if (!inRanges(g, ranges)) errs.push(invalid(`${path}.${field}`, values, `${g} is not an allowed group`));
  }
  errs.push(...validateSeccomp(scc, sc.seccompProfile, `${path}.seccompProfile`));
  (spec.volumes ?? []).forEach((v, i) => {
    const type = volumeType(v);
    if (!allowsVolume(scc, type)) errs.push(invalid(`spec.volumes[${i}]`, type, `${type} volumes are not allowed to be used`));
  });
  return errs;
}

function validateSeccomp(scc: SecurityContextConstraints, profile: SeccompProfile | undefined, path: string): string[] {
  const name = seccompName(profile);
  if (!name) return [];
  const allowed = scc.seccompProfiles ?? [];
  if (allowed.includes('*')) return [];
  if (allowed.length === 0) return [forbidden(path, 'seccomp may not be set')];
  const ok = allowed.includes(name) || (name === 'runtime/default' && allowed.includes('docker/default'));
  return ok ? [] : [forbidden(path, `${name} is not an allowed seccomp profile. Valid values are ${allowed.join(',')}`)];
}

function validateContainer(scc: SecurityContextConstraints, pod: AdmittedPod, c: Container, path: string, index: number): string[] {
  const errs: string[] = [];
  const psc = pod.spec.securityContext ?? {};
  const sc = c.securityContext ?? {};
  if (!scc.allowPrivilegedContainer && sc.privileged)
    errs.push(invalid(`${path}.privileged`, true, 'Privileged containers are not allowed'));
  if (scc.readOnlyRootFilesystem) {
    if (sc.readOnlyRootFilesystem === undefined)
      errs.push(invalid(`${path}.readOnlyRootFilesystem`, null, 'ReadOnlyRootFilesystem may not be nil and must be set to true'));
    else if (!sc.readOnlyRootFilesystem)
      errs.push(invalid(`${path}.readOnlyRootFilesystem`, false, 'ReadOnlyRootFilesystem must be set to true'));
  }
  if (scc.allowPrivilegeEscalation === false && sc.allowPrivilegeEscalation !== false)
    errs.push(
      invalid(
        `${path}.allowPrivilegeEscalation`,
        sc.allowPrivilegeEscalation ?? null,
        'Allowing privilege escalation for containers is not allowed',
      ),
    );
  errs.push(...validateUser(scc, sc.runAsUser ?? psc.runAsUser, sc.runAsNonRoot ?? psc.runAsNonRoot, path));
  const level = scc.seLinuxContext?.type === 'MustRunAs' ? scc.seLinuxContext.seLinuxOptions?.level : undefined;
  const got = (sc.seLinuxOptions ?? psc.seLinuxOptions)?.level;
  if (level && got !== undefined && got !== level) errs.push(invalid(`${path}.seLinuxOptions.level`, got, `must be ${level}`));
  errs.push(...validateCapabilities(scc, sc.capabilities, path));
  errs.push(...validateSeccomp(scc, sc.seccompProfile, `${path}.seccompProfile`));
  if (!scc.allowHostPorts)
    for (const p of c.ports ?? [])
      if ((p.hostPort ?? 0) > 0)
        errs.push(invalid(`${path}.containers[${index}].hostPort`, p.hostPort, 'Host ports are not allowed to be used'));
  return errs;
}

function validateUser(scc: SecurityContextConstraints, uid: number | undefined, nonRoot: boolean | undefined, path: string): string[] {
  const ru = scc.runAsUser;
  switch (ru?.type) {
    case 'MustRunAs':
      if (uid === undefined) return [required(`${path}.runAsUser`)];
      return uid === ru.uid ? [] : [invalid(`${path}.runAsUser`, uid, `must be: ${ru.uid}`)];
    case 'MustRunAsRange':
      if (uid === undefined) return [required(`${path}.runAsUser`)];
      return uid >= (ru.uidRangeMin ?? 0) && uid <= (ru.uidRangeMax ?? 0)
        ? []
        : [invalid(`${path}.runAsUser`, uid, `must be in the ranges: [${ru.uidRangeMin}, ${ru.uidRangeMax}]`)];
    case 'MustRunAsNonRoot':
      if (uid === 0) return [invalid(`${path}.runAsUser`, 0, 'running with the root UID is forbidden')];
      if (nonRoot === false) return [invalid(`${path}.runAsNonRoot`, false, 'must be true')];
      if (uid === undefined && nonRoot === undefined) return [required(`${path}.runAsNonRoot`, 'must be true')];
      return [];
    default:
      return [];
  }
}

function validateCapabilities(scc: SecurityContextConstraints, caps: ContainerSecurityContext['capabilities'], path: string): string[] {
  if (!caps) {
    const needs = (scc.defaultAddCapabilities?.length ?? 0) > 0 || (scc.requiredDropCapabilities?.length ?? 0) > 0;
    return needs ? [invalid(`${path}.capabilities`, null, 'required capabilities are not set on the securityContext')] : [];
  }
  const allowed = new Set(scc.allowedCapabilities ?? []);
  if (allowed.has('*')) return [];
  const defaults = new Set(scc.defaultAddCapabilities ?? []);
  const errs: string[] = [];
  for (const c of caps.add ?? [])
    if (!defaults.has(c) && !allowed.has(c)) errs.push(invalid(`${path}.capabilities.add`, c, 'capability may not be added'));
  const drops = new Set(caps.drop ?? []);
  for (const d of scc.requiredDropCapabilities ?? [])
    if (!drops.has(d)) errs.push(invalid(`${path}.capabilities.drop`, caps.drop ?? [], `${d} is required to be dropped but was not found`));
  return errs;
}
