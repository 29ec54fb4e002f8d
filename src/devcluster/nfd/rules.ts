import { TEE_PLATFORMS, type TeeKind } from '../../api/confidential.ts';
import type { CustomResourceDefinition, KubeObject, ResourceType } from '../../api/meta.ts';
import type { Node } from '../../kube/resources.ts';

/**
 * Node Feature Discovery's NodeFeatureRules, as far as the dev cluster needs them: the CRD
 * (nfd.k8s-sigs.io/v1alpha1, cluster-scoped), the features a node's (simulated) hardware shows nfd-worker,
 * and nfd-master's evaluation of the rules into labels and extended resources (pure). A TEE's key slots
 * reach the node's capacity this way, so that the real kube-scheduler counts them.
 */

/** The match operators the dev cluster's rules use (a subset of NFD's). */
export type MatchOp = 'Exists' | 'DoesNotExist' | 'IsTrue' | 'IsFalse' | 'In' | 'NotIn' | 'Gt' | 'Lt';

export interface NodeFeatureRuleRule {
  name: string;
  labels?: Record<string, string>;
  /** A literal count, or `@feature.attribute` to take the node's attribute's value. */
  extendedResources?: Record<string, string>;
  matchFeatures?: { feature: string; matchExpressions?: Record<string, { op: MatchOp; value?: string[] }> }[];
}

export interface NodeFeatureRule extends KubeObject {
  spec: { rules: NodeFeatureRuleRule[] };
}

export const NFD_GROUP = 'nfd.k8s-sigs.io';
export const NodeFeatureRules: ResourceType<NodeFeatureRule> = {
  group: NFD_GROUP,
  version: 'v1alpha1',
  plural: 'nodefeaturerules',
  kind: 'NodeFeatureRule',
  namespaced: false,
};

/** Which extended resources nfd-master manages on a node, as it records them. */
export const NFD_EXTENDED_RESOURCES_ANNOTATION = 'nfd.node.kubernetes.io/extended-resources';

/**
 * Dev-cluster only: stands for the node's CPU security features as nfd-worker reads them from the kernel
 * (the `cpu.security` feature's attributes, `key=value` comma-separated), e.g.
 * `tdx.enabled=true,tdx.total_keys=4`. The dev cluster sets it for `--tee`; change it on a node to change
 * what the hardware offers.
 */
export const CPU_SECURITY_ANNOTATION = 'osc.dev/cpu-security';

export function nodeFeatureRuleCRD(): CustomResourceDefinition {
  const rule = {
    type: 'object',
    required: ['name'],
    properties: {
      name: { type: 'string' },
      labels: { type: 'object', additionalProperties: { type: 'string' } },
      extendedResources: { type: 'object', additionalProperties: { type: 'string' } },
      matchFeatures: { type: 'array', items: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true } },
      matchAny: { type: 'array', items: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true } },
    },
    'x-kubernetes-preserve-unknown-fields': true,
  };
  return {
    apiVersion: 'apiextensions.k8s.io/v1',
    kind: 'CustomResourceDefinition',
    metadata: { name: `nodefeaturerules.${NFD_GROUP}` },
    spec: {
      group: NFD_GROUP,
      scope: 'Cluster',
      names: {
        kind: 'NodeFeatureRule',
        listKind: 'NodeFeatureRuleList',
        plural: 'nodefeaturerules',
        singular: 'nodefeaturerule',
        shortNames: ['nfr'],
      },
      versions: [
        {
          name: 'v1alpha1',
          served: true,
          storage: true,
          schema: {
            openAPIV3Schema: {
              type: 'object',
              required: ['spec'],
              properties: {
                apiVersion: { type: 'string' },
                kind: { type: 'string' },
                metadata: { type: 'object' },
                spec: { type: 'object', required: ['rules'], properties: { rules: { type: 'array', items: rule } } },
              },
            },
          },
        },
      ],
    },
  } as CustomResourceDefinition;
}

/** The hardware annotation for a TEE with this many key slots. */
export function teeHardware(kind: TeeKind, keySlots: number): string {
  if (kind === 'tdx') return `tdx.enabled=true,tdx.total_keys=${keySlots}`;
  if (kind === 'snp') return `sev.enabled=true,sev.es.enabled=true,sev.snp.enabled=true,sev.encrypted_state_ids=${keySlots}`;
  return 'se.enabled=true';
}

/** The NodeFeatureRule the product documentation has the administrator create for a TEE. */
export function teeNodeFeatureRule(kind: TeeKind): NodeFeatureRule {
  const tee = TEE_PLATFORMS.find((t) => t.kind === kind);
  const rules: Record<TeeKind, NodeFeatureRuleRule> = {
    tdx: {
      name: 'intel.tdx',
      labels: { [tee?.label ?? '']: 'true' },
      extendedResources: { 'tdx.intel.com/keys': '@cpu.security.tdx.total_keys' },
      matchFeatures: [{ feature: 'cpu.security', matchExpressions: { 'tdx.enabled': { op: 'Exists' } } }],
    },
    snp: {
      name: 'amd.sev-snp',
      labels: { [tee?.label ?? '']: 'true' },
      extendedResources: { 'sev-snp.amd.com/esids': '@cpu.security.sev.encrypted_state_ids' },
      matchFeatures: [{ feature: 'cpu.security', matchExpressions: { 'sev.snp.enabled': { op: 'Exists' } } }],
    },
    se: {
      name: 'ibm.se',
      labels: { [tee?.label ?? '']: 'true' },
      matchFeatures: [{ feature: 'cpu.security', matchExpressions: { 'se.enabled': { op: 'IsTrue' } } }],
    },
  };
  return { metadata: { name: `${kind}-node-feature-rule` }, spec: { rules: [rules[kind]] } };
}

/** The features nfd-worker would report for this node's hardware: feature name -> attributes. */
export function nodeFeatures(node: Node): Map<string, Record<string, string>> {
  const features = new Map<string, Record<string, string>>();
  const raw = node.metadata.annotations?.[CPU_SECURITY_ANNOTATION];
  if (raw) {
    const attrs: Record<string, string> = {};
    for (const kv of raw.split(',')) {
      const [k, v] = kv.split('=');
      if (k?.trim()) attrs[k.trim()] = (v ?? '').trim();
    }
    features.set('cpu.security', attrs);
  }
  return features;
}

function matchesOne(attrs: Record<string, string> | undefined, key: string, e: { op: MatchOp; value?: string[] }): boolean {
  const v = attrs?.[key];
  switch (e.op) {
    case 'Exists':
      return v !== undefined;
    case 'DoesNotExist':
      return v === undefined;
    case 'IsTrue':
      return v === 'true';
    case 'IsFalse':
      return v === 'false';
    case 'In':
      return v !== undefined && (e.value ?? []).includes(v);
    case 'NotIn':
      return v !== undefined && !(e.value ?? []).includes(v);
    case 'Gt':
      return v !== undefined && Number(v) > Number(e.value?.[0]);
    case 'Lt':
      return v !== undefined && Number(v) < Number(e.value?.[0]);
    default:
      return false;
  }
}

/**
 * nfd-master's reading of the rules for one node: the labels and extended resources of every rule whose
 * features all match. A back-reference (`@cpu.security.tdx.total_keys`) takes the node's attribute; one
 * the node lacks publishes nothing (as nfd-master skips it).
 */
export function evaluateRules(
  rules: readonly NodeFeatureRule[],
  features: Map<string, Record<string, string>>,
): { labels: Record<string, string>; extendedResources: Record<string, string> } {
  const labels: Record<string, string> = {};
  const extendedResources: Record<string, string> = {};
  for (const nfr of rules) {
    for (const r of nfr.spec?.rules ?? []) {
      const ok = (r.matchFeatures ?? []).every((m) =>
        Object.entries(m.matchExpressions ?? {}).every(([k, e]) => matchesOne(features.get(m.feature), k, e)),
      );
      if (!ok) continue;
      Object.assign(labels, r.labels ?? {});
      for (const [name, value] of Object.entries(r.extendedResources ?? {})) {
        if (!value.startsWith('@')) {
          extendedResources[name] = value;
          continue;
        }
        const ref = value.slice(1);
        const feature = [...features.keys()].find((f) => ref.startsWith(`${f}.`));
        const attr = feature ? features.get(feature)?.[ref.slice(feature.length + 1)] : undefined;
        if (attr !== undefined && /^\d+$/.test(attr)) extendedResources[name] = attr;
      }
    }
  }
  return { labels, extendedResources };
}
