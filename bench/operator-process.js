// The operator in a process of its own, for the benchmark: its memory, CPU and API traffic are then its
// own. Plain JavaScript over the compiled build (dist/, `npm run build`), as the image runs it: no type
// stripping (which alone adds about 30 MiB), and the cluster is loaded the way `osc run` loads it.
//
// Answers over IPC: {cmd: 'mark'} (CPU seconds, API requests and writes so far, for the windows the
// benchmark measures), {cmd: 'report'} (peak RSS, peak heap, requests by verb and resource, status
// writes and 409s), {cmd: 'idle'} (stop sampling), {cmd: 'profile', phase} and {cmd: 'stop'}.
//
// With BENCH_PROFILE_DIR set, {cmd: 'profile', phase} ends the CPU profile of the phase before (written to
// DIR/<phase>.cpuprofile, for Chrome's DevTools or `node bench/profile-top.ts`) and starts one for `phase`;
// without it, it only answers. A profile per phase tells the install's cost from idling's.
//
// Credentials: `--in-cluster DIR` reads a service account token and CA from DIR with the API server in
// KUBERNETES_SERVICE_HOST/PORT, as in a pod (the generic client library is then never loaded, as in the
// image); a kubeconfig path instead loads the cluster as `osc run --kubeconfig` does.
import { createWriteStream, readdirSync, readFileSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { getHeapStatistics } from 'node:v8';
import { KubeClient } from '../dist/kube/client.js';
import { inClusterCredentials } from '../dist/kube/credentials.js';
import { createOperator } from '../dist/operator.js';
import { createLogger, silentLogger } from '../dist/runtime/log.js';
import { RuntimeMetrics } from '../dist/runtime/metrics.js';

const [arg, dir] = process.argv.slice(2);
if (!arg || !process.send) throw new Error('usage: forked with a kubeconfig path, or --in-cluster DIR');
const cluster =
  arg === '--in-cluster' ? inClusterCredentials({ dir }) : await (await import('../dist/cli/common.js')).loadCluster({ kubeconfig: arg });

// Node patches by node, to show which are made more than once (the target is one per node).
const nodePatches = new Map();
const patch = KubeClient.prototype.patch;
// And how long the API server takes to answer a KataConfig status write: the part of the status delay
// that is the cluster's, not the operator's.
const statusWriteMs = [];
// Writes that changed nothing: the API server answered with the version the object had already (as the
// operator's watches or its own last write showed it). The target is none.
const versions = new Map();
const versionKey = (rt, namespace, name) => `${rt.plural}/${namespace ?? ''}/${name ?? ''}`;
const redundantWrites = {};
// A KataNode status written again with nothing changed but its lastTransitionTime is no state change
// either (a pass that planned a transition already on its way): counted apart, under the same target.
const kataNodeStatuses = new Map();
const TIMESTAMP_ONLY = 'katanodes (lastTransitionTime only)';
const noteKataNode = (name, o) => {
  const status = o?.status;
  if (!status) return;
  const { lastTransitionTime, ...rest } = status;
  const shape = JSON.stringify(rest);
  const before = kataNodeStatuses.get(name);
  if (before && before.shape === shape && before.lastTransitionTime !== lastTransitionTime)
    redundantWrites[TIMESTAMP_ONLY] = (redundantWrites[TIMESTAMP_ONLY] ?? 0) + 1;
  kataNodeStatuses.set(name, { shape, lastTransitionTime });
};
// The version known when the write was sent (its own watch event may come before its answer).
const checked = (rt, namespace, name, p) => {
  const key = versionKey(rt, namespace, name);
  const before = versions.get(key);
  return p.then((o) => {
    const rv = o?.metadata?.resourceVersion;
    if (rv && before === rv) redundantWrites[rt.plural] = (redundantWrites[rt.plural] ?? 0) + 1;
    else if (rt.plural === 'katanodes') noteKataNode(name, o);
    return o;
  });
};
KubeClient.prototype.patch = function (rt, name, body, opts) {
  return checked(rt, opts?.namespace, name, patchCounted.call(this, rt, name, body, opts));
};
const update = KubeClient.prototype.update;
KubeClient.prototype.update = function (rt, obj, opts) {
  return checked(rt, obj.metadata?.namespace, obj.metadata?.name, update.call(this, rt, obj, opts));
};
const updateStatus = KubeClient.prototype.updateStatus;
KubeClient.prototype.updateStatus = function (rt, obj, opts) {
  return checked(rt, obj.metadata?.namespace, obj.metadata?.name, updateStatus.call(this, rt, obj, opts));
};
function patchCounted(rt, name, body, opts) {
  if (rt.plural === 'nodes') {
    const list = nodePatches.get(name) ?? [];
    list.push(JSON.stringify(body));
    nodePatches.set(name, list);
  }
  if (rt.plural === 'kataconfigs' && opts?.subresource === 'status') {
    const t = performance.now();
    const done = () => statusWriteMs.push(performance.now() - t);
    const p = patch.call(this, rt, name, body, opts);
    p.then(done, done);
    return p;
  }
  return patch.call(this, rt, name, body, opts);
}
// Watch events by resource: what the operator is given to do while nothing it owns changes.
const watchEvents = {};
const watch = KubeClient.prototype.watch;
KubeClient.prototype.watch = function (rt, opts, onEvent) {
  return watch.call(this, rt, opts, (ev) => {
    watchEvents[rt.plural] = (watchEvents[rt.plural] ?? 0) + 1;
    const rv = ev?.object?.metadata?.resourceVersion;
    if (rv && ev.type !== 'BOOKMARK') versions.set(versionKey(rt, ev.object.metadata.namespace, ev.object.metadata.name), rv);
    onEvent(ev);
  });
};
const repeatedNodePatches = () => {
  const repeated = [...nodePatches].filter(([, l]) => l.length > 1);
  return { nodes: repeated.length, examples: repeated.slice(0, 3).map(([name, l]) => ({ name, patches: l })) };
};

// Heap is sampled (peak RSS comes from the kernel) every 250 ms. RSS is memory the process made
// (anonymous: heap, stacks, buffers) plus the pages of files it maps (the node binary's code, shared and
// reclaimable): sampled apart, with the anonymous part's peak.
let peakHeapUsed = 0;
let peakHeapTotal = 0;
let peakRssAnonKiB = 0;
let rssFileAtPeakKiB = 0;
const rssParts = () => {
  const status = readFileSync('/proc/self/status', 'utf8');
  const kib = (field) => Number(new RegExp(`^${field}:\\s+(\\d+)`, 'm').exec(status)?.[1] ?? 0);
  return { anon: kib('RssAnon'), file: kib('RssFile') };
};
const sampleHeap = () => {
  const h = getHeapStatistics();
  peakHeapUsed = Math.max(peakHeapUsed, h.used_heap_size);
  peakHeapTotal = Math.max(peakHeapTotal, h.total_heap_size);
  const { anon, file } = rssParts();
  if (anon > peakRssAnonKiB) {
    peakRssAnonKiB = anon;
    rssFileAtPeakKiB = file;
  }
};
// Sampling costs about 0.1 CPU-second a minute itself: it stops before the idle window ({cmd: 'idle'}),
// whose CPU is the operator's alone (peak RSS still comes from the kernel's high-water mark).
const sampler = setInterval(sampleHeap, 250);
sampler.unref();

const metrics = new RuntimeMetrics();
const op = await createOperator({
  kubeConfig: cluster,
  // BENCH_OPERATOR_LOG=FILE: the operator's debug log (every reconcile pass, with its timing) for a look inside.
  log: process.env.BENCH_OPERATOR_LOG
    ? createLogger({ level: 'debug', destination: createWriteStream(process.env.BENCH_OPERATOR_LOG) })
    : silentLogger(),
  // As the Deployment runs it: with leader election (its default timings, OpenShift's: a renewal every 26 s), whose renewals are writes.
  leaderElection: true,
  identity: 'osc-bench',
  metricsAddress: '',
  healthAddress: '',
  webhook: { address: '127.0.0.1:0', url: 'https://127.0.0.1:{port}' },
  metrics,
  // BENCH_KATANODE_SOAK_MS: osc run --katanode-soak, short, so that a lastKnownGood write at the soak's end
  // (where a platform leaves the promotion to the controller) falls within what the benchmark counts.
  ...(process.env.BENCH_KATANODE_SOAK_MS ? { kataConfig: { soakMs: Number(process.env.BENCH_KATANODE_SOAK_MS) } } : {}),
});
// Modules loaded and the operator built, before its caches fill: the fixed cost.
const importRSSKiB = process.resourceUsage().maxRSS;
const ac = new AbortController();
const run = op.run(ac.signal);

const WRITES = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);
async function requests() {
  const byVerb = {};
  let total = 0;
  let writes = 0;
  const writesBy = {};
  const requestsBy = {};
  let nodePatches = 0;
  let conflicts = 0;
  const conflictsBy = {};
  let leaseRequests = 0;
  let leaseWrites = 0;
  for (const v of (await metrics.restRequests.get()).values) {
    if (v.labels.resource === 'leases') {
      leaseRequests += v.value;
      if (WRITES.has(String(v.labels.verb))) leaseWrites += v.value;
    }
    const verb = String(v.labels.verb);
    byVerb[verb] = (byVerb[verb] ?? 0) + v.value;
    requestsBy[`${verb} ${v.labels.resource}`] = (requestsBy[`${verb} ${v.labels.resource}`] ?? 0) + v.value;
    total += v.value;
    if (WRITES.has(verb)) {
      writes += v.value;
      const what = `${verb} ${v.labels.resource}`;
      writesBy[what] = (writesBy[what] ?? 0) + v.value;
    }
    if (verb === 'PATCH' && v.labels.resource === 'nodes') nodePatches += v.value;
    if (String(v.labels.code) === '409') {
      conflicts += v.value;
      const what = `${verb} ${v.labels.resource}`;
      conflictsBy[what] = (conflictsBy[what] ?? 0) + v.value;
    }
  }
  return { byVerb, total, writes, writesBy, requestsBy, nodePatches, conflicts, conflictsBy, leaseRequests, leaseWrites };
}

// CPU by thread name (the main thread is "node"; V8's helpers "V8 DefaultWorke", libuv's pool "libuv-worker"),
// from the scheduler's nanosecond counts: which part of the process spent a window's CPU. Threads of a name
// are summed; a thread gone since the last mark takes its time with it (Node's threads live as long as it).
function threadCpuSeconds() {
  const byName = {};
  for (const tid of readdirSync('/proc/self/task')) {
    try {
      const name = readFileSync(`/proc/self/task/${tid}/comm`, 'utf8').trim();
      const ns = Number(readFileSync(`/proc/self/task/${tid}/schedstat`, 'utf8').split(' ')[0]);
      byName[name] = (byName[name] ?? 0) + ns / 1e9;
    } catch {
      // the thread ended between the listing and the read
    }
  }
  return byName;
}

const cpuSeconds = () => {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1e6;
};

const profileDir = process.env.BENCH_PROFILE_DIR;
// BENCH_PROFILE_KIND=allocations: instead of the CPU, where the phase allocated (V8's sampling heap profiler,
// one sample per 32 KiB on average, counting the objects the garbage collector has taken since, which is
// most of what a phase allocates): DIR/<phase>.heapprofile, for DevTools or `node bench/profile-top.ts`.
const allocations = process.env.BENCH_PROFILE_KIND === 'allocations';
let profiling; // { session, phase }
async function profile(phase) {
  if (!profileDir) return;
  const { Session } = await import('node:inspector/promises');
  if (profiling) {
    if (allocations) {
      const { profile: p } = await profiling.session.post('HeapProfiler.stopSampling');
      await writeFile(join(profileDir, `${profiling.phase}.heapprofile`), JSON.stringify(p));
    } else {
      const { profile: p } = await profiling.session.post('Profiler.stop');
      await writeFile(join(profileDir, `${profiling.phase}.cpuprofile`), JSON.stringify(p));
    }
    profiling.session.disconnect();
    profiling = undefined;
  }
  if (phase === 'end') return;
  const session = new Session();
  session.connect();
  if (allocations) {
    await session.post('HeapProfiler.enable');
    await session.post('HeapProfiler.startSampling', {
      samplingInterval: 32 * 1024,
      includeObjectsCollectedByMajorGC: true,
      includeObjectsCollectedByMinorGC: true,
    });
  } else {
    await session.post('Profiler.enable');
    await session.post('Profiler.start');
  }
  profiling = { session, phase };
}

process.on('message', async (msg) => {
  if (msg.cmd === 'idle') {
    sampleHeap();
    clearInterval(sampler);
    // BENCH_PERF_DIR: the idle window's native profile (`perf record`, kernel and libraries included, which
    // the CPU profile cannot see), read with `perf report -i DIR/idle.perf.data`.
    if (process.env.BENCH_PERF_DIR) {
      const { spawn } = await import('node:child_process');
      const perfOut = join(process.env.BENCH_PERF_DIR, 'idle.perf.data');
      spawn(
        'perf',
        ['record', '-F', '997', '-g', '-p', String(process.pid), '-o', perfOut, '--', 'sleep', process.env.BENCH_PERF_SECONDS ?? '60'],
        { stdio: 'ignore' },
      )
        .on('error', (e) => console.error(`BENCH_PERF_DIR: perf did not run (${e.message}); the idle window is measured without it`))
        .unref();
    }
    process.send?.({ sampling: false });
  } else if (msg.cmd === 'profile') {
    await profile(msg.phase);
    process.send?.({ profiling: !!profileDir });
  } else if (msg.cmd === 'mark') {
    // The CPU when the mark was asked for, and what reading the counters then cost (the benchmark's work,
    // not the operator's: a window that starts at a mark starts after it).
    const cpu = cpuSeconds();
    const mark = {
      cpuSeconds: cpu,
      threadCpuSeconds: threadCpuSeconds(),
      requests: await requests(),
      watchEvents: { ...watchEvents },
      redundantWrites: { ...redundantWrites },
    };
    process.send?.({ ...mark, markCpuS: cpuSeconds() - cpu });
  } else if (msg.cmd === 'report') {
    sampleHeap();
    const statusWrites = (await metrics.statusWrites.get()).values.filter((v) => v.labels.resource === 'kataconfigs');
    const count = (result) => statusWrites.find((v) => v.labels.result === result)?.value ?? 0;
    process.send?.({
      importRSSKiB,
      maxRSSKiB: process.resourceUsage().maxRSS,
      peakRssAnonKiB,
      rssFileAtPeakKiB,
      rssNowKiB: Math.round(process.memoryUsage().rss / 1024),
      peakHeapUsedMiB: peakHeapUsed / 2 ** 20,
      peakHeapTotalMiB: peakHeapTotal / 2 ** 20,
      requests: await requests(),
      statusWrites: count('written'),
      statusWriteErrors: count('error'),
      reconciles: (await metrics.reconcileTotal.get()).values.reduce((a, v) => a + v.value, 0),
      reconcilesBy: (await metrics.reconcileTotal.get()).values.reduce((by, v) => {
        by[v.labels.controller] = (by[v.labels.controller] ?? 0) + v.value;
        return by;
      }, {}),
      repeatedNodePatches: repeatedNodePatches(),
      statusWriteMs,
      reconcileErrors: (await metrics.reconcileErrors.get()).values.reduce((a, v) => a + v.value, 0),
    });
  } else if (msg.cmd === 'stop') {
    ac.abort();
    await run;
    process.exit(0);
  }
});
process.send({ ready: true });
