/**
 * The feature gates: one ConfigMap, `osc-feature-gates`, in the operator's namespace, with the keys and
 * defaults of the original operator. Every value is read strictly: a value that is not one of the allowed
 * ones is reported (naming the key and what it may be), never replaced by the default behind the
 * administrator's back.
 */

/** The ConfigMap the administrator edits; absent means every gate at its default. */
export const FEATURE_GATES_CONFIGMAP = 'osc-feature-gates';

export const DEPLOYMENT_MODES = ['MachineConfig', 'DaemonSet', 'DaemonSetFallback'] as const;
export type DeploymentMode = (typeof DEPLOYMENT_MODES)[number];
export const CAA_UPDATE_STRATEGIES = ['RollingUpdate', 'OnDelete'] as const;
export type CaaUpdateStrategy = (typeof CAA_UPDATE_STRATEGIES)[number];

export interface FeatureGates {
  /** Confidential containers: `kata-cc` on the TEE nodes (and `kata-cc-nvidia-gpu` on their GPU nodes). */
  confidential: boolean;
  /**
   * How kata reaches the nodes: `MachineConfig` (the Machine Config Operator), `DaemonSet` (an installer
   * run by osc), `DaemonSetFallback` (the MachineConfig where that API is served, else the DaemonSet).
   */
  deploymentMode: DeploymentMode;
  /** The update strategy of the peer pods adaptor's DaemonSet. */
  caaUpdateStrategy: CaaUpdateStrategy;
}

/** Each key, the values it accepts, and its default (as the ConfigMap writes it). */
export const FEATURE_GATE_KEYS: { readonly [K in keyof FeatureGates]: { allowed: readonly string[]; default: string } } = {
  confidential: { allowed: ['true', 'false'], default: 'false' },
  deploymentMode: { allowed: DEPLOYMENT_MODES, default: 'DaemonSetFallback' },
  caaUpdateStrategy: { allowed: CAA_UPDATE_STRATEGIES, default: 'RollingUpdate' },
};

export const DEFAULT_FEATURE_GATES: FeatureGates = {
  confidential: false,
  deploymentMode: 'DaemonSetFallback',
  caaUpdateStrategy: 'RollingUpdate',
};

/** One key whose value is not one of its allowed values. */
export interface FeatureGateProblem {
  key: keyof FeatureGates;
  value: string;
  allowed: readonly string[];
  /** The key is under the ConfigMap's binaryData, where a gate is not read (its value is not shown). */
  binary?: true;
}

export interface ParsedFeatureGates {
  /** The gates in effect: the defaults, with every valid value given. */
  gates: FeatureGates;
  /** Keys with a value that is not allowed (in key order). osc does not act on a gate it cannot read. */
  problems: FeatureGateProblem[];
  /** Keys osc does not know (sorted): kept for the administrator's tools, reported, otherwise ignored. */
  unknown: string[];
}

const isKey = (k: string): k is keyof FeatureGates => Object.hasOwn(FEATURE_GATE_KEYS, k);

/**
 * Reads the ConfigMap's data (absent: every default). Values are taken as written: no trimming, no case
 * folding. A gate put under binaryData is a problem too: it would otherwise be silently at its default.
 */
export function parseFeatureGates(
  data: Readonly<Record<string, string>> | undefined,
  binaryData?: Readonly<Record<string, string>>,
): ParsedFeatureGates {
  const gates: FeatureGates = { ...DEFAULT_FEATURE_GATES };
  const problems: FeatureGateProblem[] = [];
  const unknown: string[] = [];
  for (const key of Object.keys(binaryData ?? {})) {
    if (isKey(key)) problems.push({ key, value: '', allowed: FEATURE_GATE_KEYS[key].allowed, binary: true });
    else unknown.push(key);
  }
  for (const [key, value] of Object.entries(data ?? {})) {
    if (!isKey(key)) {
      unknown.push(key);
      continue;
    }
    const { allowed } = FEATURE_GATE_KEYS[key];
    if (typeof value !== 'string' || !allowed.includes(value)) {
      problems.push({ key, value: String(value), allowed });
      continue;
    }
    if (key === 'confidential') gates.confidential = value === 'true';
    else if (key === 'deploymentMode') gates.deploymentMode = value as DeploymentMode;
    else gates.caaUpdateStrategy = value as CaaUpdateStrategy;
  }
  const order = Object.keys(FEATURE_GATE_KEYS);
  problems.sort((a, b) => order.indexOf(a.key) - order.indexOf(b.key));
  return { gates, problems, unknown: unknown.sort() };
}

/** The texts about the feature gates: the KataConfig condition, events and `osc status`. */
export const featureGateTexts = {
  /** A value osc cannot read: the condition's message and the event's note. */
  invalid: (namespace: string, p: FeatureGateProblem) =>
    p.binary
      ? `feature gate "${p.key}" in ConfigMap ${namespace}/${FEATURE_GATES_CONFIGMAP} is under binaryData, where it is not read: move it under data as one of ${p.allowed.join(', ')} (or remove the key for its default, ${FEATURE_GATE_KEYS[p.key].default})`
      : `feature gate "${p.key}" in ConfigMap ${namespace}/${FEATURE_GATES_CONFIGMAP} is ${JSON.stringify(p.value)}: it must be one of ${p.allowed.join(', ')}; fix the value (or remove the key for its default, ${FEATURE_GATE_KEYS[p.key].default})`,
  unknown: (namespace: string, keys: readonly string[]) =>
    `ConfigMap ${namespace}/${FEATURE_GATES_CONFIGMAP} has ${keys.length === 1 ? 'a key' : 'keys'} osc does not know, ignored: ${keys.join(', ')} (known: ${Object.keys(FEATURE_GATE_KEYS).join(', ')})`,
  /**
   * deploymentMode names another platform than the one running: the mode is read when the operator starts,
   * and a platform with kata on the nodes is kept (a switch under it would leave its configuration behind).
   */
  modeMismatch: (mode: DeploymentMode, running: string) =>
    `feature gate deploymentMode is ${mode} but the operator runs the ${running} platform: the mode is read when the operator starts, and the platform that put kata on the nodes is kept while it is there. To move kata to the other platform: delete the KataConfig and wait until it is gone, restart the operator, then create the KataConfig again`,
  /** At start: the mode asks for one platform, but kata is on the nodes through another, which is kept. */
  modeKept: (mode: DeploymentMode, asked: string, kept: string) =>
    `feature gate deploymentMode is ${mode}, which runs the ${asked} platform, but kata is on the nodes through the ${kept} platform: running ${kept} until the KataConfig is deleted (then restart the operator)`,
  /** MachineConfig asked for on a cluster without the Machine Config Operator. */
  noMachineConfigApi: (fallback: string) =>
    `feature gate deploymentMode is MachineConfig but this cluster does not serve the MachineConfig API: running the ${fallback} platform instead`,
  /** One line per gate, for `osc status`. */
  summary: (g: FeatureGates) =>
    `confidential=${g.confidential} deploymentMode=${g.deploymentMode} caaUpdateStrategy=${g.caaUpdateStrategy}`,
};
