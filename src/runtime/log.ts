import { type LevelWithSilent, type Logger, pino } from 'pino';

export type { Logger };

/** JSON logs on stdout (or a given destination), one line per record, as log collectors expect. */
export function createLogger(opts: { level?: LevelWithSilent | string; name?: string; destination?: NodeJS.WritableStream } = {}): Logger {
  const level = (opts.level ?? process.env.OSC_LOG_LEVEL ?? 'info') as LevelWithSilent;
  return pino(
    {
      name: opts.name ?? 'osc',
      level,
      base: undefined,
      timestamp: pino.stdTimeFunctions.isoTime,
      formatters: { level: (label) => ({ level: label }) },
      redact: { paths: ['*.data', '*.stringData', 'secret', '*.token'], censor: '[REDACTED]' },
    },
    opts.destination ?? process.stdout,
  );
}

/** A logger that drops everything: the default in tests unless OSC_TEST_LOG is set. */
export function silentLogger(): Logger {
  return pino({ level: 'silent' });
}
