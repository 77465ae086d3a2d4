// A receiver of duetime's HTTP callbacks that checks their signature before
// acting (node:http, no framework). duetime signs every callback with the
// tenant's signing secret: `Duetime-Timestamp` and `Duetime-Signature` over
// the raw body. Check the raw bytes as received, never re-serialised JSON.
//
//   DUETIME_SIGNING_SECRET=whsec_... PORT=3000 npx tsx examples/webhook-receiver.ts
//
// then point an HTTP job at it:
//   {"target": {"type": "http", "url": "http://127.0.0.1:3000/hooks/reminder"}, ...}

import { createServer } from "node:http";
import { verifySignature } from "@duetime/sdk";

const secret = process.env.DUETIME_SIGNING_SECRET;
if (!secret) {
  console.error("set DUETIME_SIGNING_SECRET (duetime secrets list shows it; or start the server with --signing-secret)");
  process.exit(2);
}

const server = createServer((req, res) => {
  const chunks: Buffer[] = [];
  req.on("data", (chunk: Buffer) => chunks.push(chunk));
  req.on("end", () => {
    const body = Buffer.concat(chunks);
    if (!verifySignature({ secret, headers: req.headers, body })) {
      res.writeHead(401).end("bad signature");
      return;
    }
    // The body is the job's payload; the occurrence and the attempt come as headers.
    const payload: unknown = body.length > 0 ? JSON.parse(body.toString("utf8")) : null;
    console.log(
      `received ${String(req.headers["duetime-execution-id"])} attempt ${String(req.headers["duetime-attempt"])}: ${JSON.stringify(payload)}`,
    );
    // A 2xx answer completes the attempt; a 5xx or a timeout retries it with backoff.
    // Doing the work twice must be harmless: Idempotency-Key is the same on every attempt.
    res.writeHead(204).end();
  });
});

server.listen(Number(process.env.PORT ?? 3000), "127.0.0.1", () => {
  const address = server.address() as { port: number };
  console.log(`listening on http://127.0.0.1:${address.port}`);
});
process.once("SIGTERM", () => server.close());
