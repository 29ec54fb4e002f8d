// The machine's speed, as the operator's work meets it: a fixed workload like the operator's per watch event
// (parse a node's JSON, keep the part the caches keep, compare it with the last version, write a small patch),
// run under the operator's Node flags (lite mode: V8's interpreter only). Prints the CPU it took, in ms.
// The same code takes 2x the CPU on some days on the shared development machine: this figure beside a
// benchmark's says whether a change in the operator's CPU is the operator's or the machine's.
const node = (i) => ({
  apiVersion: 'v1',
  kind: 'Node',
  metadata: {
    name: `worker-${i}`,
    uid: `0000-${i}`,
    resourceVersion: String(1000 + i),
    labels: { 'kubernetes.io/hostname': `worker-${i}`, 'node-role.kubernetes.io/worker': '', type: 'kwok' },
    annotations: {
      'machineconfiguration.openshift.io/currentConfig': 'rendered-worker-0123456789abcdef',
      'machineconfiguration.openshift.io/desiredConfig': 'rendered-kata-oc-0123456789abcdef',
      'machineconfiguration.openshift.io/state': 'Working',
    },
  },
  spec: { providerID: `kwok://worker-${i}` },
  status: {
    capacity: { cpu: '32', memory: '256Gi', pods: '110' },
    allocatable: { cpu: '32', memory: '256Gi', pods: '110' },
    conditions: ['Ready', 'MemoryPressure', 'DiskPressure', 'PIDPressure', 'NetworkUnavailable'].map((type) => ({
      type,
      status: type === 'Ready' ? 'True' : 'False',
      lastHeartbeatTime: '2026-11-27T00:00:00Z',
      lastTransitionTime: '2026-11-27T00:00:00Z',
      reason: 'KubeletReady',
      message: 'kubelet is posting ready status',
    })),
    nodeInfo: { kubeletVersion: 'v1.34.4', containerRuntimeVersion: 'cri-o://1.34.0', osImage: 'Red Hat Enterprise Linux CoreOS' },
    images: Array.from({ length: 10 }, (_, j) => ({
      names: [`quay.io/example/image-${j}@sha256:${'0'.repeat(64)}`],
      sizeBytes: 123456789,
    })),
  },
});
const events = Array.from({ length: 100 }, (_, i) => JSON.stringify({ type: 'MODIFIED', object: node(i) }));
const start = process.cpuUsage();
const cache = new Map();
let patches = 0;
for (let round = 0; round < 100; round++) {
  for (const line of events) {
    const { object: n } = JSON.parse(line);
    const kept = { metadata: n.metadata, spec: n.spec, status: { capacity: n.status.capacity, allocatable: n.status.allocatable } };
    const before = cache.get(n.metadata.name);
    if (
      !before ||
      before.metadata.annotations['machineconfiguration.openshift.io/state'] !==
        n.metadata.annotations['machineconfiguration.openshift.io/state']
    )
      patches += JSON.stringify({ metadata: { labels: { 'node-role.kubernetes.io/kata-oc': '' } } }).length;
    cache.set(n.metadata.name, kept);
  }
}
const used = process.cpuUsage(start);
process.stdout.write(`${JSON.stringify({ cpuMs: Math.round((used.user + used.system) / 1000), patches })}\n`);
