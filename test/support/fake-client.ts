/** Pieces of the hand-made KubeClient fakes that unit tests pass where a client is expected. */

/** A watch that stays open and silent until its request is aborted, as a fake client's `watch` answers it. */
export const openUntilAborted = (signal: AbortSignal): Promise<void> =>
  new Promise<void>((_resolve, reject) => signal.addEventListener('abort', () => reject(new Error('aborted'))));
