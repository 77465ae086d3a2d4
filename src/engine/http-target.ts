// The in-server executor for http targets. It is a worker like any other:
// it leases from the $http pool (every tenant), and each call is an attempt
// under a lease of timeoutSeconds plus a grace period, recorded before the
// call is sent, so a server that dies mid-call has its lease expire and the
// call sent again with the same Idempotency-Key and the next attempt number.

import { createHmac } from "node:crypto";
import { lookup as dnsLookup } from "node:dns";
import { isIP, type LookupFunction } from "node:net";
import { Agent, errors as undiciErrors, request } from "undici";
import type { ErrorRecord, HttpTarget } from "../core/api.js";
import type { Clock } from "../core/clock.js";
import { toIso } from "../core/time.js";
import type { LeasedRow } from "../store/store.js";
import { HTTP_POOL } from "../store/store.js";
import { AckBatcher } from "./ack-batcher.js";
import type { Executor } from "./executor.js";
import type { EngineEvents } from "./events.js";

export interface HttpTargetOptions {
  executor: Executor;
  events: EngineEvents;
  clock: Clock;
  nodeId: string;
  /** Most calls in flight from this node. */
  concurrency?: number;
  /** Hosts that may resolve to loopback or private addresses. */
  allowTargetHosts?: string[];
  /** Default tenant signing secret(s); several during a rotation. */
  signingSecrets?: string[];
  /** Response bodies are read up to this many bytes, then dropped. */
  maxResponseBytes?: number;
}

const GRACE_MS = 5_000;
const LEASE_MS = 24 * 3600_000; // capped by the store at timeoutSeconds + grace

export class HttpTargetRunner {
  private readonly agent: Agent;
  private readonly acks: AckBatcher;
  private readonly concurrency: number;
  private inFlight = 0;
  private stopped = true;
  private loop: Promise<void> | null = null;
  private readonly abort = new AbortController();
  private slotFreed: (() => void) | null = null;
  private readonly allowed: ReadonlySet<string>;

  constructor(private readonly options: HttpTargetOptions) {
    this.concurrency = options.concurrency ?? 256;
    this.allowed = new Set(options.allowTargetHosts ?? []);
    this.agent = new Agent({
      connections: 64,
      keepAliveTimeout: 10_000,
      connect: { lookup: guardedLookup(this.allowed) },
    });
    this.acks = new AckBatcher(options.executor);
  }

  start(): void {
    this.stopped = false;
    this.loop = this.run();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.abort.abort();
    this.slotFreed?.();
    await this.loop;
    await this.acks.flush();
    await this.agent.close().catch(() => {});
  }

  private async run(): Promise<void> {
    while (!this.stopped) {
      const free = this.concurrency - this.inFlight;
      if (free <= 0) {
        await new Promise<void>((resolve) => (this.slotFreed = resolve));
        continue;
      }
      try {
        const { leased } = await this.options.executor.lease({
          pool: HTTP_POOL,
          workerId: this.options.nodeId,
          max: free,
          leaseMs: LEASE_MS,
          graceMs: GRACE_MS,
          waitMs: 5_000,
          signal: this.abort.signal,
        });
        for (const row of leased) void this.execute(row);
      } catch (error) {
        this.options.events.emit("error", { where: "http-target", error });
        await new Promise((r) => setTimeout(r, 500));
      }
    }
  }

  private async execute(row: LeasedRow): Promise<void> {
    this.inFlight++;
    try {
      const error = await this.call(row);
      if (error) this.acks.fail({ executionId: row.executionId, tenantId: row.tenantId, attempt: row.attempt, error, timedOut: error.timedOut === true });
      else this.acks.complete({ executionId: row.executionId, tenantId: row.tenantId, attempt: row.attempt });
    } finally {
      this.inFlight--;
      const freed = this.slotFreed;
      this.slotFreed = null;
      freed?.();
    }
  }

  /** Sends one attempt; returns null on success or the error record to fail it with. */
  private async call(row: LeasedRow): Promise<(ErrorRecord & { timedOut?: boolean }) | null> {
    const target = row.target as HttpTarget;
    const refusal = this.refusal(target.url);
    if (refusal) return { message: refusal, class: "permanent" };
    const body = JSON.stringify(row.payload ?? null);
    const timeout = AbortSignal.timeout(row.timeoutSeconds * 1000);
    const signal = AbortSignal.any([timeout, this.abort.signal]);
    try {
      const res = await request(target.url, {
        method: (target.method ?? "POST") as "POST",
        headers: { ...target.headers, ...this.headers(row, body) },
        body,
        signal,
        dispatcher: this.agent,
      });
      const text = await readLimited(res.body, this.options.maxResponseBytes ?? 64 * 1024);
      return classify(res.statusCode, res.headers, text);
    } catch (err) {
      if (timeout.aborted) {
        return { message: `call ran past timeoutSeconds (${row.timeoutSeconds} s)`, class: "transient", timedOut: true };
      }
      if (err instanceof EgressRefused) return { message: err.message, class: "permanent" };
      return { message: `request failed: ${describe(err)}`, class: "transient" };
    }
  }

  /** IP literals never reach the DNS lookup guard, so they are checked here. */
  private refusal(url: string): string | null {
    const host = new URL(url).hostname.replace(/^\[|\]$/g, "");
    if (isIP(host) && isRestricted(host) && !this.allowed.has(host)) {
      return `target ${host} is a restricted address; allow it with --allow-target-hosts`;
    }
    return null;
  }

  private headers(row: LeasedRow, body: string): Record<string, string> {
    const scheduledFor = toIso(row.scheduledFor);
    const timestamp = String(Math.floor(this.options.clock.now() / 1000));
    const headers: Record<string, string> = {
      "content-type": "application/json",
      "idempotency-key": `${row.jobId}:${scheduledFor}`,
      "duetime-execution-id": row.executionId,
      "duetime-attempt": String(row.attempt),
      "duetime-scheduled-for": scheduledFor,
      "duetime-timestamp": timestamp,
    };
    const secrets = this.options.signingSecrets ?? [];
    if (secrets.length > 0) {
      headers["duetime-signature"] = secrets
        .map((s) => `v1=${createHmac("sha256", s).update(`${timestamp}.${body}`).digest("hex")}`)
        .join(",");
    }
    return headers;
  }
}

/** API.md: 2xx success; 429/503 throttled; 408 and 5xx transient; redirects fail (recorded); other 4xx permanent. */
export function classify(status: number, headers: Record<string, string | string[] | undefined>, body: string): ErrorRecord | null {
  if (status >= 200 && status < 300) return null;
  const snippet = body.slice(0, 512);
  if (status === 429 || status === 503) {
    const retryAfterSeconds = parseRetryAfter(headers["retry-after"]);
    return { message: `HTTP ${status}`, class: "throttled", status, body: snippet, ...(retryAfterSeconds !== undefined ? { retryAfterSeconds } : {}) };
  }
  if (status >= 300 && status < 400) {
    return { message: `HTTP ${status} redirect not followed`, class: "transient", status, location: headers.location ?? null };
  }
  if (status === 408 || status >= 500) return { message: `HTTP ${status}`, class: "transient", status, body: snippet };
  return { message: `HTTP ${status}`, class: "permanent", status, body: snippet };
}

function parseRetryAfter(value: string | string[] | undefined): number | undefined {
  const v = Array.isArray(value) ? value[0] : value;
  if (!v) return undefined;
  if (/^\d+$/.test(v.trim())) return Number(v.trim());
  const at = Date.parse(v);
  return Number.isFinite(at) ? Math.max(0, Math.ceil((at - Date.now()) / 1000)) : undefined;
}

async function readLimited(body: AsyncIterable<Buffer> & { destroy(): void }, limit: number): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of body) {
    chunks.push(chunk);
    size += chunk.length;
    if (size >= limit) {
      body.destroy(); // a huge response is cut, never buffered
      break;
    }
  }
  return Buffer.concat(chunks).subarray(0, limit).toString("utf8");
}

function describe(err: unknown): string {
  if (err instanceof undiciErrors.UndiciError) return `${err.code}: ${err.message}`;
  if (err instanceof Error) return (err as NodeJS.ErrnoException).code ?? err.message;
  return String(err);
}

class EgressRefused extends Error {}

/**
 * Refuses connections to loopback, private, link-local and metadata addresses
 * unless the host is allow-listed. Checked on the resolved address at connect
 * time, so a DNS name that rebinds to 127.0.0.1 is refused too.
 */
function guardedLookup(allowed: ReadonlySet<string>): LookupFunction {
  return (hostname, options, callback) => {
    dnsLookup(hostname, { ...options, all: true }, (err, addresses) => {
      if (err) return callback(err, "", 0);
      const list = addresses as unknown as { address: string; family: number }[];
      const host = hostname.replace(/^\[|\]$/g, "");
      const refused = !allowed.has(host) && list.some((a) => isRestricted(a.address));
      if (refused) {
        return callback(new EgressRefused(`target ${host} resolves to a restricted address; allow it with --allow-target-hosts`) as NodeJS.ErrnoException, "", 0);
      }
      if ((options as { all?: boolean }).all) return (callback as unknown as (e: null, a: typeof list) => void)(null, list);
      const first = list[0]!;
      callback(null, first.address, first.family);
    });
  };
}

export function isRestricted(address: string): boolean {
  if (isIP(address) === 4) {
    const [a, b] = address.split(".").map(Number) as [number, number];
    return (
      a === 0 || a === 10 || a === 127 || (a === 169 && b === 254) || (a === 172 && b >= 16 && b <= 31) ||
      (a === 192 && b === 168) || (a === 100 && b >= 64 && b <= 127) || a >= 224
    );
  }
  const v6 = address.toLowerCase();
  if (v6.startsWith("::ffff:")) return isRestricted(v6.slice(7));
  return v6 === "::1" || v6 === "::" || v6.startsWith("fc") || v6.startsWith("fd") || v6.startsWith("fe80");
}
