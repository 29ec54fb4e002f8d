import { CommanderError } from 'commander';
import { errorMessage } from '../kube/errors.ts';
import { CliError, type CliIO, processIO } from './common.ts';
import { buildProgram } from './program.ts';

/**
 * Runs the `osc` command line with the given arguments (without node and script) and answers the exit
 * code. Errors are printed as `error: <message>`; commander prints its own for bad flags.
 */
export async function main(args: string[], opts: { io?: CliIO; name?: string } = {}): Promise<number> {
  const io = opts.io ?? processIO();
  const result = { code: 0 };
  const program = buildProgram(io, opts.name ?? 'osc', result);
  try {
    await program.parseAsync(args, { from: 'user' });
    return result.code;
  } catch (e) {
    if (e instanceof CommanderError) return e.exitCode;
    if (e instanceof CliError) {
      io.stderr.write(`error: ${e.message}\n`);
      return e.exitCode;
    }
    io.stderr.write(`error: ${errorMessage(e)}\n`);
    return 1;
  }
}

/**
 * Entry point for bin/osc.js, bin/kubectl-kata.js and `node src/cli/main.ts`. Long-running commands may
 * leave idle handles behind (keep-alive sockets, timers): once the command is done, the process ends.
 */
export async function runAsProcess(name = 'osc'): Promise<never> {
  const code = await main(process.argv.slice(2), { name });
  process.exit(code);
}

if (import.meta.main) await runAsProcess();
