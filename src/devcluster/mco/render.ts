import { createHash } from 'node:crypto';
import { objectName } from '../../api/meta.ts';
import { LOG_LEVELS, MC_ROLE_LABEL } from '../../api/names.ts';
import type { ContainerRuntimeConfig, MachineConfig, MachineConfigPool } from '../../api/openshift.ts';
import { selectorMatches, selectorString } from '../../kube/labels.ts';
import type { KubeObject, OwnerReference } from '../../kube/types.ts';
import { byName } from './node-state.ts';

/**
 * The render controller and the ContainerRuntimeConfig controller's pure parts: each pool's configuration
 * is rendered from the MachineConfigs its machineConfigSelector selects into a MachineConfig named
 * `rendered-<pool>-<md5 of the merged config>`; each ContainerRuntimeConfig becomes a generated
 * MachineConfig `99-<pool>-generated-containerruntime` for every pool it selects.
 */

export const GENERATED_BY_CONTROLLER_ANNOTATION = 'machineconfiguration.openshift.io/generated-by-controller-version';
export const RELEASE_IMAGE_VERSION_ANNOTATION = 'machineconfiguration.openshift.io/release-image-version';
/** The version the simulated controller stamps on what it generates. */
export const CONTROLLER_VERSION = '4f7b2c1e8d3a9b6c5e0f1a2b3c4d5e6f7a8b9c0d';
export const RELEASE_VERSION = '4.19.0';
export const IGNITION_SPEC_VERSION = '3.4.0';
export const DEFAULT_OS_IMAGE_URL =
  'quay.io/openshift-release-dev/ocp-v4.0-art-dev@sha256:2f2a6a1e9c9f5bb8d4c8e0d3a1b7c6e5f4a3b2c1d0e9f8a7b6c5d4e3f2a1b0c9';
export const MCO_API_VERSION = 'machineconfiguration.openshift.io/v1';

export type MCSpec = MachineConfig['spec'];
export interface ConfigPart {
  name: string;
  labels: Record<string, string>;
  spec: MCSpec;
}

interface Ignition {
  ignition?: { version?: string };
  storage?: { files?: { path: string }[]; [k: string]: unknown };
  systemd?: { units?: { name: string }[] };
  passwd?: { users?: { name: string; sshAuthorizedKeys?: string[] }[] };
  [k: string]: unknown;
}

/** Merges MachineConfigs (in name order) the way the MCO does: later files/units win, lists are unions. */
export function mergeMachineConfigs(parts: readonly { spec: MCSpec }[]): MCSpec {
  const files = new Map<string, unknown>();
  const units = new Map<string, unknown>();
  const users = new Map<string, { name: string; sshAuthorizedKeys?: string[] }>();
  const extraIgnition: Record<string, unknown> = {};
  const kargs: string[] = [];
  const extensions: string[] = [];
  let fips = false;
  let kernelType = '';
  let osImageURL = '';
  let extensionsImage = '';
  for (const { spec } of parts) {
    const cfg = (spec?.config ?? {}) as Ignition;
    for (const f of cfg.storage?.files ?? []) files.set(f.path, f);
    for (const u of cfg.systemd?.units ?? []) units.set(u.name, u);
    for (const u of cfg.passwd?.users ?? []) {
      const prev = users.get(u.name);
      const keys = [...(prev?.sshAuthorizedKeys ?? [])];
      for (const k of u.sshAuthorizedKeys ?? []) if (!keys.includes(k)) keys.push(k);
      users.set(u.name, { ...prev, ...u, sshAuthorizedKeys: keys });
    }
    for (const [k, v] of Object.entries(cfg)) if (!['ignition', 'storage', 'systemd', 'passwd'].includes(k)) extraIgnition[k] = v;
    for (const a of spec?.kernelArguments ?? []) if (!kargs.includes(a)) kargs.push(a);
    for (const e of spec?.extensions ?? []) if (!extensions.includes(e)) extensions.push(e);
    if (spec?.fips) fips = true;
    if (spec?.kernelType) kernelType = spec.kernelType;
    if (spec?.osImageURL) osImageURL = spec.osImageURL;
    if (typeof spec?.baseOSExtensionsContainerImage === 'string' && spec.baseOSExtensionsContainerImage)
      extensionsImage = spec.baseOSExtensionsContainerImage;
  }
  const config: Ignition = { ignition: { version: IGNITION_SPEC_VERSION }, ...extraIgnition };
  if (users.size) config.passwd = { users: [...users.values()] };
  if (files.size) config.storage = { files: [...files.values()] as { path: string }[] };
  if (units.size) config.systemd = { units: [...units.values()] as { name: string }[] };
  return {
    baseOSExtensionsContainerImage: extensionsImage || `${DEFAULT_OS_IMAGE_URL.split('@')[0]}@sha256:${'e'.repeat(64)}`,
    config,
    extensions,
    fips,
    kernelArguments: kargs,
    kernelType: kernelType || 'default',
    osImageURL: osImageURL || DEFAULT_OS_IMAGE_URL,
  };
}

/** JSON with sorted keys: the same content always hashes the same. */
export function canonicalJSON(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map(canonicalJSON).join(',')}]`;
  if (v && typeof v === 'object') {
    const entries = Object.entries(v as Record<string, unknown>)
      .filter(([, x]) => x !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, x]) => `${JSON.stringify(k)}:${canonicalJSON(x)}`).join(',')}}`;
  }
  return JSON.stringify(v) ?? 'null';
}

export const renderedName = (pool: string, merged: MCSpec): string =>
  `rendered-${pool}-${createHash('md5').update(canonicalJSON(merged)).digest('hex')}`;

export const ownerOf = (o: KubeObject, kind: string): OwnerReference | undefined =>
  o.metadata.ownerReferences?.find((r) => r.kind === kind);
export const isRenderedMC = (mc: MachineConfig): boolean => !!ownerOf(mc, 'MachineConfigPool') && objectName(mc).startsWith('rendered-');
export const isGeneratedCrcMC = (mc: MachineConfig): boolean => !!ownerOf(mc, 'ContainerRuntimeConfig');

const toSnake = (s: string) => s.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);
const tomlValue = (v: unknown) => (typeof v === 'number' || typeof v === 'boolean' ? String(v) : JSON.stringify(String(v)));

/** The CRI-O drop-in files a ContainerRuntimeConfig turns into (one per setting, as the real controller). */
export function containerRuntimeConfigSpec(crc: ContainerRuntimeConfig): MCSpec {
  const settings = crc.spec?.containerRuntimeConfig ?? {};
  const files = Object.keys(settings)
    .sort()
    .filter((k) => settings[k] !== undefined && settings[k] !== null && settings[k] !== '')
    .map((k) => {
      const body =
        k === 'overlaySize'
          ? `[storage]\n  [storage.options]\n    size = ${tomlValue(settings[k])}\n`
          : `[crio]\n  [crio.runtime]\n    ${toSnake(k)} = ${tomlValue(settings[k])}\n`;
      const path =
        k === 'overlaySize' ? '/etc/containers/storage.conf.d/01-ctrcfg-overlaySize.conf' : `/etc/crio/crio.conf.d/01-ctrcfg-${k}`;
      return {
        path,
        mode: 0o644,
        overwrite: true,
        contents: { source: `data:text/plain;charset=utf-8;base64,${Buffer.from(body).toString('base64')}` },
      };
    });
  return {
    config: { ignition: { version: IGNITION_SPEC_VERSION }, storage: { files } },
    extensions: [],
    fips: false,
    kernelArguments: [],
    kernelType: '',
    osImageURL: '',
  };
}

export function validateContainerRuntimeConfig(crc: ContainerRuntimeConfig): string | undefined {
  const cfg = crc.spec?.containerRuntimeConfig;
  if (!cfg) return 'containerRuntimeConfig is empty';
  if (cfg.logLevel !== undefined && !(LOG_LEVELS as readonly string[]).includes(cfg.logLevel))
    return `invalid LogLevel ${JSON.stringify(cfg.logLevel)}, must be one of ${LOG_LEVELS.join(', ')}`;
  if (cfg.pidsLimit !== undefined && cfg.pidsLimit !== -1 && cfg.pidsLimit < 20)
    return `invalid PidsLimit ${cfg.pidsLimit}, must be at least 20`;
  return undefined;
}

export interface GeneratedMC extends ConfigPart {
  crc: string;
  crcUid: string;
  pool: string;
}

/** The MachineConfigs the ContainerRuntimeConfig controller generates (or will), per pool, in pool order. */
export function generatedMachineConfigs(crcs: readonly ContainerRuntimeConfig[], pools: readonly MachineConfigPool[]): GeneratedMC[] {
  const valid = crcs
    .filter((c) => !c.metadata.deletionTimestamp && validateContainerRuntimeConfig(c) === undefined)
    .sort(
      (a, b) => byName(a.metadata.creationTimestamp ?? '', b.metadata.creationTimestamp ?? '') || byName(a.metadata.name, b.metadata.name),
    );
  const list: GeneratedMC[] = [];
  for (const pool of [...pools].sort((a, b) => byName(a.metadata.name, b.metadata.name))) {
    const poolName = objectName(pool);
    const selecting = valid.filter((c) => selectorMatches(c.spec?.machineConfigPoolSelector, pool.metadata.labels));
    selecting.forEach((c, i) => {
      list.push({
        name: `99-${poolName}-generated-containerruntime${i ? `-${i}` : ''}`,
        labels: { [MC_ROLE_LABEL]: poolName },
        spec: containerRuntimeConfigSpec(c),
        crc: objectName(c),
        crcUid: c.metadata.uid ?? '',
        pool: poolName,
      });
    });
  }
  return list;
}

/**
 * What the render controller refuses in a MachineConfig before merging it (the MCO validates each Ignition
 * config, and a pool with an invalid one stays on its old configuration, RenderDegraded): a file whose path
 * is not absolute, or whose contents are not a URL it can read (here, only `data:` URLs are served).
 */
export function validateMachineConfigFiles(name: string, spec: MCSpec): string | undefined {
  const files = ((spec?.config ?? {}) as Ignition).storage?.files ?? [];
  for (const f of files as { path?: unknown; contents?: { source?: unknown } }[]) {
    const path = typeof f.path === 'string' ? f.path : '';
    if (!path.startsWith('/')) return `MachineConfig ${name}: storage.files: ${JSON.stringify(f.path ?? '')}: path not absolute`;
    const source = f.contents?.source;
    if (source === undefined || source === '') continue;
    if (typeof source !== 'string' || !/^data:[^,]*,/.test(source) || (/;base64,/.test(source) && !isBase64(source.split(',')[1] ?? '')))
      return `MachineConfig ${name}: storage.files: ${path}: unable to parse url`;
  }
  return undefined;
}

const isBase64 = (s: string) => /^[A-Za-z0-9+/]*={0,2}$/.test(s) && s.length % 4 === 0;

export interface RenderOk {
  name: string;
  spec: MCSpec;
  source: { apiVersion: string; kind: string; name: string }[];
}
export type RenderResult = RenderOk | { error: string };

/** A pool's rendered configuration from the MachineConfigs on the cluster and the generated ones. */
export function renderPool(
  pool: MachineConfigPool,
  machineConfigs: Iterable<MachineConfig>,
  generated: readonly GeneratedMC[],
): RenderResult {
  const sel = pool.spec?.machineConfigSelector;
  const parts: ConfigPart[] = [];
  for (const mc of machineConfigs) {
    if (mc.metadata.deletionTimestamp || isRenderedMC(mc) || isGeneratedCrcMC(mc)) continue;
    if (!selectorMatches(sel, mc.metadata.labels)) continue;
    const invalid = validateMachineConfigFiles(objectName(mc), mc.spec);
    if (invalid) return { error: invalid };
    parts.push({ name: objectName(mc), labels: mc.metadata.labels ?? {}, spec: mc.spec });
  }
  for (const g of generated) if (selectorMatches(sel, g.labels)) parts.push(g);
  if (parts.length === 0) return { error: `no MachineConfigs found matching selector ${selectorString(sel)}` };
  parts.sort((a, b) => byName(a.name, b.name));
  const spec = mergeMachineConfigs(parts);
  return {
    name: renderedName(objectName(pool), spec),
    spec,
    source: parts.map((p) => ({ apiVersion: MCO_API_VERSION, kind: 'MachineConfig', name: p.name })),
  };
}
