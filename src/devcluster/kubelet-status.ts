import { objectName } from '../api/meta.ts';
import type { KubeClient } from '../kube/client.ts';
import { isConflict, isNotFound } from '../kube/errors.ts';
import { type Pod, Pods } from '../kube/resources.ts';
import { rfc3339 } from '../runtime/conditions.ts';

/**
 * The kubelet's reports that kwok does not make, for the pods whose sandbox or container a simulator plays
 * (src/devcluster/podvms.ts): a sandbox that could not be created (the pod stays Pending, its containers
 * waiting in ContainerCreating), a sandbox created (PodReadyToStartContainers True: kwok then runs the
 * containers), and a container that exits and is restarted with a back-off (CrashLoopBackOff). Each write
 * is a status patch as the kubelet's, conditional on the pod's resourceVersion, so that a status someone
 * else wrote meanwhile is never overwritten; a conflict answers false.
 */

/** Where the kata shim finds the cloud-api-adaptor on a node (its hypervisor socket). */
export const ADAPTOR_SOCKET = '/run/peerpod/hypervisor.sock';

/**
 * The kubelet's event for a sandbox the runtime could not create, in CRI-O's words with the kata shim's
 * remote hypervisor error inside (`detail`: the adaptor's error, or the socket's when no adaptor runs).
 */
export const sandboxFailedMessage = (detail: string) =>
  `Failed to create pod sandbox: rpc error: code = Unknown desc = CreateContainer failed: remote hypervisor call failed: ${detail}`;

/** The adaptor's error for a pod VM the cloud refused (its StartVM wraps the provider's CreateInstance error). */
export const adaptorCreateError = (instanceName: string, cloudError: string) =>
  `rpc error: code = Unknown desc = creating an instance : creating instance ${instanceName} (<nil>): ${cloudError}`;

/** The shim's error when no adaptor listens on the node. */
export const noAdaptorError = () => `dial unix ${ADAPTOR_SOCKET}: connect: no such file or directory`;

async function patchStatus(client: KubeClient, pod: Pod, status: Record<string, unknown>, signal?: AbortSignal): Promise<boolean> {
  try {
    await client.patch(
      Pods,
      objectName(pod),
      { metadata: { resourceVersion: pod.metadata.resourceVersion }, status },
      { namespace: pod.metadata.namespace, subresource: 'status', type: 'strategic', fieldManager: 'kubelet', signal },
    );
    return true;
  } catch (e) {
    if (isNotFound(e) || isConflict(e)) return false;
    throw e;
  }
}

const names = (pod: Pod) => (pod.spec?.containers ?? []).map((c) => c.name);
const unready = (pod: Pod) => `containers with unready status: [${names(pod).join(' ')}]`;

/** A sandbox that could not be created: Pending, PodReadyToStartContainers False, every container ContainerCreating. */
export function reportSandboxFailed(client: KubeClient, pod: Pod, signal?: AbortSignal): Promise<boolean> {
  const now = rfc3339(new Date());
  return patchStatus(
    client,
    pod,
    {
      phase: 'Pending',
      conditions: [
        { type: 'PodReadyToStartContainers', status: 'False', lastTransitionTime: now },
        { type: 'Initialized', status: 'True', lastTransitionTime: now },
        { type: 'Ready', status: 'False', reason: 'ContainersNotReady', message: unready(pod), lastTransitionTime: now },
        { type: 'ContainersReady', status: 'False', reason: 'ContainersNotReady', message: unready(pod), lastTransitionTime: now },
      ],
      containerStatuses: (pod.spec?.containers ?? []).map((c) => ({
        name: c.name,
        image: c.image,
        imageID: '',
        ready: false,
        started: false,
        restartCount: 0,
        state: { waiting: { reason: 'ContainerCreating' } },
      })),
      startTime: pod.status?.startTime ?? now,
    },
    signal,
  );
}

/** The sandbox exists: PodReadyToStartContainers True (kwok then starts the containers). */
export function reportSandboxReady(client: KubeClient, pod: Pod, signal?: AbortSignal): Promise<boolean> {
  const now = rfc3339(new Date());
  return patchStatus(client, pod, { conditions: [{ type: 'PodReadyToStartContainers', status: 'True', lastTransitionTime: now }] }, signal);
}

/**
 * The first container exited with `message` and waits `backOffSeconds` to be restarted: the pod stays
 * Running, not Ready, its container in CrashLoopBackOff with the exit as its last state.
 */
export function reportCrashLoop(
  client: KubeClient,
  pod: Pod,
  restarts: number,
  message: string,
  backOffSeconds: number,
  signal?: AbortSignal,
): Promise<boolean> {
  const now = rfc3339(new Date());
  const [first] = pod.spec?.containers ?? [];
  if (!first) return Promise.resolve(false);
  const ref = `${pod.metadata.name}_${pod.metadata.namespace}(${pod.metadata.uid})`;
  return patchStatus(
    client,
    pod,
    {
      conditions: [
        { type: 'Ready', status: 'False', reason: 'ContainersNotReady', message: unready(pod), lastTransitionTime: now },
        { type: 'ContainersReady', status: 'False', reason: 'ContainersNotReady', message: unready(pod), lastTransitionTime: now },
      ],
      containerStatuses: [
        {
          name: first.name,
          image: first.image,
          ready: false,
          started: false,
          restartCount: restarts,
          state: {
            waiting: {
              reason: 'CrashLoopBackOff',
              message: `back-off ${backOffSeconds}s restarting failed container=${first.name} pod=${ref}`,
            },
          },
          lastState: { terminated: { exitCode: 1, reason: 'Error', message, startedAt: now, finishedAt: now } },
        },
      ],
    },
    signal,
  );
}

/** The restarted container runs and is ready again. */
export function reportRestarted(client: KubeClient, pod: Pod, restarts: number, signal?: AbortSignal): Promise<boolean> {
  const now = rfc3339(new Date());
  const [first] = pod.spec?.containers ?? [];
  if (!first) return Promise.resolve(false);
  return patchStatus(
    client,
    pod,
    {
      conditions: [
        { type: 'Ready', status: 'True', lastTransitionTime: now },
        { type: 'ContainersReady', status: 'True', lastTransitionTime: now },
      ],
      containerStatuses: [
        {
          name: first.name,
          image: first.image,
          ready: true,
          started: true,
          restartCount: restarts,
          state: { running: { startedAt: now } },
        },
      ],
    },
    signal,
  );
}
