// The fuzz run: a real `duetime serve` child, 50 known jobs, 500 slow
// connections, then fast-check cases (the regression corpus first, then HTTP
// requests derived from the OpenAPI document, and raw-socket requests) until
// the time is up. Each case is
// checked (checks.ts); a failure is recorded with a one-line reproducer and
// the fast-check seed and path that replay it, and the run goes on. A server
// that stops answering or grows past the memory limit is killed and restarted
// on the same store. At the end /healthz must answer and the known jobs must
// read back unchanged.

import fc from "fast-check";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { httpCase, resolvePath, type HttpCase, type Refs } from "./cases.js";
import { checkAnswer, type Violation } from "./checks.js";
import { CORPUS } from "./corpus.js";
import { fetchRoutes } from "./openapi.js";
import { rawCase, type RawCase } from "./raw.js";
import { curlFor, nodeFor } from "./repro.js";
import { connectRaw, parseResponse, sendHttp, sendRaw, type Answer } from "./send.js";
import { FuzzServer, KEYS, SERVE_COMMAND } from "./server.js";
import { changedKnownJobs, createKnownJobs, createPlayground } from "./setup.js";
import { slowConnections } from "./slow-connections.js";

export interface FuzzOptions {
  seconds: number;
  seed: number;
  /** Replay only the case at this fast-check path (printed with each failure). */
  path?: string;
  deadlineMs?: number;
  rssLimitBytes?: number;
  /** Held slow connections (0 skips the scenario). */
  slowConnections?: number;
  log?: (line: string) => void;
}

export interface Failure {
  /** Route (or raw label) and kind of violation: failures are grouped by it. */
  group: string;
  detail: string;
  repro: string;
  /** fast-check path of the case; absent for the fixed checks. */
  path?: string;
}

export interface FuzzReport {
  seed: number;
  requests: number;
  failures: Failure[];
  /** Failures by group, with a count, in order of first appearance. */
  groups: Array<{ group: string; count: number; first: Failure }>;
  peakRssBytes: number;
  p50Ms: number;
  p99Ms: number;
  restarts: number;
}

type Case = HttpCase | RawCase;

const MiB = 1024 * 1024;
/** Incomplete raw requests held open at once (the oldest is closed and checked first). */
const HELD_MAX = 32;

function percentile(sorted: number[], p: number): number {
  return sorted.length === 0 ? 0 : sorted[Math.min(sorted.length - 1, Math.floor((sorted.length * p) / 100))]!;
}

export async function runFuzz(options: FuzzOptions): Promise<FuzzReport> {
  const deadlineMs = options.deadlineMs ?? 2000;
  const rssLimit = options.rssLimitBytes ?? 512 * MiB;
  const log = options.log ?? (() => undefined);
  const dir = mkdtempSync(join(tmpdir(), "duetime-fuzz-"));
  const server = new FuzzServer(dir);
  const failures: Failure[] = [];
  const times: number[] = [];
  let requests = 0;
  let overLimit = false;

  /** Request ids of 500s by failure, for their server log lines (which may arrive after the answer). */
  const requestIds = new Map<Failure, { pid: number; requestId: string }>();
  const fail = (group: string, violation: Violation, repro: string, path?: string) => {
    const failure: Failure = { group: `${group}: ${violation.kind}`, detail: violation.detail, repro, ...(path !== undefined ? { path } : {}) };
    if (!failures.some((f) => f.group === failure.group)) {
      log(
        `FAIL ${failure.group}\n  ${failure.detail.slice(0, 300)}\n  ${repro.slice(0, 600)}${path !== undefined ? `\n  replay: --seed ${options.seed} --path ${path}` : ""}`,
      );
    }
    failures.push(failure);
    if (violation.requestId) requestIds.set(failure, { pid: server.pid, requestId: violation.requestId });
  };

  const sampler = setInterval(() => {
    if (server.rssBytes() > rssLimit) overLimit = true;
  }, 100);

  /** After a case that went unanswered or blew the memory limit: is the server still usable? If not, a fresh one. */
  const recover = async (group: string, repro: string, path: string | undefined) => {
    if (overLimit) {
      fail(group, { kind: `server RSS over ${rssLimit / MiB} MiB`, detail: `peak so far ${Math.round(server.peakRssBytes / MiB)} MiB` }, repro, path);
    }
    const health = overLimit || !server.alive ? undefined : await probeHealth(server.url, deadlineMs);
    if (!overLimit && health?.outcome === "answered" && health.status === 200) return;
    if (!server.alive) fail(group, { kind: "server process exited", detail: "" }, repro, path);
    else if (!overLimit) fail(group, { kind: "server wedged (/healthz unanswered afterwards)", detail: "" }, repro, path);
    log(`restarting the server (${group})`);
    await server.restart();
    overLimit = false;
  };

  const held: Array<{ c: RawCase; conn: ReturnType<typeof connectRaw>; path: string }> = [];
  const release = (h: (typeof held)[number]) => {
    const parsed = parseResponse(Buffer.concat(h.conn.received), true);
    h.conn.socket.destroy();
    if (!parsed) return; // not answered before we gave up: allowed, the request never ended
    const v = checkAnswer({ outcome: "answered", ...parsed, ms: 0, method: "POST" }, deadlineMs);
    if (v) fail(`raw ${h.c.label}`, v, nodeFor(h.c), h.path);
  };

  let refs: Refs = {};
  let index = options.path !== undefined ? Number(options.path) : 0;
  const runCase = async (c: Case): Promise<boolean> => {
    const path = String(index++);
    requests++;
    if (c.kind === "raw" && !c.complete) {
      held.push({ c, conn: connectRaw(server.url, c.bytes), path });
      if (held.length > HELD_MAX) release(held.shift()!);
      return true;
    }
    let answer: Answer;
    let group: string;
    let repro: string;
    if (c.kind === "http") {
      answer = await sendHttp(server.url, c, refs, deadlineMs);
      group = c.route;
      repro = curlFor(c, resolvePath(c, refs));
    } else {
      answer = await sendRaw(server.url, c, deadlineMs);
      group = `raw ${c.label}`;
      repro = nodeFor(c);
    }
    if (answer.outcome === "answered") times.push(answer.ms);
    const v = checkAnswer(answer, deadlineMs);
    if (v) fail(group, v, repro, path);
    if (overLimit || !server.alive || answer.outcome === "timeout") await recover(group, repro, path);
    return true;
  };

  try {
    await server.start();
    const routes = await fetchRoutes(server.url, `Bearer ${KEYS.admin}`);
    log(`fuzzing ${routes.length} routes of ${server.url} (seed ${options.seed}); reproducers assume: ${SERVE_COMMAND}`);
    const known = await createKnownJobs(server.url);
    refs = await createPlayground(server.url);
    const started = Date.now();

    const slowCount = options.slowConnections ?? 500;
    if (options.path === undefined && slowCount > 0) {
      const slow = await slowConnections(server.url, { count: slowCount, holdMs: 3000, deadlineMs });
      const repro = `(${slowCount} connections sending GET /healthz a header every 250 ms: npm run fuzz -- --seconds 1 --slow-connections ${slowCount})`;
      for (const a of [...slow.probes, ...slow.answers]) {
        requests++;
        if (a.outcome === "answered") times.push(a.ms);
        const v = checkAnswer(a, deadlineMs);
        if (v) fail("slow connections", v, repro);
      }
    }

    const arb = fc.oneof({ weight: 5, arbitrary: httpCase(routes, Object.keys(refs)) }, { weight: 1, arbitrary: rawCase() });
    const remainingMs = Math.max(1000, options.seconds * 1000 - (Date.now() - started));
    await fc.check(fc.asyncProperty(arb, runCase), {
      seed: options.seed,
      examples: CORPUS.map((c) => [c]),
      ...(options.path !== undefined
        ? { path: options.path, numRuns: 1 }
        : { numRuns: Number.MAX_SAFE_INTEGER, interruptAfterTimeLimit: remainingMs, markInterruptAsFailure: false }),
    });
    for (const h of held.splice(0)) release(h);

    const health = await probeHealth(server.url, deadlineMs);
    const healthFailure =
      checkAnswer(health, deadlineMs) ?? (health.status === 200 ? undefined : { kind: `answered ${health.status}`, detail: health.body });
    if (healthFailure) fail("GET /healthz after the fuzz", healthFailure, 'curl -sS "$URL/healthz"');
    for (const crash of server.crashes) fail("server", { kind: "process exited by itself", detail: crash }, "(see the log lines in the detail)");
    for (const change of await changedKnownJobs(server.url, known)) {
      fail(
        "known jobs",
        { kind: "changed by the fuzz", detail: change },
        `curl -sS "$URL/v1/jobs/${change.split(":")[0]}" -H 'authorization: Bearer ${KEYS.known}'`,
      );
    }
    server.rssBytes();
  } finally {
    clearInterval(sampler);
    for (const h of held) h.conn.socket.destroy();
    await server.stop();
    rmSync(dir, { recursive: true, force: true });
  }

  for (const [failure, { pid, requestId }] of requestIds) {
    const line = server.logFor(pid, requestId).find((l) => l.includes('"err"'));
    if (line) failure.detail += ` | server log: ${line.slice(0, 600)}`;
  }
  const groups = new Map<string, { group: string; count: number; first: Failure }>();
  for (const f of failures) {
    const g = groups.get(f.group);
    if (g) g.count++;
    else groups.set(f.group, { group: f.group, count: 1, first: f });
  }
  const sorted = [...times].sort((a, b) => a - b);
  return {
    seed: options.seed,
    requests,
    failures,
    groups: [...groups.values()],
    peakRssBytes: server.peakRssBytes,
    p50Ms: percentile(sorted, 50),
    p99Ms: percentile(sorted, 99),
    restarts: server.restarts,
  };
}

async function probeHealth(url: string, deadlineMs: number): Promise<Answer> {
  return sendRaw(
    url,
    { kind: "raw", label: "healthz", bytes: "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n", complete: true },
    deadlineMs,
  );
}

export function formatReport(r: FuzzReport): string {
  const lines = [
    `fuzz: seed ${r.seed}, ${r.requests} requests, ${r.failures.length} failures in ${r.groups.length} groups, ` +
      `peak server RSS ${Math.round(r.peakRssBytes / MiB)} MiB, answer time p50 ${r.p50Ms.toFixed(1)} ms p99 ${r.p99Ms.toFixed(1)} ms, ${r.restarts} server restarts`,
  ];
  for (const g of r.groups) {
    lines.push(`- [${g.count}x] ${g.group}`, `    ${g.first.detail.slice(0, 400)}`, `    ${g.first.repro}`);
    if (g.first.path !== undefined) lines.push(`    replay: npm run fuzz -- --seed ${r.seed} --path ${g.first.path}`);
  }
  if (r.groups.length > 0) lines.push(`(reproducers use $URL: ${SERVE_COMMAND})`);
  return lines.join("\n");
}
