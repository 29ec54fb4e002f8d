/**
 * The README's chaos table from the runs' reports, pure: one row per platform (faults converged, leaks,
 * double leaders, needless reboots or reinstalls, RBAC gaps), then one row per kind of fault with each
 * platform's count and time to converge (p50 / p99 / max, from the fault).
 */
import type { ChaosReport } from './run.ts';
import { FAULT_KINDS, type FaultKind } from './scenario.ts';

/** The time every kind of fault must converge within, at the 99th percentile. */
export const P99_TARGET_MS = 30_000;

const PLATFORM_NAMES = { openshift: 'OpenShift', kubernetes: 'Kubernetes' } as const;

export const percentile = (xs: number[], p: number): number => {
  if (!xs.length) return Number.NaN;
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.ceil((p / 100) * s.length) - 1)] as number;
};

const secs = (ms: number) => (Number.isFinite(ms) ? `${(ms / 1000).toFixed(1)} s` : '-');

/** Converged steps' times by kind of fault. */
export function timesByKind(r: ChaosReport): Map<FaultKind, { count: number; times: number[] }> {
  const out = new Map<FaultKind, { count: number; times: number[] }>();
  for (const st of r.steps) {
    const k = out.get(st.fault) ?? { count: 0, times: [] };
    k.count++;
    if (st.converged) k.times.push(st.convergeMs);
    out.set(st.fault, k);
  }
  return out;
}

/** Kinds whose p99 is over the target, per platform ("kubernetes restoreEtcd 41.0 s"). */
export function overTarget(reports: readonly ChaosReport[]): string[] {
  const out: string[] = [];
  for (const r of reports)
    for (const [k, { times }] of timesByKind(r))
      if (percentile(times, 99) > P99_TARGET_MS) out.push(`${r.platform} ${k} ${secs(percentile(times, 99))}`);
  return out;
}

export function chaosTable(reports: readonly ChaosReport[]): string {
  const lines = [
    '| platform | converged | leaks | double leaders | needless reboots (OpenShift) or reinstalls (Kubernetes) | RBAC gaps |',
    '| --- | --- | --- | --- | --- | --- |',
  ];
  for (const r of reports) {
    const what = r.platform === 'kubernetes' ? 'kata-deploy installs' : 'reboots';
    lines.push(
      `| ${PLATFORM_NAMES[r.platform]} | ${r.converged}/${r.faults} | ${r.leaks.length} | ${r.doubleLeaderWrites.length} | ${r.needlessRuns} of ${r.runs} ${what}${r.duplicatePodRuns?.length ? ` (and ${r.duplicatePodRuns.length} by duplicate DaemonSet pods)` : ''} | ${r.rbacGaps.length} |`,
    );
  }
  const byKind = reports.map(timesByKind);
  lines.push(
    '',
    `| fault | ${reports.map((r) => `${PLATFORM_NAMES[r.platform]}: count, p50 / p99 / max`).join(' | ')} |`,
    `| --- | ${reports.map(() => '---').join(' | ')} |`,
  );
  for (const kind of FAULT_KINDS) {
    if (!byKind.some((k) => k.has(kind))) continue;
    const cells = byKind.map((k) => {
      const x = k.get(kind);
      if (!x) return '-';
      const conv = x.times.length === x.count ? `${x.count}` : `${x.count} (${x.times.length} converged)`;
      return `${conv}, ${secs(percentile(x.times, 50))} / ${secs(percentile(x.times, 99))} / ${secs(Math.max(...x.times))}`;
    });
    lines.push(`| ${kind} | ${cells.join(' | ')} |`);
  }
  return lines.join('\n');
}
