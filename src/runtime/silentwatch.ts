/** Work under way, and how long a watch may be silent meanwhile (InformerOptions.quietWhileBusy). */
export interface QuietWhileBusy {
  busy: () => boolean;
  afterMs: number;
}

/** What the check needs of the informer whose watch it watches. */
export interface WatchedWatch {
  /** Whether a watch is open now. */
  open(): boolean;
  /** When the open watch last carried anything (an event or a bookmark), on performance.now()'s clock. */
  lastHeard(): number;
  /** Ends the open watch; the informer reconnects from the last version seen. */
  restart(reason: string): void;
}

/**
 * While work is under way, checks an informer's watch once it has been silent for `afterMs`, and reconnects
 * it if it still is: a connection a NAT or load balancer forgot is found in seconds, not at the client's
 * idle timeout. Armed when a watch starts, an event comes or the process writes, and only while busy: idle,
 * nothing wakes the process for it (a check every afterMs / 4 per informer woke an idle operator about 200
 * times a minute). A watch reconnected so that stays silent is most likely of a kind nothing changes: each
 * time, the silence allowed doubles, up to `maxMs` (the idle timeout, where the client's own rule takes
 * over), until an event comes. Without that, during an hour-long rollout each quiet kind (RuntimeClasses,
 * Jobs, Secrets...) cost a new watch every 15 s.
 */
export class SilentWatchCheck {
  private timer: ReturnType<typeof setTimeout> | undefined;
  /** Reconnects for silence since the watch last carried an event. */
  private restarts = 0;
  private stopped = false;

  private readonly quiet: QuietWhileBusy;
  private readonly maxMs: number;
  private readonly watch: WatchedWatch;

  constructor(quiet: QuietWhileBusy, maxMs: number, watch: WatchedWatch) {
    this.quiet = quiet;
    this.maxMs = maxMs;
    this.watch = watch;
  }

  /** Starts the check unless one is pending, the process is not busy or no watch is open. */
  arm(): void {
    if (this.stopped || this.timer || !this.watch.open() || !this.quiet.busy()) return;
    const allowed = this.allowedMs();
    const due = this.watch.lastHeard() + allowed - performance.now();
    this.timer = setTimeout(() => {
      this.timer = undefined;
      if (!this.watch.open() || !this.quiet.busy()) return;
      if (performance.now() - this.watch.lastHeard() >= allowed) {
        this.restarts++;
        this.watch.restart(`silent for ${allowed / 1000}s while work is under way`);
      } else this.arm();
    }, Math.max(0, due) + 1).unref();
  }

  /** The watch carried an event (not a bookmark): its kind is not a silent one. */
  heardEvent(): void {
    this.restarts = 0;
  }

  stop(): void {
    this.stopped = true;
    clearTimeout(this.timer);
  }

  /** afterMs, doubled for each reconnect that brought no event since. */
  private allowedMs(): number {
    return Math.min(this.quiet.afterMs * 2 ** Math.min(this.restarts, 16), Math.max(this.quiet.afterMs, this.maxMs));
  }
}
