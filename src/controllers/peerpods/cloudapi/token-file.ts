/**
 * The operator's projected ServiceAccount token, read each time a credential is traded (the kubelet writes a
 * new one before the old expires). A missing file is the cloud client's error, naming the file and the fix.
 */
import { readFile } from 'node:fs/promises';
import { CloudAPIError } from './http.ts';

export async function readTokenFile(file: string): Promise<string> {
  try {
    const text = (await readFile(file, 'utf8')).trim();
    if (text) return text;
  } catch (e) {
    throw new CloudAPIError(
      'TokenFileUnreadable',
      `cannot read the operator's ServiceAccount token ${file} (${(e as NodeJS.ErrnoException).code ?? (e as Error).message}): the operator's Deployment mounts it as a projected volume; reinstall the operator if it lacks it`,
      0,
    );
  }
  throw new CloudAPIError('TokenFileUnreadable', `the operator's ServiceAccount token ${file} is empty`, 0);
}
