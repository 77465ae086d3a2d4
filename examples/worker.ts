// A queue worker with a graceful shutdown: it leases jobs of the `emails`
// pool, runs up to 20 at once, and on SIGTERM or Ctrl-C stops leasing, lets
// the running handlers finish (up to 30 s, then aborts their signal), sends
// the last acknowledgements, and exits 0. What it had leased but not started
// runs again elsewhere once its lease expires.
//
//   DUETIME_URL=http://127.0.0.1:8080 npx tsx examples/worker.ts

import { NonRetryableError, Worker } from "@duetime/sdk";

interface Email {
  to: string;
  subject?: string;
}

async function send(email: Email, signal: AbortSignal): Promise<void> {
  // Stand-in for a mail API call (mailer.send(email, { signal })): pass the
  // signal on, so a cancelled or timed-out attempt stops its I/O too.
  void email;
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(resolve, Number(process.env.SEND_MS ?? 50));
    signal.addEventListener(
      "abort",
      () => {
        clearTimeout(timer);
        reject(signal.reason as Error);
      },
      { once: true },
    );
  });
}

const worker = new Worker({
  url: process.env.DUETIME_URL ?? "http://127.0.0.1:8080",
  ...(process.env.DUETIME_TOKEN ? { token: process.env.DUETIME_TOKEN } : {}),
  pool: "emails",
  concurrency: 20,
  shutdownGraceMs: 30_000,
  handler: async (job, { signal, attempt }) => {
    const email = job.payload as Email | null;
    // A payload that can never work goes to the dead letters at once, without retries.
    if (!email || typeof email.to !== "string") throw new NonRetryableError("payload has no `to` address");
    await send(email, signal);
    console.log(`sent ${job.executionId} to ${email.to} (attempt ${attempt})`);
    return { sent: true }; // the execution's result
  },
  onEvent: (event) => {
    if (event.type === "error") console.error(`worker error during ${event.during}: ${String(event.error)}`);
    if (event.type === "state") console.log(`worker ${event.state}`);
  },
});

// run() resolves once the worker has stopped (SIGTERM and SIGINT call shutdown()).
await worker.run();
console.log("worker stopped cleanly");
