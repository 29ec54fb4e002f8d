import { type KataConfig, KataConfigs } from '../../src/api/kataconfig.ts';
import { KATA_REMOTE_RUNTIME_CLASS } from '../../src/api/names.ts';
import type { KubeClient } from '../../src/kube/client.ts';
import { errorMessage } from '../../src/kube/errors.ts';
import { type Pod, Pods } from '../../src/kube/resources.ts';

export interface Probe {
  at: number;
  what: string;
  answered: boolean;
  message: string;
}

/**
 * Asks both webhooks (a second KataConfig, a kata-remote pod with a bad annotation; dry runs), over and
 * over, until stopped: answered means allowed, or denied by the webhook itself. Needs the kata-remote
 * RuntimeClass, so that the pod gets past RuntimeClass admission to the webhook.
 */
export function probeWebhooks(client: KubeClient): { stop(): Promise<Probe[]> } {
  const probes: Probe[] = [];
  const stopped = new AbortController();
  const ask = async (what: string, create: () => Promise<unknown>) => {
    const at = Date.now();
    try {
      await create();
      probes.push({ at, what, answered: true, message: 'allowed' });
    } catch (e) {
      const message = errorMessage(e);
      probes.push({ at, what, answered: /denied the request/.test(message), message });
    }
  };
  const loop = (async () => {
    while (!stopped.signal.aborted) {
      await ask('KataConfig', () =>
        client.create(KataConfigs, { metadata: { name: 'second' }, spec: { checkNodeEligibility: false } } as KataConfig, { dryRun: true }),
      );
      await ask('kata-remote pod', () =>
        client.create(
          Pods,
          {
            metadata: { name: 'probe', namespace: 'default', annotations: { 'io.katacontainers.config.hypervisor.default_vcpus': 'two' } },
            spec: { runtimeClassName: KATA_REMOTE_RUNTIME_CLASS, containers: [{ name: 'app', image: 'registry.example.com/app:1' }] },
          } as Pod,
          { namespace: 'default', dryRun: true },
        ),
      );
      await new Promise((r) => setTimeout(r, 200));
    }
  })();
  return {
    stop: async () => {
      stopped.abort();
      await loop;
      return probes;
    },
  };
}

/**
 * The longest time the webhooks went unanswered: from the first unanswered probe of a run of them to the
 * next answered one (or the last probe), in ms; 0 when every probe was answered.
 */
export function longestGapMs(probes: readonly Probe[]): number {
  let longest = 0;
  let since: number | undefined;
  for (const p of [...probes].sort((a, b) => a.at - b.at)) {
    if (!p.answered) since ??= p.at;
    else if (since !== undefined) {
      longest = Math.max(longest, p.at - since);
      since = undefined;
    }
  }
  const last = probes.at(-1);
  if (since !== undefined && last) longest = Math.max(longest, last.at - since);
  return longest;
}
