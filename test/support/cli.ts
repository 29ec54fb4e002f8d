import { PassThrough } from 'node:stream';
import { main } from '../../src/cli/main.ts';

/** `osc ARGS` in this process, with its output captured: what a user would see, and the exit code. */
export async function runOsc(args: string[], name?: string): Promise<{ code: number; stdout: string; stderr: string }> {
  const out = new PassThrough();
  const err = new PassThrough();
  let stdout = '';
  let stderr = '';
  out.on('data', (d) => (stdout += String(d)));
  err.on('data', (d) => (stderr += String(d)));
  const code = await main(args, { io: { stdout: out, stderr: err }, name });
  return { code, stdout, stderr };
}
