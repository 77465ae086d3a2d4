// What both broker drivers keep about their connection. Link: whether it is
// up, who waits for it to come up, what onStatus hears, and the backoff
// between dials (250 ms doubling to 15 s, from the least again after a
// connection came up). Dialer: the connection's life around it (dial in the
// background until one comes up, start over when it is lost, close once);
// each driver says how to open, adopt and end its own client's connection.

import { type Clock, systemClock, type TimerHandle } from "../../core/clock.js";
import type { BrokerConnectOptions } from "./broker.js";

const MIN_RETRY_MS = 250;
const MAX_RETRY_MS = 15_000;

export class Link {
  private isUp = false;
  private closed = false;
  private readonly waiters = new Set<() => void>();
  private retryMs = MIN_RETRY_MS;
  private retry: TimerHandle | undefined;

  constructor(
    private readonly onStatus: BrokerConnectOptions["onStatus"],
    readonly clock: Clock = systemClock,
  ) {}

  get up(): boolean {
    return this.isUp;
  }

  /** Up or down: onStatus hears of a change, and waiters are released when it comes up. A connection that came up resets the backoff. */
  set(up: boolean, error?: unknown): void {
    if (up) this.retryMs = MIN_RETRY_MS;
    if (up === this.isUp) return;
    this.isUp = up;
    this.tell(error === undefined ? { connected: up } : { connected: up, error });
    if (up) this.release();
  }

  /** Resolves when the connection is up (or the link closed), or after ms. */
  wait(ms: number): Promise<void> {
    if (this.isUp || this.closed) return Promise.resolve();
    return new Promise((resolve) => {
      const done = () => {
        timer.cancel();
        this.waiters.delete(done);
        resolve();
      };
      const timer = this.clock.setTimer(done, ms);
      this.waiters.add(done);
    });
  }

  /** A failed dial or a lost connection: dial again after the backoff, which doubles. */
  redial(dial: () => void): void {
    if (this.closed) return;
    this.retry = this.clock.setTimer(dial, this.retryMs);
    this.retryMs = Math.min(this.retryMs * 2, MAX_RETRY_MS);
  }

  tell(event: { connected: boolean; error?: unknown }): void {
    try {
      this.onStatus?.(event);
    } catch {
      // A throwing listener must not break the connection's bookkeeping.
    }
  }

  /** No more dials; whoever waits is released. */
  close(): void {
    this.closed = true;
    this.retry?.cancel();
    this.release();
  }

  private release(): void {
    for (const done of [...this.waiters]) done();
  }
}

/** The connection skeleton of a broker driver; C is its client's connection. */
export abstract class Dialer<C> {
  protected readonly link: Link;
  /** The connection, while it is this driver's (from adopt() until it is lost or closed). */
  protected conn: C | undefined;
  private dialing: Promise<void> | undefined;
  private closing: Promise<void> | undefined;

  constructor(options: Pick<BrokerConnectOptions, "onStatus" | "clock">) {
    this.link = new Link(options.onStatus, options.clock);
  }

  /** Opens a connection, or throws; listeners that must exist from the start (an 'error' one) go on here. */
  protected abstract open(): Promise<C>;
  /** A connection came up and is this driver's: its listeners. */
  protected abstract adopt(conn: C): void;
  /** Ends a connection: at close, or one that came up after close() began. */
  protected abstract end(conn: C): Promise<void>;
  /** The connection went: drop what hangs on it (a channel, a JetStream client). */
  protected abstract forget(): void;

  connected(): boolean {
    return this.link.up;
  }

  waitConnected(ms: number): Promise<void> {
    return this.link.wait(ms);
  }

  close(): Promise<void> {
    this.closing ??= this.shutdown();
    return this.closing;
  }

  protected setUp(up: boolean, error?: unknown): void {
    this.link.set(up, error);
  }

  /** Dials now, in the background; a failure dials again after the backoff. */
  protected dial(): void {
    this.dialing = this.attempt().finally(() => (this.dialing = undefined));
  }

  /** The driver's connection was lost: down, and dial again (after the backoff, or at once) unless closing. */
  protected lost(conn: C, redial: "backoff" | "now", error?: unknown): void {
    if (this.conn !== conn) return;
    this.conn = undefined;
    this.forget();
    this.setUp(false, error);
    if (this.closing) return;
    if (redial === "now") this.dial();
    else this.link.redial(() => this.dial());
  }

  private async attempt(): Promise<void> {
    let conn: C;
    try {
      conn = await this.open();
    } catch (error) {
      if (this.closing) return;
      this.link.tell({ connected: false, error });
      this.link.redial(() => this.dial());
      return;
    }
    if (this.closing) {
      await this.end(conn);
      return;
    }
    this.conn = conn;
    this.adopt(conn);
    this.setUp(true);
  }

  private async shutdown(): Promise<void> {
    this.link.close();
    await this.dialing;
    const conn = this.conn;
    this.conn = undefined;
    this.forget();
    this.setUp(false);
    if (conn !== undefined) await this.end(conn);
  }
}
