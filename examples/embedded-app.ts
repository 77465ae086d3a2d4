// duetime embedded in an existing web app: no scheduler server, no HTTP
// between the app and the engine. POST /signup schedules a reminder an hour
// later (REMINDER_DELAY_SECONDS), stored in SQLite next to the app, and a
// worker in the same process sends it. SIGTERM closes the web server, then
// stops duetime (running handlers finish first).
//
//   PORT=3000 npx tsx examples/embedded-app.ts
//   curl -X POST localhost:3000/signup -d '{"email": "ada@example.test"}'

import { createServer } from "node:http";
import { createDuetime } from "duetime/embedded";

const duetime = await createDuetime({ store: process.env.DUETIME_STORE ?? "sqlite:./app-jobs.db" });

const reminders = duetime.worker({
  pool: "reminders",
  concurrency: 5,
  handler: async (job) => {
    const { email } = job.payload as { email: string };
    console.log(`reminder sent to ${email}`);
  },
});
void reminders.run();

const app = createServer((req, res) => {
  if (req.method !== "POST" || req.url !== "/signup") {
    res.writeHead(404).end();
    return;
  }
  let body = "";
  req.on("data", (chunk: Buffer) => (body += chunk.toString()));
  req.on("end", () => {
    void (async () => {
      const { email } = JSON.parse(body || "{}") as { email?: string };
      if (!email) {
        res.writeHead(400).end("email is required");
        return;
      }
      // The idempotency key makes a retried signup schedule one reminder, not two.
      const job = await duetime.client.createJob(
        {
          name: "signup-reminder",
          target: { type: "queue", pool: "reminders" },
          payload: { email },
          schedule: { delaySeconds: Number(process.env.REMINDER_DELAY_SECONDS ?? 3600) },
        },
        { idempotencyKey: `signup-reminder:${email}` },
      );
      res.writeHead(201, { "content-type": "application/json" }).end(JSON.stringify({ reminderJobId: job.jobId, at: job.nextRunAt }));
    })().catch((error: unknown) => res.writeHead(500).end(String(error)));
  });
});

app.listen(Number(process.env.PORT ?? 3000), "127.0.0.1", () => {
  console.log(`listening on http://127.0.0.1:${(app.address() as { port: number }).port}`);
});

process.once("SIGTERM", () => {
  app.close();
  void duetime.stop().then(() => console.log("stopped cleanly"));
});
