import { useMemo } from 'preact/hooks';
import { teePlatform } from '../../api/confidential.ts';
import { anyTeeNode, confidentialOutlook, summarizeConfidential } from '../../api/confidential-summary.ts';
import { FEATURE_GATES_CONFIGMAP } from '../../api/featuregates.ts';
import { OPERATOR_NAMESPACE } from '../../api/names.ts';
import type { TeeNode } from '../../api/tee.ts';
import { type KubeObj, useWatch } from './api.ts';

const NS = OPERATOR_NAMESPACE;
type PodObj = KubeObj & { spec?: { nodeName?: string; runtimeClassName?: string }; status?: { phase?: string } };

/**
 * The feature gates, the TEE the nodes have and the key slots used and free on each TEE node, live (the
 * same summary `osc status` prints). Pods are watched only where a TEE node exists. On the create form
 * (`outlook`) it also says what a KataConfig created now would get: kata-cc, or the failure it would report.
 */
export function ConfidentialPanel({ nodes, outlook = false }: { nodes: readonly KubeObj[]; outlook?: boolean }) {
  const byName = `fieldSelector=${encodeURIComponent(`metadata.name=${FEATURE_GATES_CONFIGMAP}`)}`;
  const cm = useWatch<KubeObj & { data?: Record<string, string>; binaryData?: Record<string, string> }>(
    `/api/v1/namespaces/${NS}/configmaps`,
    byName,
  ).items[0];
  const teeNodes = nodes as unknown as TeeNode[];
  const hasTee = anyTeeNode(teeNodes);
  const pods = useWatch<PodObj>(hasTee ? '/api/v1/pods' : null);
  const s = useMemo(() => summarizeConfidential(cm?.data, teeNodes, pods.items, NS, cm?.binaryData), [cm, teeNodes, pods.items]);
  const ahead = outlook ? confidentialOutlook(s, NS) : undefined;
  return (
    <div data-test="confidential">
      <h2>Confidential containers</h2>
      {ahead && (
        <p class={ahead.level === 'warning' ? 'help warn' : 'help'} data-test="confidential-outlook" data-level={ahead.level}>
          {ahead.text}
        </p>
      )}
      <dl class="spec">
        <dt>confidential</dt>
        <dd data-gate="confidential">{String(s.gates.confidential)}</dd>
        <dt>deploymentMode</dt>
        <dd data-gate="deploymentMode">{s.gates.deploymentMode}</dd>
        <dt>caaUpdateStrategy</dt>
        <dd data-gate="caaUpdateStrategy">{s.gates.caaUpdateStrategy}</dd>
        <dt>TEE</dt>
        <dd data-test="tee">
          {s.tee === 'none'
            ? 'none found on the nodes'
            : s.tee === 'multiple'
              ? `several kinds (${(s.teesFound ?? []).map((f) => teePlatform(f.kind).title).join(', ')}): only one per cluster is supported`
              : teePlatform(s.tee).title}
        </dd>
      </dl>
      {s.gateProblems.map((p) => (
        <p class="error" key={p}>
          {p}
        </p>
      ))}
      {s.keySlots.length > 0 && (
        <table class="list" data-test="key-slots">
          <thead>
            <tr>
              <th>Node</th>
              <th>Key slots used</th>
              <th>Free</th>
              <th>Resource</th>
            </tr>
          </thead>
          <tbody>
            {s.keySlots.map((k) => (
              <tr key={k.node} data-node={k.node}>
                <td>{k.node}</td>
                <td>{k.used}</td>
                <td>{Math.max(0, k.allocatable - k.used)}</td>
                <td>
                  {k.resource} ({k.allocatable})
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </div>
  );
}
