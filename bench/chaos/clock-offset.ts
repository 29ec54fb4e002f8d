/**
 * Preloaded (`node --import`) into an operator replica of the chaos run: its wall clock (Date.now and
 * `new Date()`) runs offset from the machine's, by OSC_CHAOS_CLOCK_OFFSET_MS at start and by each
 * `{ clockOffsetMs }` message from the parent after, as a host whose clock an NTP correction or an
 * administrator steps. The monotonic clock (performance.now, timers) is untouched, as on a real host.
 */
const RealDate = Date;
let offset = Number(process.env.OSC_CHAOS_CLOCK_OFFSET_MS ?? 0) || 0;

class SteppedDate extends RealDate {
  constructor(...args: unknown[]) {
    if (args.length === 0) super(RealDate.now() + offset);
    else super(...(args as [string]));
  }
  static override now(): number {
    return RealDate.now() + offset;
  }
}
globalThis.Date = SteppedDate as DateConstructor;

process.on('message', (m: { clockOffsetMs?: unknown }) => {
  if (typeof m?.clockOffsetMs === 'number') offset = m.clockOffsetMs;
});
// The IPC channel must not keep a process alive that would otherwise exit.
process.channel?.unref();
