// 500 slow connections at once (slowloris): each sends a request head a
// header at a time. While they are held the server must keep answering
// /healthz within the deadline; when they all finish their heads at once,
// each must be answered within the deadline.

import { connectRaw, parseResponse, type Answer } from "./send.js";

export interface SlowResult {
  /** /healthz while the connections were held. */
  probes: Answer[];
  /** The held connections' own answers once their heads were finished. */
  answers: Answer[];
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function probe(url: string, deadlineMs: number): Promise<Answer> {
  const started = performance.now();
  try {
    const res = await fetch(`${url}/healthz`, { signal: AbortSignal.timeout(deadlineMs) });
    const body = await res.text();
    return {
      outcome: "answered",
      status: res.status,
      headers: Object.fromEntries(res.headers),
      body,
      ms: performance.now() - started,
      method: "GET",
    };
  } catch (err) {
    const timeout = (err as Error).name === "TimeoutError";
    return {
      outcome: timeout ? "timeout" : "closed",
      headers: {},
      body: "",
      ms: performance.now() - started,
      method: "GET",
      detail: (err as Error).message,
    };
  }
}

export async function slowConnections(url: string, opts: { count: number; holdMs: number; deadlineMs: number }): Promise<SlowResult> {
  const conns = Array.from({ length: opts.count }, (_, i) => connectRaw(url, `GET /healthz?slow=${i} HTTP/1.1\r\nHost: 127.0.0.1\r\n`));
  const probes: Answer[] = [];
  const end = Date.now() + opts.holdMs;
  while (Date.now() < end) {
    for (const c of conns) c.socket.write("X-Slow: 1\r\n");
    probes.push(await probe(url, opts.deadlineMs));
    await sleep(250);
  }
  const started = performance.now();
  for (const c of conns) c.socket.write("\r\n");
  const answers = await Promise.all(
    conns.map(async (c): Promise<Answer> => {
      const deadline = Date.now() + opts.deadlineMs;
      // Poll this connection's bytes with a deadline: 500 listeners would be no clearer.
      while (Date.now() < deadline) {
        const parsed = parseResponse(Buffer.concat(c.received), c.socket.destroyed);
        if (parsed) return { outcome: "answered", ...parsed, ms: performance.now() - started, method: "GET" };
        if (c.socket.destroyed) break;
        await sleep(20);
      }
      const outcome = c.socket.destroyed ? "closed" : "timeout";
      return { outcome, headers: {}, body: "", ms: performance.now() - started, method: "GET" };
    }),
  );
  for (const c of conns) c.socket.destroy();
  return { probes, answers };
}
