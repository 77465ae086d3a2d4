// Every contender the harness knows, by name. A new one (duetime on
// PostgreSQL with 1 or 3 nodes, say) is a line here.
import type { Contender } from "../contender.js";
import { BullMQ } from "./bullmq.js";
import { DuetimeEmbedded } from "./duetime-embedded.js";
import { duetimeServer } from "./duetime-server.js";
import { GraphileWorker } from "./graphile-worker.js";
import { PgBossContender } from "./pg-boss.js";

export const CONTENDERS: Record<string, () => Contender> = {
  "duetime-embedded": () => new DuetimeEmbedded(),
  "duetime-server": duetimeServer,
  bullmq: () => new BullMQ(),
  "pg-boss": () => new PgBossContender(),
  "graphile-worker": () => new GraphileWorker(),
};
