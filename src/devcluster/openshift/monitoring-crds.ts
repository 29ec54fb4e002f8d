import type { CustomResourceDefinition } from '../../kube/resources.ts';

/**
 * The Prometheus Operator's `monitoring.coreos.com/v1` ServiceMonitor and PrometheusRule, which every
 * OpenShift cluster serves (its monitoring stack runs the Prometheus Operator), as CRDs for the dev
 * cluster's OpenShift. Without them `kubectl apply` of osc's manifests fails on OpenShift-flavoured dev
 * clusters where a real one succeeds.
 *
 * The schemas are structural and closed: they model the fields of the real definitions that osc writes,
 * with the real ones' required fields, enums and duration pattern, and nothing else. So the API server
 * prunes (or, under kubectl's strict field validation, refuses) a field the real schema does not have,
 * as it would on OpenShift; a field of the real schema osc starts to write must be added here.
 */

type Schema = Record<string, unknown>;

const str = (extra: Schema = {}): Schema => ({ type: 'string', ...extra });
const obj = (properties: Record<string, Schema>, extra: Schema = {}): Schema => ({ type: 'object', properties, ...extra });
const list = (items: Schema, extra: Schema = {}): Schema => ({ type: 'array', items, ...extra });

/** The Prometheus Operator's Duration: e.g. 30s, 1m, 1h30m. */
const duration = str({ pattern: '^(0|(([0-9]+)y)?(([0-9]+)w)?(([0-9]+)d)?(([0-9]+)h)?(([0-9]+)m)?(([0-9]+)s)?(([0-9]+)ms)?)$' });

const labelSelector = obj(
  {
    matchExpressions: list(obj({ key: str(), operator: str(), values: list(str()) }, { required: ['key', 'operator'] })),
    matchLabels: { type: 'object', additionalProperties: str() },
  },
  { 'x-kubernetes-map-type': 'atomic' },
);

const endpoint = obj({
  port: str(),
  path: str(),
  interval: duration,
  scrapeTimeout: duration,
  scheme: str({ enum: ['http', 'https', 'HTTP', 'HTTPS'] }),
  bearerTokenFile: str(),
  tlsConfig: obj({ caFile: str(), certFile: str(), keyFile: str(), serverName: str(), insecureSkipVerify: { type: 'boolean' } }),
});

const serviceMonitorSpec = obj(
  {
    selector: labelSelector,
    namespaceSelector: obj({ any: { type: 'boolean' }, matchNames: list(str()) }),
    endpoints: list(endpoint),
    jobLabel: str(),
  },
  { required: ['selector'] },
);

const rule = obj(
  {
    record: str(),
    alert: str(),
    expr: { 'x-kubernetes-int-or-string': true, anyOf: [{ type: 'integer' }, { type: 'string' }] },
    for: duration,
    labels: { type: 'object', additionalProperties: str() },
    annotations: { type: 'object', additionalProperties: str() },
  },
  { required: ['expr'] },
);

const prometheusRuleSpec = obj({
  groups: list(obj({ name: str({ minLength: 1 }), interval: duration, rules: list(rule) }, { required: ['name'] }), {
    'x-kubernetes-list-map-keys': ['name'],
    'x-kubernetes-list-type': 'map',
  }),
});

function crd(kind: string, plural: string, shortNames: string[], spec: Schema, requireSpec: boolean): CustomResourceDefinition {
  return {
    apiVersion: 'apiextensions.k8s.io/v1',
    kind: 'CustomResourceDefinition',
    metadata: {
      name: `${plural}.monitoring.coreos.com`,
      labels: { 'osc.dev/simulated-openshift-api': 'true' },
    },
    spec: {
      group: 'monitoring.coreos.com',
      scope: 'Namespaced',
      names: { kind, listKind: `${kind}List`, plural, singular: kind.toLowerCase(), shortNames, categories: ['prometheus-operator'] },
      versions: [
        {
          name: 'v1',
          served: true,
          storage: true,
          schema: {
            openAPIV3Schema: {
              type: 'object',
              ...(requireSpec ? { required: ['spec'] } : {}),
              properties: { apiVersion: str(), kind: str(), metadata: { type: 'object' }, spec },
            },
          },
        },
      ],
    },
  };
}

/** The monitoring APIs an OpenShift cluster serves and osc writes. */
export function monitoringCRDs(): CustomResourceDefinition[] {
  return [
    crd('ServiceMonitor', 'servicemonitors', ['smon'], serviceMonitorSpec, true),
    crd('PrometheusRule', 'prometheusrules', ['promrule'], prometheusRuleSpec, true),
  ];
}
