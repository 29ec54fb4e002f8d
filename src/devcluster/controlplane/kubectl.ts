import { execFile } from 'node:child_process';
import { dirname, join } from 'node:path';

export function runKubectl(
  kubectl: string,
  kubeconfig: string,
  args: string[],
  input?: string,
): Promise<{ stdout: string; stderr: string; code: number }> {
  return new Promise((resolve) => {
    const child = execFile(
      kubectl,
      args,
      {
        // kubectl caches discovery per server address, and a later cluster may get the same port: a stale
        // cache would show it APIs it does not serve. Each kubeconfig's cluster gets its own cache.
        env: { KUBECACHEDIR: join(dirname(kubeconfig), 'kube-cache'), ...process.env, KUBECONFIG: kubeconfig },
        maxBuffer: 64 * 1024 * 1024,
      },
      (err, stdout, stderr) => {
        const code = err ? (typeof (err as { code?: unknown }).code === 'number' ? (err as { code: number }).code : 1) : 0;
        resolve({ stdout, stderr, code });
      },
    );
    if (input !== undefined) child.stdin?.end(input);
  });
}

export function kubeconfigText(server: string, caPem: string, certPem: string, keyPem: string, user = 'osc-admin'): string {
  const b64 = (s: string) => Buffer.from(s).toString('base64');
  return [
    'apiVersion: v1',
    'kind: Config',
    'clusters:',
    '- name: osc-dev',
    '  cluster:',
    `    server: ${server}`,
    `    certificate-authority-data: ${b64(caPem)}`,
    'users:',
    `- name: ${user}`,
    '  user:',
    `    client-certificate-data: ${b64(certPem)}`,
    `    client-key-data: ${b64(keyPem)}`,
    'contexts:',
    '- name: osc-dev',
    '  context:',
    '    cluster: osc-dev',
    `    user: ${user}`,
    'current-context: osc-dev',
    '',
  ].join('\n');
}

/** A kubeconfig that authenticates with a bearer token (a ServiceAccount's, or a deliberately bad one). */
export function tokenKubeconfigText(
  server: string,
  caPem: string,
  token: string,
  opts: { user?: string; namespace?: string } = {},
): string {
  const user = opts.user ?? 'token-user';
  return [
    'apiVersion: v1',
    'kind: Config',
    `clusters: [{name: osc-dev, cluster: {server: "${server}", certificate-authority-data: ${Buffer.from(caPem).toString('base64')}}}]`,
    `users: [{name: ${user}, user: {token: ${token}}}]`,
    `contexts: [{name: ${user}, context: {cluster: osc-dev, user: ${user}${opts.namespace ? `, namespace: ${opts.namespace}` : ''}}}]`,
    `current-context: ${user}`,
    '',
  ].join('\n');
}
