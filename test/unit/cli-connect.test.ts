import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, describe, test } from 'node:test';
import { CliError, connect } from '../../src/cli/common.ts';
import type { Credentials } from '../../src/kube/credentials.ts';

/**
 * connect's second check, after /api answered: an API server that then fails the KataConfig discovery
 * (overloaded, restarting) is said to be so, by a CliError naming the server, never by the bare request error.
 */
describe('connect: the KataConfig discovery fails after /api answered', () => {
  const servers: Server[] = [];
  after(() => {
    for (const s of servers) {
      s.closeAllConnections();
      s.close();
    }
  });

  /** An API server that answers /api and treats the KataConfig group's discovery as `discovery` says. */
  async function apiServer(discovery: 'hang' | 'unavailable' | 'served'): Promise<Credentials> {
    const server = createServer((req, res) => {
      res.setHeader('content-type', 'application/json');
      if (req.url === '/api') return res.end(JSON.stringify({ kind: 'APIVersions', versions: ['v1'] }));
      if (discovery === 'hang') return; // no answer
      if (discovery === 'unavailable') {
        res.statusCode = 503;
        return res.end(JSON.stringify({ kind: 'Status', status: 'Failure', code: 503, message: 'the server is shutting down' }));
      }
      res.end(JSON.stringify({ kind: 'APIResourceList', resources: [{ name: 'kataconfigs' }] }));
    });
    servers.push(server);
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const { port } = server.address() as AddressInfo;
    return { server: `http://127.0.0.1:${port}`, tls: async () => ({}), headers: async () => ({}) };
  }

  test('no answer: the server and the wait are named', async () => {
    const creds = await apiServer('hang');
    await assert.rejects(connect(creds, { answerTimeoutMs: 300 }), (e: unknown) => {
      assert.ok(e instanceof CliError, String(e));
      assert.equal(
        e.message,
        `the Kubernetes API at ${creds.server} answered, but its discovery of kataconfiguration.openshift.io/v1 failed: no answer within 0.3s; check that the API server is healthy, then try again`,
      );
      return true;
    });
  });

  test('an error answer: its status and message are named', async () => {
    const creds = await apiServer('unavailable');
    await assert.rejects(connect(creds, { answerTimeoutMs: 5_000 }), (e: unknown) => {
      assert.ok(e instanceof CliError, String(e));
      assert.match(
        e.message,
        new RegExp(
          `^the Kubernetes API at ${creds.server.replaceAll('.', '\\.')} answered, but its discovery of kataconfiguration\\.openshift\\.io/v1 answered 503: .*the server is shutting down.*; check that the API server is healthy, then try again$`,
        ),
      );
      return true;
    });
  });

  test('served: a client comes back', async () => {
    const client = await connect(await apiServer('served'), { answerTimeoutMs: 5_000 });
    await client.close();
  });
});
