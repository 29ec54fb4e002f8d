/** `npm run bench`: every benchmark, each printing its figures. Arguments go to each benchmark. */
import { spawnSync } from 'node:child_process';

const benches = ['install.ts'];
for (const b of benches) {
  const r = spawnSync(process.execPath, [new URL(b, import.meta.url).pathname, ...process.argv.slice(2)], { stdio: 'inherit' });
  if (r.status !== 0) process.exit(r.status ?? 1);
}
