// Every contender the harness knows, by name. A new one is a line here.
import type { Contender } from "../contender.js";
import { BullMQ } from "./bullmq.js";
import { DuetimeEmbedded } from "./duetime-embedded.js";
import {
  duetimeGrpc,
  duetimePg1,
  duetimePg3,
  duetimePg3Redis,
  duetimePgRedis,
  duetimeServer,
  duetimeServerRedis,
  type Baseline,
  postgresStoreProblem,
  redisDueIndexProblem,
} from "./duetime-server.js";
import { GraphileWorker } from "./graphile-worker.js";
import { PgBossContender } from "./pg-boss.js";

export const CONTENDERS: Record<string, () => Contender> = {
  "duetime-embedded": () => new DuetimeEmbedded(),
  "duetime-server": duetimeServer,
  "duetime-grpc": duetimeGrpc,
  "duetime-server-redis": duetimeServerRedis,
  "duetime-pg-1": duetimePg1,
  "duetime-pg-redis": duetimePgRedis,
  "duetime-pg-3": duetimePg3,
  "duetime-pg-3-redis": duetimePg3Redis,
  bullmq: () => new BullMQ(),
  "pg-boss": () => new PgBossContender(),
  "graphile-worker": () => new GraphileWorker(),
};

/**
 * The `duetime serve` contenders, which `--baseline DIR` also runs from
 * another build as `<name>@baseline` (the server only: the SDK workers run in
 * this process, from this work tree).
 */
const FROM_A_BUILD: Record<string, (o: Baseline) => Contender> = {
  "duetime-server": duetimeServer,
  "duetime-grpc": duetimeGrpc,
  "duetime-server-redis": duetimeServerRedis,
  "duetime-pg-1": duetimePg1,
  "duetime-pg-redis": duetimePgRedis,
  "duetime-pg-3": duetimePg3,
  "duetime-pg-3-redis": duetimePg3Redis,
};

/** Adds `<name>@baseline` for every `duetime serve` contender, spawned from the build in `root` (a package folder with bin/ and dist/). */
export function addBaselines(root: string): void {
  for (const [name, make] of Object.entries(FROM_A_BUILD)) CONTENDERS[`${name}@baseline`] = () => make({ name: `${name}@baseline`, root });
}

/**
 * Contenders whose store may not work in this checkout: a run that names no
 * contenders leaves them out (saying why) when their check answers a reason;
 * naming them with --contenders runs them regardless.
 */
export const PRECONDITIONS: Record<string, () => Promise<string | undefined>> = {
  "duetime-pg-1": postgresStoreProblem,
  "duetime-pg-3": postgresStoreProblem,
  "duetime-server-redis": redisDueIndexProblem,
  "duetime-pg-redis": postgresAndRedisProblem,
  "duetime-pg-3-redis": postgresAndRedisProblem,
};

async function postgresAndRedisProblem(): Promise<string | undefined> {
  return (await postgresStoreProblem()) ?? (await redisDueIndexProblem());
}
