/** must-gather's log scrubbing: credentials go, the lines around them stay readable. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { SCRUBBED, scrubLog } from '../../src/mustgather/scrub.ts';

test('values that look like credentials are replaced, ordinary lines are kept', () => {
  const jwt = 'eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJzeXN0ZW0ifQ.c2lnbmF0dXJl';
  const cases: [string, string][] = [
    ['Authorization: Bearer abc.def-123', `Authorization: Bearer ${SCRUBBED}`],
    [`token ${jwt} used`, `token ${SCRUBBED} used`],
    ['key AKIAABCDEFGHIJKLMNOP found', `key ${SCRUBBED} found`],
    ['password=hunter2 user=me', `password=${SCRUBBED} user=me`],
    ['{"aws_secret_access_key":"x/y+z"}', `{"aws_secret_access_key":"${SCRUBBED}"}`],
    [
      '-----BEGIN RSA PRIVATE KEY-----\nMIIB\n-----END RSA PRIVATE KEY-----',
      `-----BEGIN RSA PRIVATE KEY----- ${SCRUBBED} -----END RSA PRIVATE KEY-----`,
    ],
    ['secretName=peer-pods-secret tokenFile=/var/run/token', 'secretName=peer-pods-secret tokenFile=/var/run/token'],
    ['Nov 25 kata[12]: sandbox started', 'Nov 25 kata[12]: sandbox started'],
  ];
  for (const [input, want] of cases) assert.equal(scrubLog(input), want, input);
});
